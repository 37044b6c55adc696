import json
import os
import re
import threading

import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.errors import ChecksumError, FormatVersionError, ShardStoreError, UsageError
from grstream.partition import build_shards
from grstream.store import format as fmt

from ..partition.graphs import array_source
from .tamper import drop_index, has_index, reindex, rewrite, set_index


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 60, 400), rng.integers(0, 60, 400)
    return build_shards(array_source(src, dst, rng.random(400)), tmp_path / "s.h5", num_shards=3,
                        progress=False)


@pytest.fixture
def legacy_path(store_path):
    """The store as written before the shard index existed: opened from its HDF5 objects."""
    drop_index(store_path)
    return store_path


@pytest.fixture(params=["index", "objects"])
def either_path(request, store_path):
    if request.param == "objects":
        drop_index(store_path)
    return store_path


def test_builder_writes_the_index_and_both_open_alike(store_path, tmp_path):
    assert has_index(store_path)
    legacy = tmp_path / "legacy.h5"
    legacy.write_bytes(store_path.read_bytes())
    drop_index(legacy)
    with gr.open(store_path) as new, gr.open(legacy) as old:
        assert [new.shard_info(i) for i in range(3)] == [old.shard_info(i) for i in range(3)]
        assert new._datasets == old._datasets
        for i in range(3):
            for name, array in new.read_shard(i).items():
                np.testing.assert_array_equal(array, old.read(i, name))
        np.testing.assert_array_equal(new.in_degree(), old.in_degree())
        assert new.index_mismatches() == []


def test_reindexed_store_equals_the_built_one(store_path, tmp_path):
    with h5py.File(store_path, "r") as f:
        built = f[fmt.SHARD_INDEX][()]
    reindex(store_path)
    with h5py.File(store_path, "r") as f:
        np.testing.assert_array_equal(f[fmt.SHARD_INDEX][()], built)


def test_attributes_and_shard_info(store_path):
    with gr.open(store_path) as store:
        assert (store.num_vertices, store.num_edges, store.num_shards) == (60, 400, 3)
        assert store.format_version == 1 and store.id_dtype == np.int32
        assert store.edge_props == {"weight": np.dtype(np.float64)}
        infos = [store.shard_info(i) for i in range(3)]
        assert sum(i.num_in_edges for i in infos) == 400
        assert store.nbytes() == sum(i.nbytes for i in infos)
        assert store.max_shard_nbytes() == max(i.nbytes for i in infos)
        info = infos[1]
        assert info.dataset_nbytes["in/src"] == 4 * info.num_in_edges
        assert info.dataset_nbytes["out/indptr"] == 8 * (info.hi - info.lo + 1)
        assert set(store.read_shard(1)) == set(store.dataset_names(1))


def test_read_into_caller_buffers(store_path):
    with gr.open(store_path) as store:
        want = store.read(2, "in/src")
        out = np.full(len(want), -1, dtype=np.int32)
        assert store.read(2, "in/src", out=out) is out
        np.testing.assert_array_equal(out, want)
        raw = bytearray(8 * store.shard_info(2).num_out_edges)
        view = store.read(2, "out/weight", out=raw)
        np.testing.assert_array_equal(view, store.read(2, "out/weight"))
        assert np.shares_memory(view, np.frombuffer(raw, dtype=np.float64))
        with pytest.raises(UsageError, match="int32 buffer"):
            store.read(2, "in/src", out=np.empty(len(want), dtype=np.int64))
        with pytest.raises(UsageError, match="bytes"):
            store.read(2, "out/weight", out=bytearray(3))
        with pytest.raises(UsageError, match="no dataset"):
            store.read(0, "in/nothing")
        with pytest.raises(UsageError, match="out of range"):
            store.read(3, "in/src")


def test_threaded_reads_agree(store_path):
    with gr.open(store_path, verify="always") as store:
        want = {(i, n): store.read(i, n) for i in range(3) for n in store.dataset_names(i)}
        errors = []

        def worker():
            for _ in range(20):
                for (i, n), arr in want.items():
                    if not np.array_equal(store.read(i, n), arr):
                        errors.append((i, n))

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []


def _flip_byte(path, dataset, index=0):
    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_offset() + index
    with open(path, "r+b") as raw:
        raw.seek(offset)
        byte = raw.read(1)
        raw.seek(offset)
        raw.write(bytes([byte[0] ^ 0x01]))


@pytest.mark.parametrize("dataset", ["shards/1/in/src", "shards/0/out/weight"])
def test_corrupt_shard_byte_raises_checksum_error_naming_it(store_path, dataset):
    _flip_byte(store_path, dataset)
    shard, name = int(dataset.split("/")[1]), "/".join(dataset.split("/")[2:])
    with gr.open(store_path) as store:
        with pytest.raises(ChecksumError, match=f"shard {shard}, dataset {dataset}"):
            store.read(shard, name)
    with gr.open(store_path, verify="never") as store:
        store.read(shard, name)          # "never" trusts the bytes


def test_verify_first_checks_once_and_always_every_time(store_path):
    with gr.open(store_path, verify="first") as first, gr.open(store_path, verify="always") as always:
        first.read(1, "in/src")
        always.read(1, "in/src")
        _flip_byte(store_path, "shards/1/in/src", index=1)
        first.read(1, "in/src")
        with pytest.raises(ChecksumError):
            always.read(1, "in/src")


def test_corrupt_store_wide_datasets_fail_on_open_or_first_use(either_path):
    _flip_byte(either_path, "vertex/in_degree")
    store = gr.open(either_path)        # per-vertex arrays are read on first use
    with pytest.raises(ChecksumError, match="vertex/in_degree"):
        store.in_degree()
    store.out_degree()
    store.close()
    _flip_byte(either_path, "intervals")
    with pytest.raises(ChecksumError, match="intervals"):
        gr.open(either_path)


def test_corrupt_index_fails_on_open(store_path):
    _flip_byte(store_path, fmt.SHARD_INDEX, index=9)
    with pytest.raises(ChecksumError, match=f"dataset {fmt.SHARD_INDEX}: checksum mismatch"):
        gr.open(store_path)


def test_id_out_of_range_is_reported(either_path):
    with h5py.File(either_path, "r") as f:
        ids = f["shards/0/out/dst"][()]
    ids[-1] = 60
    rewrite(either_path, "shards/0/out/dst", ids)
    with gr.open(either_path) as store:
        with pytest.raises(ShardStoreError, match="shard 0, dataset shards/0/out/dst: vertex id 60"):
            store.read(0, "out/dst")


@pytest.mark.parametrize("verify", ["first", "never"])
def test_non_monotone_offsets_fail_on_open_or_first_read(either_path, verify):
    with h5py.File(either_path, "r") as f:
        indptr = f["shards/2/in/indptr"][()]
    indptr[1], indptr[2] = indptr[2] + 1, indptr[1]
    rewrite(either_path, "shards/2/in/indptr", indptr)
    message = "shard 2, dataset shards/2/in/indptr: offsets"
    if not has_index(either_path):
        with pytest.raises(ShardStoreError, match=message):
            gr.open(either_path, verify=verify)
        return
    with gr.open(either_path, verify=verify) as store:   # the index: on the offsets' first read
        store.read(2, "out/indptr")
        for _ in range(2):      # a failed check is not remembered as passed
            with pytest.raises(ShardStoreError, match=message):
                store.read_shard(2)


@pytest.mark.parametrize("column, field, value, message", [
    ("in/src", "length", 10 ** 6, "shard 1, dataset shards/1/in/src: the index places the data "
                                  "outside the file"),
    ("out/weight", "length", 1, "shard 1, dataset shards/1/out/weight: length in the index differs"),
    ("in/indptr", "length", 3, "shard 1, dataset shards/1/in/indptr: length in the index differs"),
    ("out/dst", "crc32", -1, "shard 1, dataset shards/1/out/dst: length or crc32 out of range"),
    ("out/dst", "offset", 10 ** 12, "the index places the data outside the file"),
])
def test_damaged_index_fails_on_open(store_path, column, field, value, message):
    set_index(store_path, 1, column, field, value)
    with pytest.raises(ShardStoreError, match=re.escape(message)):
        gr.open(store_path)


def test_index_of_other_datasets_fails_on_open(store_path):
    with h5py.File(store_path, "r+") as f:
        f[fmt.SHARD_INDEX].attrs[fmt.INDEX_NAMES_ATTR] = json.dumps(["in/indptr"])
    with pytest.raises(ShardStoreError, match=re.escape("the index lists datasets ['in/indptr']")):
        gr.open(store_path)


def test_index_edited_behind_the_objects_is_reported_by_index_mismatches(store_path):
    with gr.open(store_path) as store:
        crc = store._datasets[1]["in/src"].crc
    set_index(store_path, 1, "in/src", "crc32", crc ^ 1)
    with gr.open(store_path) as store:
        assert store.index_mismatches() == [
            (1, "shards/1/in/src", f"the index gives crc32 {crc ^ 1}, the dataset has {crc}")]
        with pytest.raises(ChecksumError, match="shards/1/in/src"):
            store.read(1, "in/src")


@pytest.mark.parametrize("attr, value, error, message", [
    ("format", "something-else", ShardStoreError, "not a grstream shard store"),
    ("format_version", np.int64(max(fmt.READABLE_VERSIONS) + 1), FormatVersionError,
     f"format version {max(fmt.READABLE_VERSIONS) + 1} is not supported"),
    ("num_edges", np.int64(401), ShardStoreError, "num_edges"),
    ("id_dtype", "float32", ShardStoreError, "id_dtype"),
    ("edge_props", "{}", ShardStoreError, "the index lists datasets"),
])
def test_bad_root_attributes(store_path, attr, value, error, message):
    with h5py.File(store_path, "r+") as f:
        f.attrs[attr] = value
    with pytest.raises(error, match=message):
        gr.open(store_path)
    drop_index(store_path)
    with pytest.raises(error, match="nbytes attribute" if attr == "edge_props" else message):
        gr.open(store_path)


def test_missing_dataset(legacy_path):
    with h5py.File(legacy_path, "r+") as f:
        del f["shards/1/out/weight"]
    with pytest.raises(ShardStoreError, match="shard 1, dataset shards/1/out/weight: dataset missing"):
        gr.open(legacy_path)


def _replace_with_chunked(f, name):
    data = f[name][...]
    crc = f[name].attrs["crc32"]
    del f[name]
    f.create_dataset(name, data=data, chunks=(max(1, len(data)),))
    f[name].attrs["crc32"] = crc


@pytest.mark.parametrize("damage, message", [
    (lambda f: f["shards/1/in/src"].attrs.__delitem__("crc32"),
     "shard 1, dataset shards/1/in/src: crc32 attribute missing"),
    (lambda f: f["shards/1/in/src"].attrs.__setitem__("crc32", "x"), "crc32 attribute missing"),
    (lambda f: _replace_with_chunked(f, "shards/0/out/dst"), "contiguous and uncompressed"),
    (lambda f: f["shards/2"].attrs.__delitem__("nbytes"), "missing or non-integer shard attribute(s): nbytes"),
    (lambda f: f["shards/2"].attrs.__setitem__("lo", 1.5), "missing or non-integer shard attribute(s): lo"),
    (lambda f: f.move("shards/2", "elsewhere"), "shard 2, dataset shards/2: shard group missing"),
    (lambda f: f.move("shards/1/in/src", "shards/1/in/src2") or f.create_group("shards/1/in/src"),
     "shards/1/in/src: dataset missing"),
])
def test_damaged_shard_metadata_fails_on_open_or_index_check(store_path, damage, message):
    with h5py.File(store_path, "r+") as f:
        damage(f)
    with gr.open(store_path) as store:      # the index describes the shards: their objects
        with pytest.raises(ShardStoreError, match=re.escape(message)):  # are checked by verify
            store.index_mismatches()
    drop_index(store_path)
    with pytest.raises(ShardStoreError, match=re.escape(message)):
        gr.open(store_path)


def test_truncated_file(store_path, tmp_path):
    data = store_path.read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ShardStoreError, match="cut.h5"):
        gr.open(cut)


def test_not_hdf5_and_foreign_hdf5_and_missing(tmp_path):
    text = tmp_path / "text.h5"
    text.write_text("hello\n")
    with pytest.raises(ShardStoreError, match="not a readable HDF5 file"):
        gr.open(text)
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ShardStoreError, match="not a grstream shard store"):
        gr.open(foreign)
    with pytest.raises(ShardStoreError, match="no such store file"):
        gr.open(tmp_path / "absent.h5")
    with pytest.raises(ShardStoreError, match="is a directory, not a store file"):
        gr.open(tmp_path)


@pytest.mark.parametrize("attr, value, message", [
    ("num_vertices", np.int64(-1), "root attribute num_vertices is -1, expected"),
    ("format_version", 1.5, "format_version attribute is 1.5, expected an integer"),
    ("id_base", np.int64(7), "root attribute id_base is 7, expected 0 or 1"),
])
def test_bad_attributes_are_shown_plainly(store_path, attr, value, message):
    with h5py.File(store_path, "r+") as f:
        f.attrs[attr] = value
    with pytest.raises(ShardStoreError) as info:
        gr.open(store_path)
    assert message in str(info.value) and "np." not in str(info.value)


def test_messages_show_numbers_as_python_writes_them(store_path):
    store = gr.open(store_path)
    with pytest.raises(UsageError) as info:
        store.read(np.int64(99), "in/src")
    assert "shard 99 out of range" in str(info.value)
    with pytest.raises(UsageError) as info:
        store.to_internal([np.float64(2.5)])
    assert str(info.value) == "vertex id must be an integer, not 2.5"
    with pytest.raises(UsageError) as info:
        store.to_internal(np.array([10 ** 6]))
    assert "np." not in str(info.value)


def test_bad_verify_mode(store_path):
    with pytest.raises(UsageError, match="verify"):
        gr.open(store_path, verify="sometimes")


def test_to_scipy_sums_duplicates_and_can_ignore_weights(tmp_path):
    path = build_shards(array_source([0, 0, 1], [1, 1, 0], [2.0, 3.0, 4.0]), tmp_path / "d.h5",
                        progress=False)
    with gr.open(path) as store:
        assert store.to_scipy("csr")[0, 1] == 5.0
        assert store.to_scipy("csc", weights=False)[0, 1] == 2.0
        with pytest.raises(UsageError, match="kind"):
            store.to_scipy("coo")


def test_close_and_context_manager(store_path):
    store = gr.open(store_path)
    with store:
        store.read(0, "in/src")
    assert store._h5 is None and store._fd is None


@pytest.mark.parametrize("block", [3, 12, 1 << 20])
def test_verified_reads_in_blocks_check_every_element(either_path, monkeypatch, block):
    # a verified read checksums and range-checks each block as it lands: blocks that end inside
    # an element (3, 12 bytes against 4- and 8-byte ids) still check every element and byte once
    from grstream.store import reads
    monkeypatch.setattr(reads, "READ_BLOCK", block)
    with gr.open(either_path, verify="never") as trusted:
        want = {name: trusted.read(1, name) for name in trusted.dataset_names(1)}
    with gr.open(either_path) as store:
        for name, values in want.items():
            np.testing.assert_array_equal(store.read(1, name), values)
    ids = want["out/dst"]
    for at in (0, len(ids) // 2, len(ids) - 1):
        bad = ids.copy()
        bad[at] = 60 + at
        rewrite(either_path, "shards/1/out/dst", bad)
        with gr.open(either_path) as store:
            with pytest.raises(ShardStoreError, match=f"shards/1/out/dst: vertex id {60 + at}"):
                store.read(1, "out/dst")
    rewrite(either_path, "shards/1/out/dst", ids)
    _flip_byte(either_path, "shards/1/out/dst", index=len(ids) * ids.itemsize - 1)
    with gr.open(either_path) as store:
        with pytest.raises(ChecksumError, match="shards/1/out/dst"):
            store.read(1, "out/dst")


def test_unverified_reads_take_one_read_call(either_path, monkeypatch):
    # only a verified read goes in blocks (checked as they land): an unverified one reads a
    # dataset whole in one call
    from grstream.store import reads
    monkeypatch.setattr(reads, "READ_BLOCK", 3)
    calls = []
    preadv = reads.os.preadv
    monkeypatch.setattr(reads.os, "preadv", lambda *a: calls.append(a) or preadv(*a))
    per_dataset = []
    with gr.open(either_path, verify="never") as store:
        for name in store.dataset_names(1):
            calls.clear()
            store.read(1, name)
            per_dataset.append(len(calls))
    assert max(per_dataset) == 1


def test_mapped_datasets_are_the_files_pages_checked_as_reads(either_path, monkeypatch):
    # a mapped dataset is a view of the file's pages (no copy into fresh memory), equal to its
    # read, checked on its first map as a read is (checksum and id range, a block at a time),
    # and kept valid after the store closes
    import mmap
    from grstream.store import reads
    monkeypatch.setattr(reads, "READ_BLOCK", 12)
    with gr.open(either_path, verify="never") as trusted:
        want = {(i, name): trusted.read(i, name) for i in range(3) for name in trusted.dataset_names(i)}
    with gr.open(either_path) as store:
        got = {key: store.mapped(*key) for key in want}
    with h5py.File(either_path, "r") as f:   # (the writer aligns them: every one maps)
        assert all(f[f"shards/{i}/{name}"].id.get_offset() % fmt.ALIGNMENT == 0
                   for (i, name), values in want.items() if values.size)
    for key, values in want.items():
        view = got[key]
        if values.size == 0:
            assert view is None
            continue
        base = view
        while isinstance(base, (np.ndarray, memoryview)):
            base = base.base if isinstance(base, np.ndarray) else base.obj
        assert isinstance(base, mmap.mmap), key
        np.testing.assert_array_equal(view, values)   # (after close: the mapping is the array's)
    ids = want[(1, "out/dst")]
    bad = ids.copy()
    bad[len(ids) // 2] = 60
    rewrite(either_path, "shards/1/out/dst", bad)
    with gr.open(either_path) as store:
        with pytest.raises(ShardStoreError, match="shards/1/out/dst: vertex id 60"):
            store.mapped(1, "out/dst")
    with gr.open(either_path, verify="never") as store:   # (unchecked: as the file holds it)
        assert store.mapped(1, "out/dst")[len(ids) // 2] == 60
    rewrite(either_path, "shards/1/out/dst", ids)
    _flip_byte(either_path, "shards/1/out/dst", index=len(ids) * ids.itemsize - 1)
    with gr.open(either_path) as store:
        with pytest.raises(ChecksumError, match="shards/1/out/dst"):
            store.mapped(1, "out/dst")
        with pytest.raises(ChecksumError, match="shards/1/out/dst"):   # (nothing kept: again)
            store.mapped(1, "out/dst")


def test_mapped_offsets_are_checked_and_unmappable_datasets_say_so(store_path, tmp_path):
    with gr.open(store_path) as store:
        indptr = store.read(0, "out/indptr")
    bad = indptr.copy()
    bad[-1] += 1   # (its checksum rewritten to match: the offsets' own check finds it)
    rewrite(store_path, "shards/0/out/indptr", bad)
    with gr.open(store_path) as store:
        with pytest.raises(ShardStoreError, match="offsets must start at 0, not decrease"):
            store.mapped(0, "out/indptr")
    rng = np.random.default_rng(1)
    small = build_shards(array_source(rng.integers(0, 50, 300), rng.integers(0, 50, 300)),
                         tmp_path / "c.h5", num_shards=2, compress=True, progress=False)
    with gr.open(small) as store:
        assert store.mapped(0, "out/dst") is None   # compressed ids: decoded by read()
        assert store.mapped(0, "out/indptr") is not None


def test_mapped_falls_back_to_read_where_the_system_cannot_map(either_path, monkeypatch):
    # a file system without mmap (ENODEV), or the process's map count or commit limit reached
    # (ENOMEM): ``mapped`` says None and the caller's read gives the dataset, checked
    import errno
    from grstream.store import reads

    def refused(*args, **kwargs):
        raise OSError(errno.ENODEV, "no mmap here")

    with gr.open(either_path, verify="never") as trusted:
        want = trusted.read(1, "out/dst")
    monkeypatch.setattr(reads.mmap, "mmap", refused)
    with gr.open(either_path) as store:   # (the store-wide arrays read instead of mapped too)
        assert store.mapped(1, "out/dst") is None
        np.testing.assert_array_equal(store.read(1, "out/dst"), want)
        assert store.in_degree().sum() == store.num_edges
    _flip_byte(either_path, fmt.OUT_DEGREE, index=7)   # (read, it is checked all the same)
    with gr.open(either_path) as store:
        with pytest.raises(ChecksumError, match=fmt.OUT_DEGREE):
            store.out_degree()


def test_mapped_refuses_a_file_truncated_while_open(store_path):
    # a store cut short after it was opened: the map of a dataset past the end is refused with
    # the typed error, never a view whose pages fault (SIGBUS) when touched
    with gr.open(store_path) as store:
        desc = store._datasets[2]["in/src"]
        os.truncate(store_path, desc.offset + desc.nbytes - 1)
        with pytest.raises(ShardStoreError, match="file truncated"):
            store.mapped(2, "in/src")
