"""Sessions: set up once, many runs; lanes run several instances of a program as one."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.algorithms.bc import betweenness
from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.errors import UsageError

from ..algorithms.conftest import build, minimum_budget, random_edges
from ..algorithms.test_datasets import edges_of


def count_reads(store, monkeypatch):
    reads = []
    original = store.read

    def read(i, name, out=None):
        reads.append((i, name))
        return original(i, name, out=out)
    monkeypatch.setattr(store, "read", read)
    return reads


@pytest.fixture
def store(tmp_path):
    src, dst, w = random_edges(np.random.default_rng(5), 120, 600, weighted=True)
    return build(tmp_path, 120, src, dst, w, num_shards=5)


def test_second_run_reads_no_resident_shard_again(store, monkeypatch):
    reads = count_reads(store, monkeypatch)
    with gr.Session(store) as s:
        first = s.run(BFS(source=0))
        n_first = len(reads)
        second = s.run(BFS(source=7))
        assert len(reads) == n_first          # every shard stayed resident
        # BFS only pushes: it held the out-edges alone; PageRank pulls over the in-edges and
        # reads them, and nothing BFS holds again
        assert {name for _, name in reads} <= {"out/indptr", "out/dst"}
        s.run(PageRank(), max_iter=3)
        assert all(name.startswith("in/") for _, name in reads[n_first:])
    assert n_first > 0 and sum(st.bytes_read for st in first.stats) > 0
    assert sum(st.bytes_read for st in second.stats) == 0
    np.testing.assert_array_equal(second.value, gr.run(BFS(source=7), store).value)


def test_session_under_a_budget_gives_every_program_room(store):
    budget = max(minimum_budget(p, store) for p in (BFS(source=0), SSSP(source=0)))
    with gr.Session(store, memory_budget=budget) as s:
        for _ in range(2):   # the two programs do not fit together: they take turns
            got = s.run(SSSP(source=3)).value
            np.testing.assert_array_equal(got, gr.run(SSSP(source=3), store).value)
            got = s.run(BFS(source=3)).value
            np.testing.assert_array_equal(got, gr.run(BFS(source=3), store).value)
            assert sum(p.model.device_bytes for p in s._prepared.values()) <= budget


def test_session_arguments_are_checked(store):
    with pytest.raises(UsageError, match="memory_budget"):
        gr.Session(store, memory_budget=-1)
    with gr.Session(store) as s:
        with pytest.raises(UsageError, match="one GASProgram class"):
            s.run_lanes([BFS(source=0), SSSP(source=0)])
        with pytest.raises(UsageError, match="lanes"):
            s.run_lanes([PageRank(), PageRank(damping=0.5)])   # aggregates: run() each
        assert s.run_lanes([]) == []


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(0, 160), shards=st.integers(1, 5),
       lanes=st.integers(1, 7), seed=st.integers(0, 5), budget=st.sampled_from(["all", "min"]))
def test_lanes_equal_separate_runs(tmp_path_factory, n, m, shards, lanes, seed, budget):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=True)
    store = build(tmp_path_factory.mktemp("lanes"), n, src, dst, w, num_shards=shards)
    sources = [int(v) for v in rng.integers(0, n, lanes)]
    for cls in (BFS, SSSP, PathCounts):
        programs = [cls(source=v) for v in sources]
        # the lanes executor holds a power-of-two number of lanes, beside one single run
        held = 1 << (lanes - 1).bit_length()
        low = None if budget == "all" else minimum_budget(programs[0], store) * (held + 1)
        # lanes pull: their reference is the synchronous run (push_async would save iterations)
        with gr.Session(store, memory_budget=low, push_async=False) as s:
            got = s.run_lanes(programs)
            want = [s.run(cls(source=v)) for v in sources]
        for a, b in zip(got, want):
            assert a.iterations == b.iterations and a.converged == b.converged
            for f in b.values:
                np.testing.assert_array_equal(a.values[f], b.values[f])


class PathCounts(gr.GASProgram):
    """Shortest-path counts level by level, frontier-driven: a sum that reads self.iteration
    (pull only), in lanes."""

    vertex = {"level": "int64", "sigma": "float64"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    params = {"source": 0}

    def init(self, v):
        is_source = v.id == self.source
        v.level = np.where(is_source, 0, -1)
        v.sigma = np.where(is_source, 1.0, 0.0)
        return is_source

    def gather_map(self, src, dst, edge):
        return gr.where(src.level == self.iteration - 1, src.sigma, 0.0)

    def apply(self, v, acc):
        found = (v.level < 0) & (acc > 0.0)
        v.level = gr.where(found, self.iteration, v.level)
        v.sigma = gr.where(found, acc, v.sigma)
        return found


def test_exact_bc_in_lanes_matches_networkx_on_a_real_graph(datasets_dir, tmp_path):
    path = datasets_dir / "dolphins.mtx"
    n, src, dst, _ = edges_of(path)
    with gr.open(gr.build_shards(path, tmp_path / "d.h5", num_shards=7, progress=False)) as store:
        values, results = betweenness(store)
        G = nx.DiGraph() if store.directed else nx.Graph()   # a symmetric .mtx: undirected
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    want = nx.betweenness_centrality(G, normalized=False)
    np.testing.assert_allclose(values, [want[v] for v in range(n)], atol=1e-9)
    assert sum(r.info.get("program") == "BrandesBackward" for r in results) == n  # each source
    assert sum(r.info.get("lanes", 0) > 1 for r in results) > 0   # a small graph: in lanes


class _Stop(Exception):
    pass


@pytest.fixture
def no_collector():
    """The cyclic garbage collector off: what is freed, reference counting frees (on the thread
    that drops the last reference; a GPU session's PyCUDA objects must go on the owning thread)."""
    import gc
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_a_session_dropped_unclosed_is_freed_without_the_collector(store, no_collector):
    import weakref
    s = gr.Session(store, memory_budget=minimum_budget(BFS(), store) + store.max_shard_nbytes())
    s.run(BFS(source=0))
    gone = weakref.ref(s)
    del s
    assert gone() is None   # (its planners refer to the session's loaded set, not to it)


def test_a_kept_exception_does_not_hold_the_executors_state_arrays(store, monkeypatch, no_collector):
    """An exception that stops a run, kept by its caller (pytest.raises keeps it in a reference
    cycle): the run's frame in its traceback no longer holds the initial state's arrays, which
    a GPU executor hands out of its own page-locked memory."""
    import weakref
    from grstream.backends.cpu.executor import CpuExecutor
    made = []

    def host_state(self, name, shape, dtype):
        arr = np.zeros(shape, dtype)
        made.append(weakref.ref(arr))
        return arr
    monkeypatch.setattr(CpuExecutor, "host_state", host_state)

    def stop(st):
        if st.iteration == 2:
            raise _Stop()
    with gr.Session(store) as s:
        with pytest.raises(_Stop) as caught:
            s.run(SSSP(source=0), callback=stop)
    assert made and all(ref() is None for ref in made)
    assert caught.value.__traceback__ is not None
