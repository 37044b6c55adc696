"""Seeding: the engine finds the seed's ids once and hands them to the executor."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS, UNREACHED
from grstream.backends.cpu.executor import CpuExecutor
from grstream.engine import state as state_mod
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


class HostBFS(BFS):
    """BFS whose start the host makes (an init of its own: the declaration's, run by the base)."""

    def init(self, v):
        return super().init(v)


@pytest.mark.parametrize("cls", [HostBFS, BFS])
def test_seed_mask_is_scanned_once_per_run(store, monkeypatch, cls):
    """The session finds the ids once (a declared start: never, its ids are known and it makes
    no mask); the executor takes them and scans no n-sized mask."""
    n = int(store.num_vertices)
    scans, frontiers = [], []
    real_ids, real_flat = state_mod.seed_ids, np.flatnonzero
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

    monkeypatch.setattr(state_mod, "seed_ids", counting_ids)
    monkeypatch.setattr(CpuExecutor, "set_frontier", set_frontier)
    with gr.Session(store) as s:
        r = s.run(cls(source=17))
        r2 = s.run(cls(source=150))
    assert scans == ([n, n] if cls is HostBFS else [])
    host = cls is HostBFS   # (a declared start hands over its ids alone: no mask of n)
    assert frontiers == [(not host, [17], 0), (not host, [150], 0)]
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


class ReadsBeforeWriting(gr.GASProgram):
    """init reads one field before assigning it, adds to another in place, leaves a third."""
    vertex = {"a": "int64", "b": "float64", "c": "int32"}
    gather_reduce = gr.monoid.sum

    def init(self, v):
        v.a = v.a + v.id   # (read first: zeros)
        b = v.b
        b += 2.0            # (in place on what init reads)
        return None

    def gather_map(self, src, dst, edge):
        return src.c

    def apply(self, v, acc):
        v.c = acc
        return v.c != v.c


def test_init_writes_every_entry_of_reused_arrays():
    """The executor's arrays come with the last run's contents: init's state is the values it
    assigns, zeros elsewhere and where it reads a field first, whatever was there before."""
    from grstream.engine.state import initial_state, vertex_ids

    class Store:
        num_vertices = 50
    kept = {}

    def alloc(name, shape, dtype):   # reused arrays holding what a run left there
        arr = kept.setdefault(name, np.empty(shape, dtype=dtype))
        arr.fill(7)
        return arr
    ids = vertex_ids(50)
    for program, want in ((ReadsBeforeWriting(), {"a": np.arange(50), "b": np.full(50, 2.0), "c": 0}),
                          (BFS(source=4), {"level": np.where(np.arange(50) == 4, 0, UNREACHED)})):
        state, _ = initial_state(program, Store(), alloc=alloc, ids=lambda: ids)
        for f, value in want.items():
            np.testing.assert_array_equal(state[f], np.broadcast_to(value, (50,)))
            assert state[f] is kept[f]


def test_a_session_makes_init_ids_once(store, monkeypatch):
    """v.id in init reads the session's ids (read-only, made on the first run that reads
    them), not a new arange of n per run."""
    seen = []

    class Spy(BFS):
        def init(self, v):
            seen.append(v.id)
            return super().init(v)
    with gr.Session(store) as s:
        a, b = s.run(Spy(source=3)), s.run(Spy(source=5))
    assert np.shares_memory(seen[0], seen[1]) and not seen[0].flags.writeable
    np.testing.assert_array_equal(seen[1], np.arange(store.num_vertices))
    assert a.value[3] == 0 and b.value[5] == 0


def test_init_over_a_span_writes_only_its_vertices():
    """A rank's local init: the span's entries are written (read-first fields zeroed there), the
    others left as they were, and the seed is the span's."""
    from grstream.engine.state import initial_state, local_init

    class Store:
        num_vertices = 30
    kept = {}

    def alloc(name, shape, dtype):
        return kept.setdefault(name, np.full(shape, 9, dtype=dtype))
    state, seed = initial_state(BFS(source=12), Store(), alloc=alloc, span=(10, 20))
    level = state["level"]
    assert (level[:10] == 9).all() and (level[20:] == 9).all()
    np.testing.assert_array_equal(level[10:20], np.where(np.arange(10, 20) == 12, 0, UNREACHED))
    np.testing.assert_array_equal(seed, np.arange(10, 20) == 12)
    state, _ = initial_state(ReadsBeforeWriting(), Store(), alloc=alloc, span=(5, 8))
    assert state["a"].tolist() == [9] * 5 + [5, 6, 7] + [9] * 22
    assert state["c"].tolist() == [9] * 5 + [0] * 3 + [9] * 22
    # declared by the class that defines init: a subclass with its own init is not covered

    class Own(BFS):
        def init(self, v):
            return super().init(v)
    assert local_init(BFS) and not local_init(Own) and not local_init(ReadsBeforeWriting)


def test_bfs_init_makes_no_array_of_n_levels():
    """BFS's init writes its levels into the state's own entries: no temporary of n int64 for
    the engine to copy in (at RMAT scale each fresh array is first-touch memory of the run)."""
    import tracemalloc
    from grstream.engine.state import initial_state, vertex_ids

    class Store:
        num_vertices = 1 << 16
    kept = {"level": np.zeros(1 << 16, dtype=np.int64)}
    ids = vertex_ids(1 << 16)
    tracemalloc.start()
    try:
        state, seed = initial_state(BFS(source=9), Store(), alloc=lambda name, shape, dt: kept[name],
                                    ids=lambda: ids)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert state["level"] is kept["level"] and peak < 8 << 16   # (the seed mask: n bools)
    np.testing.assert_array_equal(state["level"], np.where(ids == 9, 0, UNREACHED))
    assert np.flatnonzero(seed).tolist() == [9]


def _init_in_place(program, n, fields, lanes=None):
    """initial_state of ``program`` into ``fields`` (arrays filled with garbage, as a kept
    executor's are): (state, seed, peak traced bytes, the fields init read zeroed)."""
    import tracemalloc
    from grstream.engine import state as state_mod

    class Store:
        num_vertices = n
    read = []
    getitem = state_mod._ZeroedOnRead.__getitem__

    def spy(self, name):
        if self.reading and name not in self.zeroed:
            read.append(name)
        return getitem(self, name)
    state_mod._ZeroedOnRead.__getitem__ = spy
    tracemalloc.start()
    try:
        state, seed = state_mod.initial_state(program, Store(), lanes=lanes,
                                              alloc=lambda name, shape, dt: fields[name])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        state_mod._ZeroedOnRead.__getitem__ = getitem
    return state, seed, peak, read


def test_source_programs_init_in_place_in_one_pass():
    """BFS, SSSP, the predecessor programs and betweenness's forward pass write their fields
    into the state's own entries without zeroing them first, without the ids array and without
    temporaries of n values (only the seed mask: n bools)."""
    from grstream.algorithms.bc import BrandesForward
    from grstream.algorithms.predecessors import BFSTree, ShortestPathTree
    from grstream.algorithms.sssp import SSSP
    n = 1 << 16
    rng = np.random.default_rng(3)
    dist = rng.random(n)
    level = rng.integers(-1, 9, n)
    cases = [(BFS(source=9), {"level": np.where(np.arange(n) == 9, 0, UNREACHED)}),
             (SSSP(source=9), {"dist": np.where(np.arange(n) == 9, 0.0, np.inf)}),
             (BFSTree(source=9), {"level": np.where(np.arange(n) == 9, 0, -1),
                                     "parent": np.full(n, -1)}),
             (ShortestPathTree(source=9, dist=dist),
              {"dist": dist, "hops": np.where(np.arange(n) == 9, 0, -1), "parent": np.full(n, -1)}),
             (BrandesForward(source=9, level=level),
              {"sigma": np.where(np.arange(n) == 9, 1.0, 0.0), "turn": np.maximum(level, 0)})]
    for program, want in cases:
        spec = type(program).spec
        fields = {f: np.full(n, 7, dtype=dt) for f, dt in spec.vertex_fields.items()}
        state, seed, peak, read = _init_in_place(program, n, fields)
        name = type(program).__name__
        assert read == [], (name, read)
        assert peak < 2 * n, (name, peak)   # (the seed mask; no array of n ids or values)
        for f, values in want.items():
            assert state[f] is fields[f], (name, f)
            np.testing.assert_array_equal(state[f], values, err_msg=f"{name} {f}")
        if seed is not None:
            assert np.flatnonzero(seed).tolist() == [9], name


def test_id_mask_in_lanes_and_outside_the_span():
    """v.id_mask gives v.id == ids in lanes (one id per lane, some outside a rank's span)."""
    from grstream.engine.lanes import lane_program
    from grstream.engine.state import initial_state
    n, lanes = 50, 4

    class Store:
        num_vertices = n
    sources = np.array([3, 40, 3, 49])
    for span in (None, (0, 10), (30, 50)):
        program = lane_program([BFS(source=int(s)) for s in sources])
        state, seed = initial_state(program, Store(), lanes=lanes, span=span)
        lo, hi = span or (0, n)
        ids = np.arange(lo, hi)[:, None]
        np.testing.assert_array_equal(seed, ids == sources)
        np.testing.assert_array_equal(state["level"][lo:hi], np.where(ids == sources, 0, UNREACHED))


def test_init_in_place_over_an_empty_span():
    """A rank that owns no vertex runs init over an empty span: entries() is its empty part."""
    from grstream.engine.state import initial_state

    class Store:
        num_vertices = 20
    for span in ((5, 5), (0, 0), (20, 20)):
        state, seed = initial_state(BFS(source=3), Store(), span=span)
        assert seed.shape == (0,)
