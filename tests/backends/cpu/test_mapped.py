"""Resident shards mapped from the file (backends/cpu/pieces.py, ``maps_shards``): each a unit of
its own, its datasets the file's pages, checked as reads are; every result equal to the
concatenated runs' and scipy's, in pull, push and lanes, unbounded and under a budget that
streams some shards; a corrupted store refused by the run."""
import mmap

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import bfs, cc, pagerank, sssp
from grstream.algorithms.bfs import BFS
from grstream.backends.cpu import pieces
from grstream.engine.capabilities import BatchResident
from grstream.errors import ChecksumError, MemoryBudgetError

from ...algorithms.conftest import build, random_edges
from .test_push import expected


def _mapped_base(array):
    base = array
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base


def _results(store, source):
    return {"bfs": bfs.bfs(store, source)[0], "sssp": sssp.sssp(store, source)[0],
            "cc": cc.connected_components(store)[0],
            "pagerank": pagerank.pagerank(store, weight=None, tol=1e-12)[0]}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shards", [1, 3, 7])
def test_mapped_shards_give_the_concatenated_runs_results(tmp_path, monkeypatch, seed, shards):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 90))
    src, dst, w = random_edges(rng, n, int(rng.integers(50, 400)), weighted=True)
    path = build(tmp_path, n, src, dst, w, num_shards=shards).path
    source = int(src[0]) if len(src) else 0
    monkeypatch.setattr(pieces, "MAPPED_SHARD_EDGES", 1 << 40)
    with gr.open(path) as store:
        assert not pieces.maps_shards(store)
        want = _results(store, source)
    monkeypatch.setattr(pieces, "MAPPED_SHARD_EDGES", 1)
    with gr.open(path) as store:
        assert pieces.maps_shards(store)
        got = _results(store, source)
    for name in ("bfs", "sssp", "cc"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_allclose(got["pagerank"], want["pagerank"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got["bfs"], expected("bfs", n, src, dst, None, source))
    np.testing.assert_array_equal(got["sssp"], expected("sssp", n, src, dst, w, source))


def test_mapped_runs_hold_the_files_pages_one_unit_per_shard(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    src, dst, _ = random_edges(rng, 200, 3000)
    monkeypatch.setattr(pieces, "MAPPED_SHARD_EDGES", 1)
    store = build(tmp_path, 200, src, dst, num_shards=4)
    with gr.Session(store) as session:
        result = session.run(BFS(source=int(src[0])))
        ex = next(iter(session._prepared.values())).executor
        assert ex.runs.mapped and len(ex.runs.runs) == 4
        for first, last, lo, arrays in ex.runs.runs:
            assert first == last
            for name, array in arrays.items():
                assert isinstance(_mapped_base(array), mmap.mmap), (first, name)
        assert type(ex).capabilities(ex.setup).batching.resident is BatchResident.NEVER
        # every unit of every plan holds one shard
        assert all(st.plan["units"] == st.plan["shards"] for st in result.stats)
    np.testing.assert_array_equal(bfs.bfs(store, int(src[0]))[0],
                                  expected("bfs", 200, src, dst, None, int(src[0])))
    store.close()


def test_mapped_runs_under_a_budget_and_in_lanes(tmp_path, monkeypatch):
    rng = np.random.default_rng(6)
    src, dst, w = random_edges(rng, 150, 2000, weighted=True)
    monkeypatch.setattr(pieces, "MAPPED_SHARD_EDGES", 1)
    store = build(tmp_path, 150, src, dst, w, num_shards=5)
    sources = [int(s) for s in src[:3]]
    try:
        with gr.Session(store, memory_budget=1) as session:
            session.run_lanes([BFS(source=s) for s in sources], max_iter=0)
    except MemoryBudgetError as exc:
        low = exc.minimum
    for budget in (None, low + 3 * 4096):
        with gr.Session(store, memory_budget=budget) as session:
            lanes = session.run_lanes([BFS(source=s) for s in sources])
            if budget is not None:   # (some shards streamed, some mapped)
                tiers = lanes[0].info["memory"]["tier_shards"]
                assert tiers["resident"] and tiers["store"], tiers
            for s, res in zip(sources, lanes):
                level = res.values["level"].copy()
                level[level >= 1 << 62] = -1
                np.testing.assert_array_equal(level, expected("bfs", 150, src, dst, None, s))
    store.close()


def test_a_corrupted_store_is_refused_by_a_mapped_run(tmp_path, monkeypatch):
    import h5py
    rng = np.random.default_rng(8)
    src, dst, _ = random_edges(rng, 100, 1500)
    monkeypatch.setattr(pieces, "MAPPED_SHARD_EDGES", 1)
    path = build(tmp_path, 100, src, dst, num_shards=2).path
    with h5py.File(path, "r") as f:
        offset = f["shards/1/out/dst"].id.get_offset()
    with open(path, "r+b") as raw:
        raw.seek(offset + 5)
        byte = raw.read(1)
        raw.seek(offset + 5)
        raw.write(bytes([byte[0] ^ 0x10]))
    with gr.open(path) as store:
        with pytest.raises(ChecksumError, match="shards/1/out/dst"):
            bfs.bfs(store, int(src[0]))


def test_sssps_weight_check_maps_the_weights(tmp_path):
    """SSSP's check of the weights (every call) maps them: no copy of them in fresh memory."""
    import tracemalloc
    from grstream.algorithms.sssp import check_weights
    rng = np.random.default_rng(9)
    src, dst, w = random_edges(rng, 1000, 40000, weighted=True)
    store = build(tmp_path, 1000, src, dst, w, num_shards=2)
    tracemalloc.start()
    try:
        check_weights(store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < store.num_edges * 8 // 4   # (the weights: 8 bytes an edge)
    store.close()
