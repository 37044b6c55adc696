"""Transfer modes of the GPU executor (compact, zerocopy): the movement with a synchronous
stand-in for the CUDA streams (no GPU), then every mode x program x budget on the device
(marked cuda), each equal to the copy path and to scipy."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS, UNREACHED
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.backends.cuda.compact import Packer
from grstream.backends.cuda.movement import Mover
from grstream.backends.cuda.transfer import frontier_words
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Forced
from ...engine.contract_helpers import policies_for
from grstream.engine.memory import Ledger
from grstream.engine.planner import Planner
from grstream.engine.schedule import needed_arrays

from ...algorithms import test_bfs, test_cc
from .test_movement import SyncExecutor, device_view, make_store, model_for


class MappedExecutor(SyncExecutor):
    """The stand-in whose pinned cache is mapped: its host bytes get a device address of their
    own, read by kernels only where registered."""

    def locate(self, addr, nbytes):
        if self.mapped is not None:
            cache, base = self.mapped
            if base <= addr < base + cache.nbytes:   # a zero-copy read: registered first
                assert cache.registrar.covers(cache.address + addr - base, nbytes)
        return super().locate(addr, nbytes)


def setup(store, spec, transfer, frontier=None):
    names = needed_arrays(spec)
    model = model_for(store, names, "partial", "all")
    ex = MappedExecutor()
    packer = Packer(model, store.intervals, threads=2)
    packer.set_frontier(frontier)
    mover = Mover(store, model, ex, Ledger(model), {}, mapped=True, packer=packer)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE),
                        transfers=("resident", "load", "copy", "compact", "zerocopy"), forced=Forced(transfer=transfer))
    return mover, ex, model, Planner(spec, store, model, caps, policies_for(caps)), packer


def test_frontier_words_hold_exactly_the_ids():
    # a scheduled program's active set goes to the device as these words (CudaExecutor.set_active)
    rng = np.random.default_rng(3)
    for n in (1, 31, 32, 33, 100, 1000):
        ids = np.flatnonzero(rng.random(n) < 0.4)
        words = frontier_words(ids, n)
        assert words.dtype == np.uint32 and words.size == (n + 31) // 32
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        np.testing.assert_array_equal(np.flatnonzero(bits), ids)
        bounds = np.array([0, n // 3, n // 2, n])
        packer = Packer(type("M", (), {})(), bounds, threads=1)
        packer.set_frontier(words)   # the compacting host thread reads the same layout
        for i in range(3):
            np.testing.assert_array_equal(packer.rows(i) + bounds[i],
                                          ids[(ids >= bounds[i]) & (ids < bounds[i + 1])])


def device_ids(ex, store, arrays, name):
    """Dataset ``name`` of a delivered shard as the kernels read it: a compressed store's ids
    decoded from the delivered parts (as many as ``arrays.edges`` says)."""
    if name in arrays or "." in name or name not in ("in/src", "out/dst"):
        return device_view(ex, store, arrays, name)
    from grstream.store import codec
    parts = {p: device_view(ex, store, arrays, f"{name}.{p}") for p in codec.PARTS}
    edges = arrays.edges[name.split("/")[0]]
    codec.check(parts, edges, store.num_vertices)
    return codec.decode(parts, edges, store.num_vertices, store.id_dtype)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("transfer", ["compact", "zerocopy"])
def test_units_deliver_the_active_rows(tmp_path, transfer, compress):
    """Compacted shards hold the active rows only, a compressed store's ids as blocks encoded
    again (the packer decodes the active rows' blocks), which decode to the rows' ids."""
    store = make_store(tmp_path, compress=compress)
    spec = SSSP.spec   # in-edges + weights, out-edges
    rng = np.random.default_rng(1)
    active = np.flatnonzero(rng.random(store.num_vertices) < 0.3)
    mover, ex, model, planner, packer = setup(store, spec, transfer, frontier_words(active, store.num_vertices))
    assert model.slots == 2 and model.pinned and model.staging
    intervals = np.asarray(store.intervals)
    counts = np.diff(np.searchsorted(active, intervals))
    for it in (1, 2):   # the first fills the pinned cache from the store, the second reads it
        plan = planner.plan(it, counts, False)
        modes = {u.transfer for u in plan.units if u.transfer not in ("resident", "load")}
        assert modes == {transfer}
        stats, seen = {}, []
        for unit, data in mover.deliver(plan, stats):
            for arrays in data:
                i = arrays.shard
                seen.append(i)
                lo = intervals[i]
                rows = active[(active >= lo) & (active < intervals[i + 1])] - lo
                for d, names in (("in", ["in/src", "in/weight"]), ("out", ["out/dst"])):
                    ptr = device_view(ex, store, arrays, f"{d}/indptr")
                    whole = store.read(i, f"{d}/indptr")
                    for r in rows:   # every active row holds its edges; compacted ones only those
                        for name in names:
                            got = device_ids(ex, store, arrays, name)[ptr[r]:ptr[r + 1]]
                            np.testing.assert_array_equal(got, store.read(i, name)[whole[r]:whole[r + 1]])
                    if unit.transfer == "compact":
                        assert ptr[-1] == sum(whole[r + 1] - whole[r] for r in rows)
            ex.shard_done(unit.slot if unit.transfer in ("copy", "compact") else None)
        assert sorted(seen) == sorted(i for i in np.flatnonzero(counts))
        streamed = [u for u in plan.units if u.transfer == transfer]
        if transfer == "zerocopy":   # nothing copied; the slots were never touched
            assert stats["copies"] == sum(u.transfer == "load" for u in plan.units)
            assert stats["modes"]["zerocopy"] == sum(u.nbytes for u in streamed)
        else:
            whole = sum(model.regions[i] for u in streamed for i in u.shards)
            assert 0 < stats["modes"]["compact"] < whole
            assert [m for m, _, _ in stats["copy_spans"]] == ["compact"] * len(streamed)
    packer.close()


@pytest.mark.parametrize("compress", [False, True])
def test_every_vertex_active_compacts_to_the_whole_shard(tmp_path, compress):
    store = make_store(tmp_path, compress=compress)
    mover, ex, model, planner, packer = setup(store, BFS.spec, "compact", None)
    counts = np.diff(np.asarray(store.intervals))
    stats = {}
    for unit, data in mover.deliver(planner.plan(1, counts, True), stats):
        for arrays in data:
            for name in mover.names:
                np.testing.assert_array_equal(device_view(ex, store, arrays, name),
                                              store.read(arrays.shard, name))
        ex.shard_done(unit.slot if unit.transfer in ("copy", "compact") else None)
    assert packer.take_stats()[0] == stats["modes"]["compact"]
    packer.close()


def test_transfer_option_and_capabilities():
    from grstream.backends.cuda.executor import CudaExecutor
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(options={"transfer": "compact"}))
    assert caps.forced.transfer == "compact" and {"compact", "zerocopy"} <= set(caps.transfers)
    # a forced mode is not chosen by the cost model: no calibration at start-up
    assert CudaExecutor.policies(CudaExecutor.make_setup(options={"transfer": "compact"})).calibration is None
    auto = CudaExecutor.capabilities(CudaExecutor.make_setup(options={}))
    assert callable(CudaExecutor.policies(CudaExecutor.make_setup()).calibration) and auto.forced.transfer == "auto"
    with pytest.raises(gr.errors.UsageError, match="transfer"):
        CudaExecutor.capabilities(CudaExecutor.make_setup(options={"transfer": "teleport"}))


# ---------------------------------------------------------------- on the device
PROGRAMS = {"bfs": lambda: BFS(source=0), "cc": ConnectedComponents, "sssp": lambda: SSSP(source=0),
            "pagerank": lambda: PageRank(tol=1e-9)}


def quarter_budget(store, program):
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.memory import plan_memory
    from grstream.engine.planner import is_dense
    spec = type(program).spec
    model = plan_memory(store, needed_arrays(spec), CudaExecutor.footprint(spec, is_dense(spec), CudaExecutor.make_setup(store)))
    return model.static_bytes + model.scratch_bytes + max(sum(model.regions) // 4, max(model.regions))


def mode_store(tmp_path, algo, compress=False):
    """3,005 vertices (5 isolated), a hub, self-loops and duplicates, in 12 shards (``compress``:
    ids compressed, decoded by the kernels)."""
    import scipy.sparse as sp
    rng = np.random.default_rng(7)
    n, m = 3000, 40_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:50] = 5
    dst[50:60] = src[50:60]
    w = rng.integers(1, 9, m).astype(np.float64) if algo == "sssp" else None
    mat = sp.coo_matrix((np.ones(m) if w is None else w, (src, dst)), shape=(n + 5, n + 5))
    path = tmp_path / "g.h5"
    gr.build_shards(mat, path, num_shards=12, weighted=w is not None, progress=False, compress=compress)
    return gr.open(path)


@pytest.mark.cuda
@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("algo", ["bfs", "cc", "sssp"])
def test_push_units_zero_copied_equal_the_copy_path(gpu, tmp_path, algo, compress):
    """Forced zero-copy reaches push units (the changed set's edges read in place)."""
    store = mode_store(tmp_path, algo, compress)
    b = quarter_budget(store, PROGRAMS[algo]()) * 2   # room for the push buffers
    runs = {}
    for mode in ("copy", "zerocopy"):
        runs[mode] = gr.run(PROGRAMS[algo](), store, device="cuda", memory_budget=b, pinned_budget=1 << 30,
                            direction="push", backend_options={"transfer": mode})
    field = next(iter(runs["copy"].values))
    np.testing.assert_array_equal(runs["zerocopy"].values[field], runs["copy"].values[field])
    pushed = [s for s in runs["zerocopy"].stats if s.plan["plan_direction"] == "push"]
    if runs["zerocopy"].info["residency"] != "in-memory" and pushed:
        assert any("zerocopy" in s.plan["shard_modes"].values() for s in pushed)


@pytest.mark.cuda
@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("algo", sorted(PROGRAMS))
@pytest.mark.parametrize("budget", ["quarter", "slots"])
def test_every_mode_equals_the_copy_path_and_scipy(gpu, tmp_path, algo, budget, compress):
    """Pull plans (the transfer modes' target) in every mode; a compressed store's shards are
    compacted too (the packer decodes the active rows' blocks and encodes them again)."""
    store = mode_store(tmp_path, algo, compress)
    b = quarter_budget(store, PROGRAMS[algo]())   # "slots": one shard per copy, 3 slots
    results = {}
    for mode in ("copy", "compact", "zerocopy", "auto"):
        opts = {"transfer": mode}
        if budget == "slots":
            opts.update(slot_bytes=0, slots=3)
        r = gr.run(PROGRAMS[algo](), store, device="cuda", memory_budget=b, pinned_budget=1 << 30,
                   max_iter=60 if algo == "pagerank" else None, backend_options=opts, direction="pull")
        results[mode] = r
        used = {x for s in r.stats for x in s.plan["shard_modes"].values()}
        mem = r.info["memory"]
        # compaction packs into a staging buffer: a model caching every streamed shard with
        # none resident keeps none (grstream/engine/memory.py), and then every shard is copied
        if mode == "zerocopy" or (mode == "compact" and mem["staging"]):
            assert mode in used or r.info["residency"] == "in-memory", (mode, used)
        elif mode == "compact":
            assert used <= {"copy"}
    field = next(iter(results["copy"].values))
    cpu = gr.run(PROGRAMS[algo](), store, device="cpu", max_iter=60 if algo == "pagerank" else None)
    for mode, r in results.items():
        if algo == "pagerank":   # float sums in another order: the last bits
            np.testing.assert_allclose(r.values[field], results["copy"].values[field], rtol=1e-9, atol=1e-15)
        else:
            np.testing.assert_array_equal(r.values[field], results["copy"].values[field], err_msg=mode)
        assert sum(sum(s.transfer_bytes.values()) for s in r.stats) > 0 or r.info["residency"] == "in-memory"
    if algo == "bfs":
        level = np.where(results["auto"].values["level"] >= UNREACHED, -1, results["auto"].values["level"])
        coo = store.to_scipy("csr").tocoo()
        np.testing.assert_array_equal(level, test_bfs.reference(store.num_vertices, coo.row, coo.col, 0))
    elif algo == "cc":
        coo = store.to_scipy("csr").tocoo()
        np.testing.assert_array_equal(results["auto"].values["label"],
                                      test_cc.reference(store.num_vertices, coo.row, coo.col))
    else:
        np.testing.assert_allclose(results["auto"].values[field], cpu.values[field], rtol=1e-9)


def test_zero_copy_kernels_are_the_warp_merged_aligned_variant():
    from grstream.backends.cuda.compile import module_source, nvcc_check, nvcc_path
    from grstream.backends.cuda.zerocopy import zerocopy_source
    for cls in (BFS, SSSP, ConnectedComponents, PageRank):
        ks = module_source(cls.spec, np.int32, {p: np.float64 for p in cls.spec.edge_reads})
        zc = zerocopy_source(ks.source)
        assert "#define GR_WARP_MIN 1\n" in zc and "(b & ~31LL) + lane" in zc
        assert zc.count("if (j >= b)") == ks.source.count("j < e; j += 32")
        assert zc.count("#pragma unroll 8") - ks.source.count("#pragma unroll 8") == \
            ks.source.count("j < e; j += 32") + ks.source.count("j += GR_BLOCK)")
        if nvcc_path() is not None:
            assert nvcc_check(zc, name=f"zerocopy_{cls.__name__}")
    with pytest.raises(ValueError, match="skeletons changed"):
        zerocopy_source("__global__ void f() {}")


def test_packing_rate_is_measured_on_the_host():
    from grstream.backends.cuda.transfer import _pack_rate
    assert _pack_rate(nv=1 << 12) > 1e6    # bytes/s: any host packs a few MB/s


class Event:
    def __init__(self, t):
        self.t = t

    def time_since(self, origin):
        return (self.t - origin.t) * 1e3   # ms, as PyCUDA's


def test_mode_times_split_copies_and_zero_copy_kernels():
    from types import SimpleNamespace
    from grstream.backends.cuda.transfer import ModeTimes
    from grstream.backends.cuda.streams import Streams
    from grstream.engine.backend import IterationStats
    from grstream.engine.plan import Unit
    streams = SimpleNamespace(copy_spans=[(Event(0), Event(1)), (Event(0.5), Event(2)), (Event(3), Event(4))],
                              kernel_spans=[(Event(1), Event(1.5))])
    times = ModeTimes()
    zc = Unit(shards=(4,), transfer="zerocopy", balance=("twc",))
    times.done(streams, zc)
    streams.kernel_spans.append((Event(5), Event(7)))
    mstats = {"copy_spans": [("copy", 0, 2), ("compact", 2, 3)], "modes": {"copy": 10, "compact": 4, "zerocopy": 3}}
    packer = SimpleNamespace(take_stats=lambda: (4, 0.25))
    st = IterationStats()
    times.report(Streams.span_times(streams, Event(0)), mstats, packer, st)
    assert st.transfer_bytes == {"copy": 10, "compact": 4, "zerocopy": 3}
    assert st.transfer_seconds == pytest.approx({"copy": 2.0, "compact": 1.0, "zerocopy": 2.0})
    assert st.time_pack == 0.25 and times.kernels == []
