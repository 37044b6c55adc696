"""Seeding: the engine finds the seed's ids once and hands them to the executor."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS, UNREACHED
from grstream.backends.cpu.executor import CpuExecutor
from grstream.engine import session as session_mod
from grstream.engine.state import ARGMAX_SEEDS, seed_ids

from ..algorithms.conftest import build, random_edges


@pytest.fixture
def store(tmp_path):
    src, dst, _ = random_edges(np.random.default_rng(3), 200, 900, weighted=False)
    return build(tmp_path, 200, src, dst, None, num_shards=6)


@pytest.mark.parametrize("count", [0, 1, 2, ARGMAX_SEEDS, ARGMAX_SEEDS + 1, 500])
def test_seed_ids_match_flatnonzero(count):
    rng = np.random.default_rng(count)
    mask = np.zeros(1000, dtype=bool)
    mask[rng.choice(1000, size=count, replace=False)] = True
    np.testing.assert_array_equal(seed_ids(mask), np.flatnonzero(mask))
    # strided and broadcast masks take numpy's path
    np.testing.assert_array_equal(seed_ids(mask[::2]), np.flatnonzero(mask[::2]))
    np.testing.assert_array_equal(seed_ids(np.broadcast_to(np.True_, (7,))), np.arange(7))


@pytest.mark.parametrize("count", [0, 1, 3, ARGMAX_SEEDS, ARGMAX_SEEDS + 1])
def test_large_masks_are_scanned_in_pieces(monkeypatch, count):
    from grstream.engine import state
    monkeypatch.setattr(state, "SCAN_PARALLEL", 64)
    rng = np.random.default_rng(count)
    n = 4099   # pieces of unequal length; seeds at the edges of pieces too
    mask = np.zeros(n, dtype=bool)
    cuts = [n * k // state.SCAN_PARTS for k in range(state.SCAN_PARTS + 1)]
    picks = set(rng.choice(n, size=count, replace=False).tolist())
    if count >= 3:
        picks = set(list(picks)[:count - 3]) | {0, cuts[1], n - 1}
    mask[sorted(picks)] = True
    np.testing.assert_array_equal(seed_ids(mask), np.flatnonzero(mask))
    # a read-only broadcast view of it, as init's seed arrives
    np.testing.assert_array_equal(seed_ids(np.broadcast_to(mask, (n,))), np.flatnonzero(mask))


def test_seed_mask_is_scanned_once_per_run(store, monkeypatch):
    """The session finds the ids once; the executor takes them and scans no n-sized mask."""
    n = int(store.num_vertices)
    scans, frontiers = [], []
    real_ids, real_flat = session_mod.seed_ids, np.flatnonzero
    real_set = CpuExecutor.set_frontier

    def counting_ids(mask):
        scans.append(np.asarray(mask).size)
        return real_ids(mask)

    def set_frontier(self, mask, ids=None):
        flat = []

        def counting_flat(a):
            if np.asarray(a).size >= n:
                flat.append(1)
            return real_flat(a)
        monkeypatch.setattr(np, "flatnonzero", counting_flat)
        try:
            real_set(self, mask, ids=ids)
        finally:
            monkeypatch.setattr(np, "flatnonzero", real_flat)
        frontiers.append((mask is None, None if ids is None else list(ids), len(flat)))

    monkeypatch.setattr(session_mod, "seed_ids", counting_ids)
    monkeypatch.setattr(CpuExecutor, "set_frontier", set_frontier)
    with gr.Session(store) as s:
        r = s.run(BFS(source=17))
        r2 = s.run(BFS(source=150))
    assert scans == [n, n]
    assert frontiers == [(False, [17], 0), (False, [150], 0)]
    ref = gr.run(BFS(source=150), store)
    np.testing.assert_array_equal(r2.values["level"], ref.values["level"])
    assert r.values["level"][17] == 0 and r.info["seed_scan_s"] >= 0


def test_seeds_over_several_shards_give_multi_source_levels(store):
    """Seeds spread over several shards (per-shard counts from the ids): a multi-source BFS equals
    the minimum of the single-source ones."""
    seeds = np.array([3, 90, 91, 199])

    class Multi(BFS):
        def init(self, v):
            hit = np.isin(v.id, seeds)
            v.level = np.where(hit, 0, UNREACHED)
            return hit
    with gr.Session(store) as s:
        got = s.run(Multi(source=0)).values["level"]
        levels = [s.run(BFS(source=int(x))).values["level"] for x in seeds]
        want = np.min([np.where(x < 0, UNREACHED, x) for x in levels], axis=0)   # -1: unreached
        want[want == UNREACHED] = -1
    np.testing.assert_array_equal(got, want)
