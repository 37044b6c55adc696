"""The compiled push kernels generated from the program (backends/cpu/compiled.py) give the numpy
passes' results exactly, on random graphs, for every program that qualifies; the others and a
process without numba run the numpy passes."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.reach import ReverseBFS
from grstream.algorithms.sssp import SSSP
from grstream.backends.cpu import compiled, strategy_compiled
from grstream.backends.cpu.strategy_compiled import CompiledPush
from grstream.errors import UsageError
from grstream.program.scalar import qualifies, scalar_method

from ...algorithms.conftest import build, minimum_budget, random_edges
from .test_push import csgraph_matrix

numba = pytest.importorskip("numba")


class Widest(gr.GASProgram):
    """Widest path with a cap: max of min, an edge property, a param, gr.where and dst.id."""

    vertex = {"width": "float64"}
    reads = {"weight"}
    gather_reduce = gr.monoid.max
    asynchronous = True
    params = {"source": 0, "cap": 60.0}

    def init(self, v):
        v.width = np.where(v.id == self.source, np.inf, -np.inf)
        return v.id == self.source

    def gather_map(self, src, dst, edge):
        top = gr.where(edge.weight > self.cap, self.cap, edge.weight)
        return gr.minimum(src.width, top - (dst.id % 2) * 0.5)

    def apply(self, v, acc):
        new = gr.maximum(v.width, acc)
        changed = new > v.width
        v.width = new
        return changed


class ChangedMin(gr.GASProgram):
    """Smallest id reaching each vertex, gathering only from changed neighbours (a delta
    program: push is valid without absorption, so the kernels keep receiver flags)."""

    vertex = {"label": "int64"}
    gather_reduce = gr.monoid.min
    gather_from = "changed"

    def init(self, v):
        v.label = v.id * 1
        return v.id >= 0

    def gather_map(self, src, dst, edge):
        return src.label

    def apply(self, v, acc):
        new = gr.minimum(v.label, acc)
        changed = new < v.label
        v.label = new
        return changed


class TwoSeeds(gr.GASProgram):
    """The largest seed value reaching each vertex from two seeds (5 and 7): an absorbing program
    whose message reads only the sender, one value per seed, so that units of a plan send
    different uniform messages (push_uniform's bits are cleared between them)."""

    vertex = {"label": "int64"}
    gather_reduce = gr.monoid.max
    params = {"a": 0, "b": 0}
    vertex_params = ("a", "b")

    def init(self, v):
        v.label = np.where(v.id == self.b, 7, np.where(v.id == self.a, 5, 0))
        return (v.id == self.a) | (v.id == self.b)

    def gather_map(self, src, dst, edge):
        return src.label

    def apply(self, v, acc):
        new = gr.maximum(v.label, acc)
        changed = new > v.label
        v.label = new
        return changed


def programs(source, n=1):
    return [BFS(source=source), SSSP(source=source), ConnectedComponents(), ReverseBFS(source=source),
            Widest(source=source), ChangedMin(), TwoSeeds(a=source, b=n - 1 - source)]


def test_the_programs_qualify_and_the_flags_variant_is_generated():
    for program in programs(0):
        spec = type(program).spec
        assert compiled.why_not(spec, {"weight": np.dtype("float64")}) == "", spec.name
    assert Widest.spec.push_field == "width" and ChangedMin.spec.push_field is None
    flags = compiled.push_kernels(ChangedMin.spec, ("in",))
    assert "flag[t] = True" in flags.source and not flags.absorbing
    absorbing = compiled.push_kernels(Widest.spec, ("in",))
    assert "flag[t]" not in absorbing.source.split("def push_in")[1].split("def push_uniform")[0]
    assert "def push_uniform_in" in absorbing.source and "push_uniform" not in flags.source


def test_scalar_form_of_a_method():
    gm = scalar_method(Widest.spec, "gather_map", "g")
    ns = {"np": np}
    exec(gm.source, ns)
    values = {("vertex", "src", "width"): 7.0, ("edge", "weight"): 90.0, ("param", "cap"): 60.0,
              ("id", "dst"): 3}
    assert ns["g"](*[values[k] for k in gm.args]) == 7.0 - 0.0   # min(7, 60 - 0.5)
    values[("vertex", "src", "width")] = 100.0
    assert ns["g"](*[values[k] for k in gm.args]) == 59.5
    assert qualifies(PageRank.spec)[0] is False or not PageRank.spec.push_ok


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.integers(1, 60), m=st.integers(0, 240), seed=st.integers(0, 2**31),
       shards=st.sampled_from([1, 3, 7]), budget=st.sampled_from(["all", "tight"]),
       asyn=st.booleans())
def test_compiled_equals_numpy(tmp_path_factory, n, m, seed, shards, budget, asyn):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=True)
    shards = max(1, min(shards, n))
    store = build(tmp_path_factory.mktemp("compiled"), n, src, dst, w, num_shards=shards)
    source = int(rng.integers(0, n))
    for program in programs(source, n):
        runs = {}
        for kernels in ("numba", "numpy"):
            opts = {"kernels": kernels, "push_async": asyn}
            limit = None if budget == "all" else minimum_budget(type(program)(**program.param_values), store)
            runs[kernels] = gr.run(type(program)(**program.param_values), store,
                                   memory_budget=limit, backend_options=opts)
        a, b = runs["numba"], runs["numpy"]
        name = type(program).__name__
        np.testing.assert_array_equal(a.value, b.value, err_msg=name)
        assert a.iterations == b.iterations, name
        assert [s.changed_vertices for s in a.stats] == [s.changed_vertices for s in b.stats], name
    # and both are right: BFS against csgraph
    want = csgraph.shortest_path(csgraph_matrix(n, src, dst), unweighted=True, indices=source)
    got = gr.run(BFS(source=source), store, backend_options={"kernels": "numba"}).value
    np.testing.assert_array_equal(got, np.where(np.isinf(want), -1, want).astype(np.int64))


def test_uniform_messages_fold_and_change(tmp_path, monkeypatch):
    """push_uniform with its bits: a plan whose units send different uniform messages (the two
    seeds in two shards streamed one at a time), messages of the general kernel after folded
    ones, and folded sends in parts on two threads give the numpy passes' result."""
    n = 400
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, n, (2, 3000))
    a, b = 0, n - 1   # seeds of many edges, in the first and last shards
    src = np.concatenate([src, np.full(60, a), np.full(60, b)])
    dst = np.concatenate([dst, rng.integers(0, n, 120)])
    store = build(tmp_path, n, src, dst, num_shards=4)
    changes, unfolds = [], []
    uniform, unfold = CompiledPush._uniform, CompiledPush._unfold

    def spied(self, d, senders, edges):
        before = self.seen_value
        m = uniform(self, d, senders, edges)
        changes.append(m is not None and before is not None and before != m)
        return m

    def spied_unfold(self):
        unfolds.append(self.folded)
        unfold(self)
    parts = []
    in_threads = strategy_compiled.in_threads

    def spied_threads(calls):
        parts.append(len(calls))
        return in_threads(calls)
    monkeypatch.setattr(CompiledPush, "_uniform", spied)
    monkeypatch.setattr(CompiledPush, "_unfold", spied_unfold)
    monkeypatch.setattr(strategy_compiled, "in_threads", spied_threads)
    monkeypatch.setattr(strategy_compiled, "PARALLEL_EDGES", 8)   # (a small graph)
    for program in (TwoSeeds(a=a, b=b), BFS(source=a)):
        limit = 2 * minimum_budget(program, store)   # room for push, units of a shard or two
        for budget in (limit, None):
            runs = [gr.run(type(program)(**program.param_values), store, memory_budget=budget,
                           backend_options={"kernels": k, "threads": 2}) for k in ("numba", "numpy")]
            np.testing.assert_array_equal(runs[0].value, runs[1].value)
            assert runs[0].iterations == runs[1].iterations
    assert any(changes) and any(unfolds) and max(parts) == 2


def test_uniform_bits_outlive_a_level(tmp_path, monkeypatch):
    """BFS's later levels find the vertices reached before by push_uniform's bits (the level
    just reached absorbs the next one), so the bits are kept between plans, and forgotten where
    a run starts (a session's second run of TwoSeeds, whose max of 7 would absorb its 5); the
    values stay the numpy passes'."""
    rng = np.random.default_rng(4)
    n = 600
    src, dst = rng.integers(0, n, (2, 5000))
    store = build(tmp_path, n, src, dst, num_shards=3)
    monkeypatch.setattr(strategy_compiled, "UNIFORM_SHARE", 1 / 4096)   # (a small graph)
    kept, starts = [], []
    uniform = CompiledPush._uniform

    def spied(self, d, senders, edges):
        before = (self.absorbed, int(np.count_nonzero(self.seen)))
        starts.append(before)
        m = uniform(self, d, senders, edges)
        if m is not None and before[0] is not None:
            kept.append((before[0], m, int(np.count_nonzero(self.seen)) == before[1] > 0))
        return m
    monkeypatch.setattr(CompiledPush, "_uniform", spied)
    for program in (BFS(source=1), BFS(source=2)):
        runs = [gr.run(type(program)(**program.param_values), store,
                       backend_options={"kernels": k}) for k in ("numba", "numpy")]
        np.testing.assert_array_equal(runs[0].value, runs[1].value)
    levels = [(a, m, same) for a, m, same in kept if m == a + 1]   # BFS: a level, then the next
    assert levels and all(same for _, _, same in levels)
    seeds = [(1, 0), (0, 1), (n - 1, 2)]
    want = [gr.run(TwoSeeds(a=a, b=b), store, backend_options={"kernels": "numpy"}).value
            for a, b in seeds]
    with gr.Session(store, kernels="numba") as session:
        for (a, b), values in zip(seeds, want):
            starts.clear()
            np.testing.assert_array_equal(session.run(TwoSeeds(a=a, b=b)).value, values)
            assert starts[0] == (None, 0)   # (the run before left bits: forgotten)


def test_auto_compiles_where_it_pays(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    src, dst, w = random_edges(rng, 300, 2000, weighted=True)
    store = build(tmp_path, 300, src, dst, w, num_shards=4)
    sent = []
    send_all = CompiledPush.send_all

    def counted(self, piece, senders, full, keep):
        sent.append(len(senders))
        return send_all(self, piece, senders, full, keep)
    monkeypatch.setattr(CompiledPush, "send_all", counted)
    monkeypatch.setattr(compiled, "_KERNELS", {})   # a process that has loaded no kernels
    monkeypatch.setenv("GRSTREAM_KERNEL_AOT", "0")   # and has no extension module of them
    monkeypatch.setattr(strategy_compiled, "_SEEN", 0)
    # a small store in such a process: loading the kernels would cost more than they save
    monkeypatch.setattr(strategy_compiled, "COMPILED_EDGES", int(store.num_edges) * 2)
    want = gr.run(SSSP(source=0), store).value
    assert not sent
    # the process's runs reach COMPILED_EDGES edges: the kernels load; then every later run
    # of the program compiles whatever the store's size
    np.testing.assert_array_equal(gr.run(SSSP(source=0), store).value, want)
    assert sent and compiled.loaded(SSSP.spec, ("in",))
    monkeypatch.setattr(strategy_compiled, "COMPILED_EDGES", 1 << 40)
    sent.clear()
    np.testing.assert_array_equal(gr.run(SSSP(source=0), store).value, want)
    assert sent
    sent.clear()
    gr.run(SSSP(source=0), store, backend_options={"kernels": "numpy"})
    assert not sent


def test_choices_and_fallback(tmp_path, monkeypatch):
    store = build(tmp_path, 4, np.array([0, 1, 2]), np.array([1, 2, 3]), num_shards=1)
    with pytest.raises(UsageError, match="kernels must be one of"):
        gr.run(BFS(source=0), store, backend_options={"kernels": "fast"})
    # a program that does not qualify: "numba" says why, "auto" runs numpy
    with pytest.raises(UsageError, match="does not push"):
        gr.run(PageRank(), store, backend_options={"kernels": "numba"})
    want = gr.run(BFS(source=0), store).value
    # without numba: "auto" runs the numpy passes, "numba" says how to install it
    monkeypatch.setattr(compiled, "numba_missing", lambda: "No module named 'numba'")
    np.testing.assert_array_equal(gr.run(BFS(source=0), store).value, want)
    with pytest.raises(UsageError, match=r"grstream\[compiled\]"):
        gr.run(BFS(source=0), store, backend_options={"kernels": "numba"})
    assert strategy_compiled.push_class.__name__ == "push_class"


def test_cache_directory_falls_back(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("GRSTREAM_KERNEL_CACHE", str(blocked / "kernels"))
    assert compiled.cache_dir() != str(blocked / "kernels")
    monkeypatch.setenv("GRSTREAM_KERNEL_CACHE", str(tmp_path / "mine"))
    assert compiled.cache_dir() == str(tmp_path / "mine")
    module = compiled.load_module("VALUE = 3\n")
    assert module.VALUE == 3 and module.__file__.startswith(str(tmp_path / "mine"))


#: under mpiexec: BFS, SSSP and CC with the compiled kernels over the world against one process
#: with the numpy passes, on every rank; prints "equal" on rank 0
RANKS_SCRIPT = """
import sys
import numpy as np
from mpi4py import MPI
import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.sssp import SSSP
comm, path = MPI.COMM_WORLD, sys.argv[1]
if comm.Get_rank() == 0:
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 400, (2, 2500))
    gr.build_shards(np.column_stack([src, dst, rng.uniform(0.5, 3.0, 2500)]), path, num_shards=6,
                    weighted=True, progress=False, renumber=False)
comm.Barrier()
for program in (BFS(source=3), SSSP(source=3), ConnectedComponents()):
    world = gr.run(program, path, comm=comm, backend_options={"kernels": "numba"})
    alone = gr.run(type(program)(**program.param_values), path, backend_options={"kernels": "numpy"})
    np.testing.assert_array_equal(world.value, alone.value)
    assert any(s.plan["plan_direction"] == "push" for s in world.stats)
if comm.Get_rank() == 0:
    print("equal")
"""


def test_ranks_run_the_compiled_kernels(tmp_path):
    from tests.distributed.test_ranks import MPIEXEC, ROOT, have_mpi
    if not have_mpi():
        pytest.skip("mpi4py or mpiexec not installed (grstream[mpi])")
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-c", RANKS_SCRIPT,
                          str(tmp_path / "g.h5")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and "equal" in out.stdout, out.stderr[-3000:]
