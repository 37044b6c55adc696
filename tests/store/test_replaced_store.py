"""A store replaced (a rebuild renamed onto its path) while it is opened or read."""
import os
import shutil
import threading

import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.partition import build_shards
from grstream.store import shard_store

from ..partition.graphs import array_source


@pytest.fixture
def two_stores(tmp_path):
    """Two stores of the same size and layout but different edges, and their matrices."""
    stores = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        src, dst = rng.permutation(np.arange(300) % 50), rng.permutation(np.arange(300) % 50)
        path = build_shards(array_source(src, dst, rng.random(300)), tmp_path / f"g{seed}.h5",
                            num_shards=4, progress=False)
        with gr.open(path) as store:
            stores.append((path, store.to_scipy().toarray()))
    # the same offsets in both files: data read from the wrong one would pass unnoticed
    # unless checksummed, which is the failure this guards against
    with h5py.File(stores[0][0]) as a, h5py.File(stores[1][0]) as b:
        assert a["shards/2/in/src"].id.get_offset() == b["shards/2/in/src"].id.get_offset()
    assert not np.array_equal(stores[0][1], stores[1][1])
    return stores


@pytest.mark.parametrize("verify", ["first", "never"])
def test_replaced_between_the_opens_reads_the_file_first_opened(two_stores, tmp_path,
                                                                monkeypatch, verify):
    (path_a, matrix_a), (path_b, _) = two_stores
    target = tmp_path / "g.h5"
    shutil.copy(path_a, target)
    real_file = h5py.File

    def open_then_replace(*args, **kwargs):
        opened = real_file(*args, **kwargs)
        shutil.copy(path_b, tmp_path / "next.h5")
        os.replace(tmp_path / "next.h5", target)       # a rebuild lands right after the open
        return opened

    monkeypatch.setattr(shard_store.h5py, "File", open_then_replace)
    with gr.open(target, verify=verify) as store:
        np.testing.assert_array_equal(store.to_scipy().toarray(), matrix_a)


def test_opens_racing_a_rebuilder_see_one_graph_each(two_stores, tmp_path):
    (path_a, matrix_a), (path_b, matrix_b) = two_stores
    target = tmp_path / "g.h5"
    shutil.copy(path_a, target)
    stop = threading.Event()

    def rebuilder():
        k = 0
        while not stop.is_set():
            k += 1
            shutil.copy((path_a, path_b)[k % 2], tmp_path / "next.h5")
            os.replace(tmp_path / "next.h5", target)

    thread = threading.Thread(target=rebuilder)
    thread.start()
    seen = set()
    try:
        for _ in range(30):
            for verify in ("always", "never"):
                # the path always names a whole store, so no error of any kind is acceptable
                with gr.open(target, verify=verify) as store:
                    matrix = store.to_scipy().toarray()
                same = [np.array_equal(matrix, m) for m in (matrix_a, matrix_b)]
                assert any(same), "a read returned data from neither graph"
                seen.add(same.index(True))
    finally:
        stop.set()
        thread.join()
    assert seen


def test_mapped_after_a_replace_maps_the_file_opened(two_stores, tmp_path):
    # a map made after a rebuild was renamed onto the path is of the open file, as a read is
    # (unchecked: the two files' datasets lie at the same offsets, so only the data tells)
    (path_a, _), (path_b, _) = two_stores
    target = tmp_path / "g.h5"
    shutil.copy(path_a, target)
    with gr.open(target, verify="never") as store:
        shutil.copy(path_b, tmp_path / "next.h5")
        os.replace(tmp_path / "next.h5", target)
        with gr.open(path_a, verify="never") as first:
            for i in range(store.num_shards):
                for name in ("in/src", "out/dst", "out/weight"):
                    np.testing.assert_array_equal(store.mapped(i, name), first.read(i, name))
