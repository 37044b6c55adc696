"""Issue 7's GPU defects, on a GPU (skipped without one): deterministic gathers, NaN in min/max,
seeding, launch argument checking, the stream closed after a failed launch."""
import threading

import numpy as np
import pytest

import grstream as gr
from grstream.errors import UsageError

from .test_cuda_backend import build, executor_of, gpu_minimum, skewed_graph

pytestmark = pytest.mark.cuda


class NanMin(gr.GASProgram):
    """Float minimum over in-neighbours where some values are NaN (they must spread as on the CPU)."""

    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.min
    activate = "all"

    def init(self, v):
        v.x = np.where(v.id % 1499 == 5, np.nan, v.id * 0.5)   # vertices 5, 1504: the hub sees them

    def gather_map(self, src, dst, edge):
        return src.x + 1.0

    def apply(self, v, acc):
        v.x = acc
        return False


class MultiSourceBFS(gr.algorithms.bfs.BFS):
    """BFS from every vertex with id % every == 3: seeds in every shard."""

    params = {"source": 0, "every": 97}

    def init(self, v):
        seed = v.id % self.every == 3
        v.level = np.where(seed, 0, 1 << 40)
        return seed


def skewed_store(tmp_path, rng, shards=6):
    n, src, dst, w = skewed_graph(rng, n=3000, m=30000, hub_edges=4000)
    return build(tmp_path, n, src, dst, w, num_shards=shards)


def test_deterministic_pagerank_is_bit_identical_across_runs_and_budgets(gpu, tmp_path, rng):
    store = skewed_store(tmp_path, rng)
    pr = gr.algorithms.pagerank.PageRank
    low = gpu_minimum(pr(), store)
    runs = []
    for b in (None, low, low + store.nbytes() // 2, None, low):
        r = gr.run(pr(tol=0.0), store, device="cuda", memory_budget=b, max_iter=15,
                   backend_options={"deterministic": True})
        assert r.info["deterministic"] and r.info["gather_strategies"]["merge"] == 0
        runs.append(r.values["rank"].view(np.uint64))
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])
    cpu = gr.run(pr(tol=0.0), store, max_iter=15).values["rank"]
    np.testing.assert_allclose(runs[0].view(np.float64), cpu, rtol=1e-9)
    with pytest.raises(UsageError, match="deterministic"):
        gr.run(pr(), store, device="cuda", backend_options={"deterministic": True, "load_balance": "merge"})


@pytest.mark.parametrize("lb", ["twc", "merge"])
def test_min_gather_keeps_nan_as_the_cpu(gpu, tmp_path, rng, lb):
    store = skewed_store(tmp_path, rng, shards=4)
    cpu = gr.run(NanMin(), store, max_iter=2).values["x"]
    assert np.isnan(cpu).any() and not np.isnan(cpu).all()
    for b in (None, gpu_minimum(NanMin(), store)):
        got = gr.run(NanMin(), store, device="cuda", memory_budget=b, max_iter=2,
                     backend_options={"load_balance": lb}).values["x"]
        np.testing.assert_array_equal(got, cpu)   # NaN where the CPU has NaN, equal elsewhere


@pytest.mark.parametrize("every", [97, 7], ids=["few-seeds-marked", "many-seeds-activated"])
def test_seeds_in_every_shard(gpu, tmp_path, rng, every):
    from grstream.backends.cuda.phases import SEED_LIST
    store = skewed_store(tmp_path, rng, shards=5)
    assert (store.num_vertices // every > SEED_LIST) == (every == 7)
    cpu = gr.run(MultiSourceBFS(every=every), store)
    for b in (None, gpu_minimum(MultiSourceBFS(), store)):
        got = gr.run(MultiSourceBFS(every=every), store, device="cuda", memory_budget=b)
        np.testing.assert_array_equal(got.values["level"], cpu.values["level"])
        assert got.iterations == cpu.iterations
    # the first iteration's active vertices compare under one direction: the GPU's default rule
    # pushes (active = the seed, the changed set) where the CPU's pulls (active = its neighbours)
    pulled = gr.run(MultiSourceBFS(every=every), store, device="cuda", direction="pull")
    assert pulled.stats[0].active_vertices == gr.run(MultiSourceBFS(every=every), store,
                                                     direction="pull").stats[0].active_vertices
    assert set(got.info["start"]) == {"state_s", "seed_s"}


def test_a_launch_with_wrong_arguments_is_a_python_error(gpu, tmp_path, rng):
    from grstream.backends.cuda.kernelargs import KernelArgumentError
    store = skewed_store(tmp_path, rng, shards=2)
    pr = gr.algorithms.pagerank.PageRank
    # deterministic: the two runs must agree to the bit (the default's merge atomics may not)
    with gr.Session(store, device="cuda", deterministic=True) as session:
        before = session.run(pr(), max_iter=3).values["rank"]
        dev = executor_of(session, pr).dev
        with pytest.raises(KernelArgumentError, match="takes 2 arguments"):
            dev.launch("fill", 10, dev.acc)
        with pytest.raises(KernelArgumentError, match="'nv'"):
            dev.launch("fill", 10, dev.acc, 2.5)
        # nothing reached the GPU: the context is healthy and the next run agrees
        np.testing.assert_array_equal(session.run(pr(), max_iter=3).values["rank"], before)


def test_failed_launch_mid_stream_stops_the_reader(gpu, tmp_path, rng, monkeypatch):
    from grstream.backends.cuda.executor import CudaExecutor
    from .test_cuda_backend import largest_region
    store = skewed_store(tmp_path, rng, shards=8)
    prog = gr.algorithms.bfs.BFS(source=7)
    real, calls = CudaExecutor.gather, []

    def failing(self, plan, unit, data):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("launch failed")
        return real(self, plan, unit, data)
    with gr.Session(store, device="cuda", memory_budget=gpu_minimum(prog, store),
                    pinned_budget=largest_region(prog, store)) as session:
        monkeypatch.setattr(CudaExecutor, "gather", failing)
        with pytest.raises(RuntimeError, match="launch failed"):
            session.run(prog)
        assert not [t for t in threading.enumerate() if t.name == "grstream-read-ahead" and t.is_alive()]
        monkeypatch.setattr(CudaExecutor, "gather", real)
        cpu = gr.run(prog, store).values["level"]
        np.testing.assert_array_equal(session.run(prog).values["level"], cpu)   # the session recovered


def test_executor_holds_what_the_memory_model_planned(gpu, tmp_path, rng):
    """Every device and pinned allocation went through the ledger, within the model's bytes."""
    store = skewed_store(tmp_path, rng, shards=6)
    pr = gr.algorithms.pagerank.PageRank
    low = gpu_minimum(pr(), store)
    for b in (None, low, low + store.nbytes() // 3):
        with gr.Session(store, device="cuda", memory_budget=b) as session:
            session.run(pr(tol=0.0), max_iter=3)
            ex = executor_of(session, pr)
            ledger, model = ex.ledger, ex.memory
            for kind in ("device", "scratch", "pinned"):
                assert ledger.peak[kind] <= ledger.limits[kind], kind
            # static state and slots are held whole; resident shards once loaded
            assert ledger.held["device"] == model.device_bytes - model.scratch_bytes
            assert ledger.held["pinned"] == model.pinned_bytes


class HostBFS(gr.algorithms.bfs.BFS):
    """BFS started by a host init (BFS itself declares its start, which the GPU fills in place)."""

    def init(self, v):
        return super().init(v)


def test_state_staged_in_pinned_memory_never_leaks_into_results(gpu, tmp_path, rng):
    """A host-made initial state goes through page-locked arrays the executor reuses; a Result
    keeps its own values when the next run of the session writes those arrays again."""
    n, src, dst, w = skewed_graph(rng, n=3000, m=20000, hub_edges=300)
    store = build(tmp_path, n, src, dst, w, num_shards=4)
    want = [gr.run(gr.algorithms.bfs.BFS(source=s), store).value for s in (0, 7)]
    with gr.Session(store, device="cuda") as session:
        first = session.run(HostBFS(source=0))
        ex = executor_of(session, HostBFS)
        assert ex.memory.state_pinned > 0 and set(ex._host_state) == {"level"}
        staged = ex._host_state["level"]
        second = session.run(HostBFS(source=7))
        assert ex._host_state["level"] is staged    # reused, not pinned again
        assert not np.shares_memory(first.value, staged)
    np.testing.assert_array_equal(second.value, want[1])
