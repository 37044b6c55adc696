"""StoreWriter: each edge dataset gets its own values (issue 7, defect of shard_part)."""
import numpy as np
import pytest

import grstream as gr
from grstream.errors import UsageError
from grstream.partition.writer import StoreWriter
from grstream.store import format as fmt


def _root(props):
    return {"format": fmt.FORMAT_NAME, "format_version": np.int64(fmt.FORMAT_VERSION),
            "num_vertices": np.int64(3), "num_edges": np.int64(3), "num_shards": np.int64(1),
            "id_dtype": "int32", "edge_props": props, "directed": True, "renumbered": False,
            "build": {}}


def test_two_edge_properties_keep_their_own_values(tmp_path):
    # edges 0->1, 1->2, 2->0 with two properties: weight and cost
    weight, cost = np.array([1.5, 2.5, 3.5]), np.array([10.0, 20.0, 30.0], dtype=np.float32)
    indptr = np.array([0, 1, 2, 3], dtype=np.int64)
    with StoreWriter(tmp_path / "p.h5") as writer:
        writer.shard_part(0, "out", indptr, np.array([1, 2, 0], np.int32),
                          {"weight": weight, "cost": cost})
        # in-edges by destination: 2->0, 0->1, 1->2
        writer.shard_part(0, "in", indptr, np.array([2, 0, 1], np.int32),
                          {"weight": weight[[2, 0, 1]], "cost": cost[[2, 0, 1]]})
        nbytes = 2 * (4 * 8 + 3 * 4 + 3 * 8 + 3 * 4)
        writer.shard_attrs(0, 0, 3, 3, 3, nbytes)
        for name, array in ((fmt.INTERVALS, [0, 3]), (fmt.IN_DEGREE, [1, 1, 1]),
                            (fmt.OUT_DEGREE, [1, 1, 1])):
            writer.dataset(name, np.array(array, dtype=np.int64))
        writer.commit(_root({"weight": "float64", "cost": "float32"}))
    with gr.open(tmp_path / "p.h5", verify="always") as store:
        np.testing.assert_array_equal(store.read(0, "out/weight"), weight)
        np.testing.assert_array_equal(store.read(0, "out/cost"), cost)
        np.testing.assert_array_equal(store.read(0, "in/cost"), [30.0, 10.0, 20.0])
        assert store.read(0, "in/cost").dtype == np.float32


def test_an_edge_dataset_of_the_wrong_length_is_refused(tmp_path):
    with StoreWriter(tmp_path / "w.h5") as writer:
        with pytest.raises(UsageError, match="'cost' needs 2 values, got 1"):
            writer.shard_part(0, "out", np.array([0, 2], np.int64), np.array([0, 0], np.int32),
                              {"cost": np.ones(1)})
        writer.abort()
    assert list(tmp_path.iterdir()) == []


def _write_triangle(writer):
    indptr = np.array([0, 1, 2, 3], dtype=np.int64)
    writer.shard_part(0, "out", indptr, np.array([1, 2, 0], np.int32))
    writer.start_writeback()            # the out-side on its way to the disk
    writer.shard_part(0, "in", indptr, np.array([2, 0, 1], np.int32))
    writer.shard_attrs(0, 0, 3, 3, 3, 2 * (4 * 8 + 3 * 4))
    for name, array in ((fmt.INTERVALS, [0, 3]), (fmt.IN_DEGREE, [1, 1, 1]),
                        (fmt.OUT_DEGREE, [1, 1, 1])):
        writer.dataset(name, np.array(array, dtype=np.int64))
    writer.commit(_root({}))


def test_writeback_started_mid_build_leaves_a_whole_store(tmp_path):
    with StoreWriter(tmp_path / "t.h5") as writer:
        _write_triangle(writer)
    with gr.open(tmp_path / "t.h5", verify="always") as store:
        np.testing.assert_array_equal(store.read(0, "in/src"), [2, 0, 1])
        np.testing.assert_array_equal(store.read(0, "out/dst"), [1, 2, 0])
    assert [p.name for p in tmp_path.iterdir()] == ["t.h5"]


def test_a_full_disk_during_writeback_fails_the_commit(tmp_path, monkeypatch):
    import errno
    import os
    import threading
    from grstream.errors import OutputError
    real_fsync = os.fsync

    def fsync(fd):
        if threading.current_thread().name == "grstream-writeback":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OutputError, match="no space left"):
        with StoreWriter(tmp_path / "t.h5") as writer:
            _write_triangle(writer)
    assert list(tmp_path.iterdir()) == []


def test_large_datasets_get_their_checksum_from_the_second_thread(tmp_path, monkeypatch):
    # arrays from PARALLEL_CRC_BYTES on have their CRC32 computed beside the write
    import zlib
    from grstream.partition import writer as writer_module
    monkeypatch.setattr(writer_module, "PARALLEL_CRC_BYTES", 64)
    arrays = {"big": np.arange(1000, dtype=np.float64), "small": np.arange(3, dtype=np.int32),
              "strided": np.arange(40, dtype=np.int64)[::2]}
    with StoreWriter(tmp_path / "c.h5") as writer:
        for name, array in arrays.items():
            assert writer.dataset(name, array) == array.nbytes
        assert writer._checksums is not None
        writer.commit({})
        assert writer._checksums is None
    import h5py
    with h5py.File(tmp_path / "c.h5", "r") as f:
        for name, array in arrays.items():
            raw = np.ascontiguousarray(array).tobytes()
            assert f[name].attrs["crc32"] == zlib.crc32(raw)
            np.testing.assert_array_equal(f[name][()], array)
