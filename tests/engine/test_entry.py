"""The public entry points refuse bad arguments with typed errors naming them, check program
params that are vertex ids, and let threads share a Session."""
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import grstream as gr
import grstream.algorithms as algorithms
from grstream.algorithms.bfs import BFS
from grstream.algorithms.predecessors import BFSTree, path
from grstream.algorithms.sssp import SSSP
from grstream.errors import GrstreamError, ProgramError, UsageError

from ..algorithms.conftest import build, random_edges


@pytest.fixture
def store(tmp_path):
    src, dst, w = random_edges(np.random.default_rng(3), 400, 1600, weighted=True)
    return build(tmp_path, 400, src, dst, w, num_shards=4)


@pytest.fixture
def tiny(tmp_path):
    edges = np.array([[0, 1, 1.0], [1, 2, 2.0], [0, 2, 4.0]])   # vertex 3: isolated
    return build(tmp_path, 4, edges[:, 0].astype(int), edges[:, 1].astype(int), edges[:, 2],
                 name="tiny")


# -- one Session, several threads ----------------------------------------------------------------

def test_threads_sharing_a_session_get_the_results_of_sequential_runs(store):
    sources = list(range(0, 60, 5))
    with gr.Session(store) as s:
        want = {v: s.run(BFS(source=v)).value for v in sources}
        want_sssp = {v: s.run(SSSP(source=v)).value for v in sources}
        for _ in range(3):
            with ThreadPoolExecutor(6) as pool:
                got = dict(zip(sources, pool.map(lambda v: s.run(BFS(source=v)).value, sources)))
                mixed = list(pool.map(lambda v: (v, s.run(SSSP(source=v)).value), sources))
                lanes = pool.submit(s.run_lanes, [BFS(source=v) for v in sources[:4]])
                got_lanes = [r.value for r in lanes.result()]
            for v in sources:
                np.testing.assert_array_equal(got[v], want[v], err_msg=f"BFS from {v}")
            for v, value in mixed:
                np.testing.assert_array_equal(value, want_sssp[v], err_msg=f"SSSP from {v}")
            for v, value in zip(sources, got_lanes):
                np.testing.assert_array_equal(value, want[v])
    assert (want[0] >= 0).sum() > 10   # the runs reach something


def test_close_waits_for_the_run_in_progress(store):
    want = gr.run(BFS(source=0), store).value
    started, order = threading.Event(), []

    def slow(stats):
        started.set()
        time.sleep(0.05)
    s = gr.Session(store)
    worker = ThreadPoolExecutor(1)
    running = worker.submit(lambda: (s.run(BFS(source=0), callback=slow), order.append("run"))[0])
    assert started.wait(10)
    s.close()
    order.append("close")
    np.testing.assert_array_equal(running.result().value, want)
    assert order == ["run", "close"]
    worker.shutdown()


def test_a_run_started_inside_a_run_of_the_same_session_is_refused(store):
    with gr.Session(store) as s:
        def nested(stats):
            s.run(BFS(source=1))
        with pytest.raises(UsageError, match="during a run of the same session"):
            s.run(BFS(source=0), callback=nested)
        np.testing.assert_array_equal(s.run(BFS(source=0)).value, gr.run(BFS(source=0), store).value)


# -- sources -------------------------------------------------------------------------------------

@pytest.mark.parametrize("source", [4, 99, -1])
@pytest.mark.parametrize("make", [BFS, SSSP, BFSTree])
def test_a_source_outside_the_graph_is_a_usage_error(tiny, make, source):
    with pytest.raises(UsageError, match=rf"source vertex {source} is out of range.*4 vertices"):
        gr.run(make(source=source), tiny)
    with gr.Session(tiny) as s:
        with pytest.raises(UsageError, match=rf"source vertex {source} is out of range"):
            s.run(make(source=source))
        if s.can_run_lanes(make):
            with pytest.raises(UsageError, match=rf"source vertex {source} is out of range"):
                s.run_lanes([make(source=0), make(source=source)])
        assert s.run(make(source=3)).iterations >= 0   # the session still runs


def test_every_algorithm_program_with_a_source_declares_it_a_vertex():
    import inspect
    found = []
    for name in dir(algorithms):
        module = getattr(algorithms, name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, gr.GASProgram) and cls.spec is not None and "source" in cls.spec.params:
                found.append(cls)
                assert "source" in cls.spec.vertex_params, cls
    assert len(found) >= 6


def test_vertex_params_must_name_an_integer_param():
    with pytest.raises(ProgramError, match="vertex_params"):
        class Bad(gr.GASProgram):
            vertex = {"x": "float64"}
            params = {"start": 0.0}
            vertex_params = ("start",)

            def apply(self, v, acc):
                return False


def test_path_refuses_a_source_outside_the_parent_array():
    parent = np.array([-1, 0, 1, -1])
    assert path(parent, 0, 2) == [0, 1, 2]
    for source in (99, -1, 1.5):
        with pytest.raises(UsageError, match="source vertex .* is out of range"):
            path(parent, source, 2)


def test_unreached_bfs_levels_are_minus_one_in_the_result(tiny):
    want = [0, 1, 1, -1]
    np.testing.assert_array_equal(gr.run(BFS(source=0), tiny).value, want)
    with gr.Session(tiny) as s:
        np.testing.assert_array_equal(s.run(BFS(source=0)).value, want)
        lanes = s.run_lanes([BFS(source=0), BFS(source=3)])
    np.testing.assert_array_equal(lanes[0].value, want)
    np.testing.assert_array_equal(lanes[1].value, [-1, -1, -1, 0])
    np.testing.assert_array_equal(algorithms.bfs.bfs(tiny, 0)[0], want)


# -- argument checks -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, match", [
    ("abc", "memory_budget: cannot read 'abc' as a byte size"),
    (math.nan, "memory_budget must be a whole number of bytes, not nan"),
    (math.inf, "memory_budget must be a whole number of bytes"),
    (True, "memory_budget must be a byte count"),
    (1.5, "memory_budget must be a whole number of bytes, not 1.5"),
    (-1, "memory_budget must be >= 0 bytes"),
    ("-5M", "memory_budget: cannot read"),
    (1 << 63, "beyond the largest size"),
    ("9999999P", "memory_budget: byte size .* is beyond the largest"),
    ([1], "memory_budget must be a byte count"),
])
def test_bad_memory_budgets_are_refused_naming_the_argument(store, value, match):
    with pytest.raises(UsageError, match=match):
        gr.run(BFS(source=0), store, memory_budget=value)
    with pytest.raises(UsageError, match=match.replace("memory_budget", "pinned_budget")):
        gr.Session(store, pinned_budget=value)


def test_memory_budgets_take_what_the_command_line_takes(store):
    want = gr.run(BFS(source=0), store).value
    for budget in ("64M", "1.5GiB", 64 << 20, float(64 << 20), np.int64(64 << 20)):
        result = gr.run(BFS(source=0), store, memory_budget=budget)
        np.testing.assert_array_equal(result.value, want)
    with gr.Session(store, memory_budget="2M") as s:
        assert s.memory_budget == 2 << 20


@pytest.mark.parametrize("value", ["3", 2.5, True, -1, math.nan, [3]])
def test_bad_max_iter_is_refused(store, value):
    with pytest.raises(UsageError, match="max_iter must be"):
        gr.run(BFS(source=0), store, max_iter=value)
    with gr.Session(store) as s:
        with pytest.raises(UsageError, match="max_iter must be"):
            s.run(BFS(source=0), max_iter=value)
        with pytest.raises(UsageError, match="max_iter must be"):
            s.run_lanes([BFS(source=0)], max_iter=value)
    assert gr.run(BFS(source=0), store, max_iter=np.int64(2)).iterations <= 2


@pytest.mark.parametrize("call, match", [
    (lambda s: gr.Session(None), "store must be a ShardStore .* not NoneType"),
    (lambda s: gr.run(BFS(), 42), "store must be a ShardStore .* not int"),
    (lambda s: gr.run(BFS, s), "instance of a GASProgram subclass, not a GASProgram class"),
    (lambda s: gr.run("bfs", s), "instance of a GASProgram subclass, not str"),
    (lambda s: gr.run(BFS(), s, progress="yes"), "progress must be True or False"),
    (lambda s: gr.run(BFS(), s, callback=3), "callback must be a callable"),
    (lambda s: gr.run(BFS(), s, backend_options=3), "backend_options must be a dict"),
    (lambda s: gr.run(BFS(), s, backend_options={"local_rounds": "a"}), "local_rounds must be"),
    (lambda s: gr.run(BFS(), s, backend_options={"local_rounds": -2}), "local_rounds must be >= 0"),
    (lambda s: gr.run(BFS(), s, backend_options={"push_async": "no"}), "push_async must be True"),
    (lambda s: gr.Session(s).run_lanes(BFS()), "run_lanes.. needs a list of GASProgram instances"),
    (lambda s: gr.Session(s).run_lanes("bfs"), "run_lanes.. needs a list"),
    (lambda s: gr.Session(s).run_lanes([BFS(), 3]), "run_lanes.. needs an instance"),
    (lambda s: gr.Session(s).run_lanes([BFS(), SSSP()]), "one GASProgram class"),
])
def test_misuse_raises_usage_errors(store, call, match):
    with pytest.raises(UsageError, match=match):
        call(store)


def test_a_closed_store_is_refused_and_a_path_is_not_opened_on_bad_arguments(store, tmp_path):
    path = store.path
    other = gr.open(path)
    with gr.Session(other) as s:
        other.close()
        with pytest.raises(UsageError, match="is closed"):
            s.run(BFS(source=0))
    with pytest.raises(UsageError, match="is closed"):
        gr.run(BFS(source=0), other)
    with pytest.raises(UsageError, match="the Session is closed"):
        s.run_lanes([BFS(source=0)])
    s.close()   # a second close does nothing
    with pytest.raises(UsageError, match="memory_budget"):
        gr.Session(path, memory_budget="x")


def test_init_of_the_wrong_shape_is_a_program_error(store):
    class WrongInit(gr.GASProgram):
        vertex = {"x": "float64"}
        gather_reduce = gr.monoid.sum

        def init(self, v):
            v.x = np.zeros(3)

        def gather_map(self, src, dst, edge):
            return src.x

        def apply(self, v, acc):
            v.x = acc
            return v.x > 0.0

    class WrongSeed(WrongInit):
        def init(self, v):
            return np.ones(5, dtype=bool)

    with pytest.raises(ProgramError, match=r"WrongInit: init: v.x must be .*one per vertex \(400 vertices\), not shape \(3,\)"):
        gr.run(WrongInit(), store, max_iter=2)
    with pytest.raises(ProgramError, match=r"WrongSeed: init returned a seed of shape \(5,\): it must be None or a bool mask of the 400"):
        gr.run(WrongSeed(), store, max_iter=2)
    assert issubclass(ProgramError, GrstreamError)


def test_open_and_build_shards_refuse_what_is_not_a_path_and_take_size_strings(tmp_path, store):
    for bad in (None, 42):
        with pytest.raises(UsageError, match="path"):
            gr.open(bad)
        with pytest.raises(UsageError, match="path must be the store's file name"):
            gr.build_shards(np.array([[0, 1]]), bad, progress=False)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    for name, value, match in (("memory_limit", True, "memory_limit must be a byte count"),
                               ("memory_limit", 1.5, "memory_limit must be a whole number"),
                               ("shard_size", "abc", "shard_size: cannot read 'abc'"),
                               ("shard_size", 0, "shard_size must be a positive number")):
        with pytest.raises(UsageError, match=match):
            gr.build_shards(edges, tmp_path / "x.h5", progress=False, **{name: value})
    built = gr.build_shards(edges, tmp_path / "y.h5", progress=False, shard_size="1K",
                            memory_limit="64M")
    assert gr.open(built).num_edges == 3
