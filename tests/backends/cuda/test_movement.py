"""The GPU executor's data movement over the engine's plans, run with a synchronous stand-in for
the CUDA streams (no GPU needed)."""
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import grstream as gr
from grstream.backends.cuda import loadbalance
from grstream.backends.cuda.executor import CudaExecutor
from grstream.backends.cuda.movement import Mover
from grstream.backends.cuda.pinnedcache import PinnedCache
from grstream.backends.cuda.buffers import ALIGN, vertex_state_bytes
from grstream.backends.cuda.streams import _union, busy_overlap
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Feature, PushFacts
from ...engine.contract_helpers import policies_for
from grstream.engine.memory import Footprint, Ledger, plan_memory
from grstream.engine.planner import Planner
from grstream.engine.schedule import dataset_dtype, needed_arrays
from grstream.errors import DeviceError, ShardStoreError


class Address(int):
    """What device_alloc returns: an int address (PyCUDA's allocations convert with int())."""


class StandInRegistrar:
    """The driver side of a PinnedCache for the stand-ins: it keeps the registered ranges (each
    registration once, none overlapping); a mapped cache's device address maps to its bytes."""

    contiguous = True
    keeps_context = True

    def __init__(self, ex=None, delay=0.0):
        self.ex, self.delay = ex, delay
        self.ranges = {}          # address -> bytes registered
        self.calls = []           # ("register" | "unregister", address, thread name)
        self.lock = threading.Lock()

    def register(self, address, nbytes, mapped):
        time.sleep(self.delay)
        with self.lock:
            assert all(address + nbytes <= a or a + n <= address for a, n in self.ranges.items())
            self.ranges[address] = nbytes
            self.calls.append(("register", address, threading.current_thread().name))

    def unregister(self, address):
        with self.lock:
            del self.ranges[address]
            self.calls.append(("unregister", address, threading.current_thread().name))

    def close(self):
        assert not self.ranges   # every registration undone first
        self.closed = True

    def within_one(self, address, nbytes):
        """Whether ``[address, address + nbytes)`` lies in one registered range."""
        with self.lock:
            return any(a <= address and address + nbytes <= a + n for a, n in self.ranges.items())

    def covers(self, address, nbytes):
        """Whether every byte of ``[address, address + nbytes)`` is registered."""
        with self.lock:
            at, end = address, address + nbytes
            for a, n in sorted(self.ranges.items()):
                if a <= at < a + n:
                    at = a + n
            return at >= end

    def device_address(self, cache):
        addr = self.ex._next
        self.ex._next += (cache.nbytes // 4096 + 16) * 4096
        self.ex.mem[addr] = cache.array      # device reads of this range see the host bytes
        self.ex.mapped = (cache, addr)
        return addr


class SyncExecutor:
    """Synchronous stand-in for CudaExecutor: device memory is host bytes at fake addresses."""

    def __init__(self):
        self.mem = {}
        self._next = 1 << 20
        self.copies = []          # (shard being copied, nbytes)
        self.busy = set()         # slots whose shard's kernels have not finished
        self.current = None
        self.pinned = None        # the PinnedCache made by pinned_cache
        self.mapped = None        # (cache, device address) of a mapped one

    def pinned_empty(self, nbytes):
        return np.empty(int(nbytes), np.uint8)

    def pinned_cache(self, nbytes, mapped=False, segment_bytes=4096):
        # segments of a page: the small stores of these tests span several
        # a slow registrar: the device side must wait for (or do) what it reads
        self.pinned = PinnedCache(nbytes, StandInRegistrar(self, delay=0.002), mapped, segment_bytes=segment_bytes)
        return self.pinned

    def device_alloc(self, nbytes):
        addr = self._next
        self._next += (int(nbytes) // ALIGN + 16) * ALIGN
        self.mem[addr] = np.full(int(nbytes), 0xAB, np.uint8)  # poison: unwritten bytes show
        return Address(addr)

    def device_free(self, mem):
        del self.mem[int(mem)]

    def locate(self, addr, nbytes):
        for base, buf in self.mem.items():
            if base <= addr and addr + nbytes <= base + len(buf):
                return buf[addr - base:addr - base + nbytes]
        raise AssertionError(f"address {addr} (+{nbytes}) outside every allocation")

    def begin_copy(self, slot):
        assert slot not in self.busy, "a slot was refilled before its kernels finished"
        self.current = slot

    def copy_array(self, host, dev_addr):
        at = None if self.pinned is None else self.pinned.offset(host)
        if at is not None:   # out of the pinned cache: one registered segment, registered now
            assert self.pinned.registrar.within_one(self.pinned.address + at, host.nbytes)
        self.locate(dev_addr, host.nbytes)[:] = host.view(np.uint8)
        self.copies.append(host.nbytes)

    def end_copy(self):
        if self.current is not None:
            self.busy.add(self.current)
        return ()

    def end_ahead(self):   # (the copy already landed: the next plan's unit finds it)
        self.end_copy()

    def join_ahead(self):
        return None

    def done(self, token):
        return True

    def wait(self, token):
        pass

    def begin_kernels(self):
        pass

    def shard_done(self, slot):
        self.busy.discard(slot)


def make_store(tmp_path, n=400, m=5000, shards=6, seed=3, weighted=True, compress=False):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    data = rng.integers(1, 9, m).astype(np.float64)
    path = tmp_path / f"g{shards}{'c' if compress else ''}.h5"
    gr.build_shards(sp.coo_matrix((data, (src, dst)), shape=(n, n)), path, num_shards=shards,
                    weighted=weighted, progress=False, compress=compress)
    return gr.open(path)


def device_view(ex, store, dev, name):
    dt = dataset_dtype(store, name)   # a compressed store's id parts too
    length = dev.lengths[name]
    return ex.locate(dev[name], length * dt.itemsize).view(dt)


def model_for(store, names, budget_kind, pinned="all", slot_bytes=0, static=10_000):
    """The engine's memory model for a stand-in footprint under one of the budget shapes (the
    GPU's: a compressed store's ids as their parts, which the kernels decode)."""
    fp = Footprint(static={"vertex state": static}, alignment=ALIGN, codec_parts=True)
    full = plan_memory(store, names, fp)
    regions = np.asarray(full.regions)
    if budget_kind == "all":
        budget = None
    elif budget_kind == "one-slot":
        budget = static + int(regions.max())
    elif budget_kind == "grouped":  # two slots grown to hold several consecutive shards
        budget = static + int(regions.sum()) - 1
        slot_bytes = int(regions.sum())
    else:  # two slots and about half the shards resident
        budget = static + 2 * int(regions.max()) + int(regions.sum()) // 2
    pinned_budget = None if pinned == "all" else int(regions.max())   # staging only
    if pinned == "staging3":   # three staging buffers, no cache
        pinned_budget = 3 * int(regions.max())
    if pinned == "all":
        pinned_budget = int(regions.sum()) + 3 * int(regions.max())
    return plan_memory(store, names, fp, budget, pinned_budget, slots=2, slot_bytes=slot_bytes)


def setup(store, spec, budget_kind, pinned="all", executor=None, copies=True, **caps):
    """Mover, stand-in executor, memory model, planner and ledger; ``caps``: Capabilities keywords
    beyond the GPU's dense batching and grouped copies."""
    names = needed_arrays(spec)
    model = model_for(store, names, budget_kind, pinned)
    ex = executor or SyncExecutor()
    ledger = Ledger(model)
    mover = Mover(store, model, ex, ledger, {})
    caps = Capabilities("cuda", **{"batching": Batching(BatchResident.DENSE, copies=copies), **caps})
    planner = Planner(spec, store, model, caps, policies_for(caps))
    return mover, ex, model, planner, ledger


HOLDING = ("resident", "load", "copy", "held")


def assert_held_before_refill(plan):
    """Every held unit runs before any copy into its slot (the copy would overwrite it)."""
    for k, u in enumerate(plan.units):
        if u.transfer == "held":
            assert all(v.slot != u.slot for v in plan.units[:k] if v.transfer == "copy")


def run_plan(mover, ex, plan, store=None, check=True):
    stats, seen = {}, []
    for unit, data in mover.deliver(plan, stats):
        assert [a.shard for a in data] == list(unit.shards)
        for arrays in data:
            seen.append(arrays.shard)
            info = store.shard_info(arrays.shard) if store is not None else None
            if info is not None and unit.transfer != "compact":   # the kernels' edge counts
                assert arrays.edges == {"in": info.num_in_edges, "out": info.num_out_edges}
            if check:
                for name in mover.names:
                    np.testing.assert_array_equal(device_view(ex, store, arrays, name),
                                                  store.read(arrays.shard, name))
        ex.shard_done(unit.slot if unit.transfer == "copy" else None)
    return stats, seen


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("budget_kind", ["all", "partial", "one-slot", "grouped"])
@pytest.mark.parametrize("pinned", ["all", "staging"])
def test_units_arrive_with_the_store_bytes(tmp_path, budget_kind, pinned, compress):
    store = make_store(tmp_path, compress=compress)
    spec = gr.algorithms.sssp.SSSP.spec   # in-edges + weights, out-edges
    mover, ex, model, planner, ledger = setup(store, spec, budget_kind, pinned)
    assert model.slots == {"all": 0, "partial": 2, "one-slot": 1, "grouped": 2}[budget_kind]
    # a compressed store's ids move as their parts (the kernels decode them)
    assert ("in/src.words" in mover.names) == compress and ("in/src" in mover.names) != compress
    sizes = np.diff(np.asarray(store.intervals))
    for it, active in enumerate([[0, 1, 5], [1, 4], [0, 5, 2, 3, 4], [0, 1, 2, 3, 4, 5]], 1):
        counts = np.zeros(store.num_shards, np.int64)
        counts[active] = sizes[active]
        plan = planner.plan(it, counts, False)
        stats, seen = run_plan(mover, ex, plan, store)
        assert sorted(seen) == sorted(active)            # inactive shards never appear
        moved = [u for u in plan.units if u.transfer in ("copy", "load")]
        assert stats["copied"] == sum(len(u.shards) for u in moved) and stats["copies"] == len(moved)
        exact = sum(store.shard_info(i).dataset_nbytes[n] for u in moved for i in u.shards for n in mover.names)
        # single shards move their arrays exactly; a grouped unit moves its pinned range (padding too)
        assert exact <= stats["bytes_h2d"] <= plan.bytes_copy
    for kind in ("device", "pinned"):
        assert ledger.peak[kind] <= ledger.limits[kind]


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("budget_kind", ["partial", "one-slot", "grouped"])
def test_a_copy_ahead_is_the_next_plans_first_copy(tmp_path, budget_kind, compress):
    """Dense plans copy the next plan's first unit after their own units (IterationPlan.ahead):
    that unit, marked early, finds its shards' bytes in its slot and moves nothing more; the
    plans move what plans without the copy ahead move."""
    store = make_store(tmp_path, compress=compress)
    spec = gr.algorithms.pagerank.PageRank.spec
    sizes = np.diff(np.asarray(store.intervals))
    moved = {}
    for ahead in (False, True):
        features = frozenset({Feature.COPY_AHEAD}) if ahead else frozenset()
        mover, ex, model, planner, _ = setup(store, spec, budget_kind, features=features)
        moved[ahead] = []
        for it in range(1, 6):
            plan = planner.plan(it, sizes, True)
            early = [u for u in plan.units if u.early]
            if ahead and it > 1:
                assert len(early) == 1 and early[0] == replace(last.ahead, early=True, balance=early[0].balance)
            else:
                assert not early
            assert (plan.ahead is not None) == ahead   # (plan 1 fills the cache before its end)
            before = len(ex.copies)
            stats, seen = run_plan(mover, ex, plan, store)   # every unit's bytes are the store's
            assert sorted(seen) == list(range(store.num_shards))
            moved[ahead].append(stats["bytes_h2d"])
            if plan.ahead is not None:   # copied after the units, counted by the next plan
                assert len(ex.copies) > before and mover._ahead[0] == plan.ahead.shards
            last = plan
    assert moved[True] == moved[False]


def test_store_shards_reread_pinned_ones_not(tmp_path):
    store = make_store(tmp_path)
    spec = gr.algorithms.bfs.BFS.spec
    for pinned, rereads in (("staging", True), ("all", False)):
        mover, ex, model, planner, _ = setup(store, spec, "one-slot", pinned)
        one = sum(store.shard_info(0).dataset_nbytes[n] for n in mover.names)
        counts = np.zeros(store.num_shards, np.int64)
        counts[0] = 1
        for k in range(3):
            stats, _ = run_plan(mover, ex, planner.plan(k + 1, counts, False), store)
            assert stats["bytes_h2d"] == one
            assert stats["bytes_read"] == (one if rereads or k == 0 else 0)


def test_resident_shards_move_once_and_are_shared(tmp_path):
    store = make_store(tmp_path)
    spec = gr.algorithms.bfs.BFS.spec
    mover, ex, model, planner, _ = setup(store, spec, "all")
    counts = np.diff(np.asarray(store.intervals))
    for it in range(3):
        run_plan(mover, ex, planner.plan(it + 1, counts, False), store)
    expect = sum(store.shard_info(i).dataset_nbytes[n] for i in range(store.num_shards) for n in mover.names)
    assert sum(ex.copies) == expect
    # a second mover of the session finds the data through the shared dict
    other = Mover(store, model, ex, Ledger(model), mover.shared)
    for i in range(store.num_shards):
        np.testing.assert_array_equal(device_view(ex, store, other.resident_arrays(i), "in/src"),
                                      store.read(i, "in/src"))


def shard_3_fails(store, monkeypatch):
    """Reads of shard 3 raise; the active vertices per shard of a plan that reads it."""
    real = store.read

    def failing(i, name, out=None):
        if i == 3:
            raise ShardStoreError("disk on fire", shard=3, dataset=name)
        return real(i, name, out=out)

    monkeypatch.setattr(store, "read", failing)
    counts = np.zeros(store.num_shards, np.int64)
    counts[[1, 2, 3, 4]] = 1
    return counts


def test_store_failure_in_the_reader_reaches_the_caller(tmp_path, monkeypatch):
    store = make_store(tmp_path)
    mover, ex, model, planner, _ = setup(store, gr.algorithms.pagerank.PageRank.spec, "one-slot", "staging")
    counts = shard_3_fails(store, monkeypatch)
    with pytest.raises(ShardStoreError, match="shard 3"):
        run_plan(mover, ex, planner.plan(1, counts, False), store)


@pytest.mark.parametrize("pinned", ["staging", "staging3"])
def test_a_failed_read_leaves_no_cycle_holding_the_staging_buffers(tmp_path, monkeypatch, pinned):
    """Once the caller drops a failed read's exception, and the mover is closed, its staging
    buffers are freed by reference counting, on the caller's thread (page-locked memory the
    cyclic collector frees on a worker thread is left to the process's exit): the read-ahead
    keeps no reference cycle through the exception, its futures or its traceback's frames."""
    import gc
    import weakref

    class Tracked(SyncExecutor):
        def pinned_empty(self, nbytes):
            arr = super().pinned_empty(nbytes)
            made.append(weakref.ref(arr))
            return arr
    made = []
    store = make_store(tmp_path)
    mover, ex, _, planner, _ = setup(store, gr.algorithms.pagerank.PageRank.spec, "one-slot", pinned,
                                     executor=Tracked())
    counts = shard_3_fails(store, monkeypatch)
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(ShardStoreError, match="shard 3") as caught:
            run_plan(mover, ex, planner.plan(1, counts, False), store)
        del caught   # (pytest.raises's own cycle: this frame and the exception)
        mover.close()
        del mover
        assert made and all(ref() is None for ref in made)
    finally:
        gc.enable()


def test_footprint_counts_the_static_buffers_and_tables(tmp_path):
    store = make_store(tmp_path)
    for cls, dense in ((gr.algorithms.pagerank.PageRank, True), (gr.algorithms.bfs.BFS, False)):
        fp = CudaExecutor.footprint(cls.spec, dense, CudaExecutor.make_setup(store))
        assert all(v % ALIGN == 0 and v > 0 for v in fp.static.values())
        assert ("shard tables" in fp.scratch) == dense
        assert fp.static["readback block"] >= 8 * (2 + store.num_shards)
    opts = CudaExecutor.memory_options(gr.algorithms.pagerank.PageRank.spec, CudaExecutor.make_setup(store))
    assert opts["slots"] == 2 and opts["slot_bytes"] > 0
    assert CudaExecutor.memory_options(gr.algorithms.bfs.BFS.spec, CudaExecutor.make_setup(store))["slots"] == 3
    with pytest.raises(gr.errors.UsageError, match="pinned_budget"):
        CudaExecutor.capabilities(CudaExecutor.make_setup(options={"host_cache": 0}))
    assert CudaExecutor.capabilities(CudaExecutor.make_setup(options={"deterministic": True})).forced.balance == "twc"
    with pytest.raises(gr.errors.UsageError, match="deterministic"):
        CudaExecutor.capabilities(CudaExecutor.make_setup(options={"deterministic": True, "load_balance": "merge"}))


def test_busy_overlap():
    copies = [(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]
    kernels = [(1.5, 3.5)]
    c, k, o = busy_overlap(copies, kernels)
    assert (c, k) == (3.0, 2.0)
    assert o == pytest.approx(1.0)  # 1.5-2.0 and 3.0-3.5


# ---------------------------------------------------------------- load balance
def test_strategy_choice():
    flat = loadbalance.degree_stats(np.full(1000, 16))
    hub = loadbalance.degree_stats(np.concatenate([np.full(10000, 10), [200000]]))
    assert loadbalance.choose(flat, 1.0) == "twc"
    assert loadbalance.choose(hub, 1.0) == "merge"
    assert loadbalance.choose(hub, 0.1) == "twc"            # sparse frontier: merge sweeps idle edges
    # in a launch over many shards the hub's block no longer outlasts the grid
    assert loadbalance.choose(hub, 1.0, launch_edges=hub.max_degree * 200) == "twc"
    assert loadbalance.choose(hub, 1.0, launch_edges=hub.max_degree * 50) == "merge"
    assert loadbalance.choose(hub, 1.0, merge_ok=False) == "twc"
    assert loadbalance.choose(flat, 1.0, "merge") == "merge"
    assert loadbalance.choose(loadbalance.degree_stats(np.zeros(0)), 1.0) == "twc"
    with pytest.raises(gr.errors.UsageError, match="load_balance"):
        loadbalance.check_strategy("fastest", True)
    with pytest.raises(gr.errors.UsageError, match="atomic"):
        loadbalance.check_strategy("merge", False)


def test_crowded_blocks_take_the_merge_split(tmp_path):
    """Rows of large degree side by side (a degree-ordered store's first shards) crowd TWC's
    first block: the merge split, though no single row is a hub; one hub among small rows keeps
    the hub rule's answer, and small graphs keep TWC."""
    from grstream.engine import balance
    from grstream.engine.planner import shard_facts
    sorted_rows = np.concatenate([np.full(1000, 1000), np.full(100_000, 3)])   # no row >= BLOCK_MIN
    crowded = loadbalance.degree_stats(sorted_rows)
    assert crowded.block_edges == 256 * 1000 and crowded.max_degree < loadbalance.BLOCK_MIN
    assert loadbalance.choose(crowded, 1.0) == "merge"
    assert loadbalance.choose(crowded, 0.1) == "twc"            # sparse frontier
    assert loadbalance.choose(crowded, 1.0, launch_edges=crowded.block_edges * 200) == "twc"
    spread = loadbalance.degree_stats(np.random.default_rng(1).permutation(sorted_rows))
    assert spread.block_edges < loadbalance.CROWDED_MIN and loadbalance.choose(spread, 1.0) == "twc"
    lone = loadbalance.degree_stats(np.concatenate([[200_000], np.full(10_000, 10)]))
    assert lone.block_edges < 2 * lone.max_degree and loadbalance.choose(lone, 1.0) == "merge"
    small = loadbalance.degree_stats(np.full(100, 50))   # one block, but a short walk
    assert loadbalance.choose(small, 1.0) == "twc"
    from grstream.backends.cuda.skeletons import BLOCK
    assert balance.GROUP_ROWS == BLOCK   # the groups are the TWC blocks' rows
    assert balance.group_max(np.arange(600), rows=256) == sum(range(256, 512))
    assert balance.group_max(np.zeros(0, np.int64)) == 0
    # the planner's facts carry the group maxima; the CUDA policy reads them
    src = np.repeat(np.arange(4), 300)
    gr.build_shards((src, np.arange(1200)), str(tmp_path / "g.h5"), num_shards=1, progress=False)
    store = gr.open(str(tmp_path / "g.h5"))
    facts = shard_facts(store, gr.algorithms.pagerank.PageRank.spec)
    assert facts[0].group_edges_of("in") == 256 and facts[0].max_degree_of("in") == 1
    policy = CudaExecutor.policies(CudaExecutor.make_setup()).balance
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(options={}))
    rows = balance.ShardFacts(0, 101_000, (("in", 1_300_000),), (("in", 1000),), (("in", 256 * 1000),))
    assert policy([rows], [101_000], gr.algorithms.pagerank.PageRank.spec, caps) == ("merge",)


# ---------------------------------------------------------------- availability
def test_missing_pycuda_is_named(monkeypatch, tmp_path):
    from grstream.backends import cuda
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    ok, reason = cuda.available()
    assert not ok and "PyCUDA" in reason
    with pytest.raises(DeviceError, match="PyCUDA"):
        cuda.require()
    store = make_store(tmp_path, n=50, m=200, shards=2, weighted=False)
    with pytest.raises(DeviceError, match="PyCUDA"):
        gr.run(gr.algorithms.bfs.BFS(), store, device="cuda")
    result = gr.run(gr.algorithms.bfs.BFS(), store, device="auto")
    assert result.info["backend"] == "cpu"


def test_the_planner_takes_the_cuda_policy():
    from grstream.engine import balance
    policy = CudaExecutor.policies(CudaExecutor.make_setup()).balance
    facts = [balance.ShardFacts(0, 10001, (("in", 300000),), (("in", 200000),)),
             balance.ShardFacts(1, 1000, (("in", 16000),), (("in", 16),))]
    pr = gr.algorithms.pagerank.PageRank.spec
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(options={}))
    assert policy(facts, [10001, 1000], pr, caps) == ("merge", "twc")
    assert policy(facts, [100, 1000], pr, caps) == ("twc", "twc")   # sparse frontier
    det = CudaExecutor.capabilities(CudaExecutor.make_setup(options={"deterministic": True}))
    assert det.forced.balance == "twc" and not det.has(Feature.ADAPTIVE_HOIST)
    assert policy(facts, [10001, 1000], pr, det) == ("twc", "twc")
    forced = CudaExecutor.capabilities(CudaExecutor.make_setup(options={"load_balance": "merge"}))
    assert policy(facts, [1, 1], pr, forced) == ("merge", "merge")


def test_the_policy_knows_when_the_merge_split_exists():
    """The planner's view of the merge split agrees with the generated module's."""
    from grstream.backends.cuda.compile import module_source
    from grstream.backends.cuda.loadbalance import merge_available
    from .test_codegen import PROGRAMS, NoAtomic
    for cls in PROGRAMS + [NoAtomic]:
        ks = module_source(cls.spec, np.int32, {p: np.float64 for p in cls.spec.edge_reads})
        assert merge_available(cls.spec) == ks.merge_ok, cls.__name__


class TokenExecutor(SyncExecutor):
    """Each copy returns its own token; records which tokens the mover waited for."""

    def __init__(self):
        super().__init__()
        self.issued, self.waited = [], set()

    def end_copy(self):
        super().end_copy()
        self.issued.append(object())
        return self.issued[-1]

    def done(self, token):
        return False   # copies "in flight" until waited for

    def wait(self, token):
        self.waited.add(id(token))


def test_failed_launch_closes_the_stream(tmp_path):
    """A launch raising mid-stream: the read-ahead thread ends and every copy is waited for before
    the exception leaves the loop (while the traceback still holds the loop's frame)."""
    store = make_store(tmp_path, shards=8)
    ex = TokenExecutor()
    mover, ex, model, planner, _ = setup(store, gr.algorithms.bfs.BFS.spec, "one-slot", "staging", ex)
    counts = np.ones(store.num_shards, np.int64)
    items = mover.deliver(planner.plan(1, counts, False), {})
    with pytest.raises(RuntimeError, match="launch failed") as info:
        try:
            for k, (unit, data) in enumerate(items):
                if k == 2:
                    raise RuntimeError("launch failed")
                ex.shard_done(unit.slot)
        finally:
            items.close()   # what the engine's Session does
    assert info.traceback
    assert not [t for t in threading.enumerate() if t.name == "grstream-read-ahead" and t.is_alive()]
    assert ex.issued and {id(t) for t in ex.issued} <= ex.waited


def test_static_buffers_count_each_buffer_once():
    from grstream.backends.cuda.buffers import static_buffers
    from grstream.backends.cuda.skeletons import AGG_BLOCKS
    for S in (1, 4, 64):
        b = static_buffers(1000, {"x": np.float64}, ["in_degree"], 8, 100, S, False, [8, 4])
        # the shard counts (active, then changed) live in the readback block only (once), after 3
        # counters and 2 aggregates
        assert b["readback block"] == 8 * (3 + 2 + 2 * S)
        assert b["intervals"] == 8 * (S + 1)
        assert [k for k, v in b.items() if "shard" in k or "count" in k] == []
        assert b["aggregate partials 0"] == b["aggregate partials 1"] == 8 * AGG_BLOCKS
        assert vertex_state_bytes(1000, {"x": np.float64}, ["in_degree"], 8, 100, S, False, [8, 4]) == \
            sum(-(-max(v, 1) // ALIGN) * ALIGN for v in b.values())
    grow = [vertex_state_bytes(1000, [np.float64], 0, 8, 100, S, False) for S in (32, 32 + 4096)]
    # intervals + readback (active and changed counts): three words per shard, not four
    assert grow[1] - grow[0] == 3 * 8 * 4096


def test_seed_ids_match_flatnonzero():
    from grstream.engine.contract import seed_ids
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 8, 9, 1000, 4099):
        for density in (0.0, 0.001, 0.05, 0.9):
            mask = rng.random(n) < density
            got = seed_ids(mask)
            np.testing.assert_array_equal(got, np.flatnonzero(mask))
            assert got.dtype == np.int64
        np.testing.assert_array_equal(seed_ids(np.broadcast_to(np.True_, (n,))), np.arange(n))


@pytest.mark.parametrize("budget_kind", ["partial", "one-slot", "grouped"])
@pytest.mark.parametrize("pinned", ["all", "staging"])
def test_push_units_copy_only_the_walked_edges(tmp_path, budget_kind, pinned):
    """A streamed push unit of SSSP moves the CSR and its weights (push_arrays), not the CSC:
    into the same slot layout (the budget is the pull one's), exactly those bytes; store reads
    through staging read only those too; resident loads still take every array."""
    import dataclasses
    from grstream.engine.schedule import push_arrays
    store = make_store(tmp_path)
    spec = gr.algorithms.sssp.SSSP.spec
    walked = push_arrays(spec)
    assert walked == ["out/indptr", "out/dst", "out/weight"]
    names = needed_arrays(spec, push=True)
    assert set(walked) < set(names)
    model = model_for(store, names, budget_kind, pinned)
    ex, ledger = SyncExecutor(), Ledger(model)
    mover = Mover(store, model, ex, ledger, {}, push_names=walked)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE, copies=True))
    planner = Planner(spec, store, model, caps, policies_for(caps))
    sizes = np.diff(np.asarray(store.intervals))
    for it in range(1, 4):
        plan = planner.plan(it, sizes, False)
        units = tuple(dataclasses.replace(u, direction="push") for u in plan.units)
        plan = dataclasses.replace(plan, units=units, direction="push", phases=("gather",))
        stats = {}
        for unit, data in mover.deliver(plan, stats):
            for arrays in data:
                moved = walked if unit.transfer == "copy" else names
                for name in moved:
                    np.testing.assert_array_equal(device_view(ex, store, arrays, name),
                                                  store.read(arrays.shard, name))
            ex.shard_done(unit.slot if unit.transfer == "copy" else None)
        copied = [i for u in plan.units if u.transfer == "copy" for i in u.shards]
        loaded = [i for u in plan.units if u.transfer == "load" for i in u.shards]
        assert copied
        info = store.shard_info
        expect = (sum(info(i).dataset_nbytes[n] for i in copied for n in walked)
                  + sum(info(i).dataset_nbytes[n] for i in loaded for n in names))
        assert stats["bytes_h2d"] == expect
        if pinned == "staging":   # nothing cached: every streamed push reads the walked arrays only
            assert stats["bytes_read"] == expect
    for kind in ("device", "pinned"):
        assert ledger.peak[kind] <= ledger.limits[kind]


def test_push_seeds_count_edges_on_the_device_states_push_degrees():
    """Pushes counts a seed's walked edges on DeviceState.push_degree, the one host copy of the
    push degree array (uploaded once for the kernels); the store's degrees are not read again."""
    from grstream.backends.cuda.pushes import Pushes

    class Cuda:
        def memset_d32_async(self, *args):
            pass

        copied = []

        def memcpy_htod_async(self, dst, host, stream):
            self.copied.append(np.array(host))

        def pagelocked_empty(self, shape, dtype):
            return np.empty(shape, dtype)

    class Dev:
        n, S, store = 10, 2, None
        intervals = np.array([0, 5, 10])
        cuda, ex = Cuda(), type("Ex", (), {"compute": None})
        pacc, chg, cq = 1, [2, 3], 4
        push_degree = np.arange(10, dtype=np.int64)
        ks = type("Ks", (), {"id_dtype": np.int32})
        launched = []

        def launch(self, name, *args):
            self.launched.append(name)

    ks = type("Ks", (), {"push_dirs": ("out",), "gather_props": ()})
    pushes = Pushes(Dev(), ks)
    pushes.seed(np.array([1, 7]), np.array([5, 5]))
    assert pushes.edges == 8 and list(pushes.changed) == [1, 1] and Dev.launched == ["mark_ids"]
    # the ids went from the page-locked buffer, as the kernels' id type
    (ids,) = Cuda.copied
    assert ids.dtype == np.int32 and list(ids) == [1, 7]
    pushes.seed(None, np.array([5, 5]))
    assert pushes.edges == 45 and list(pushes.changed) == [5, 5]


@pytest.mark.parametrize("budget_kind", ["partial", "one-slot", "grouped"])
def test_shards_still_in_a_slot_are_held_not_copied_again(tmp_path, budget_kind):
    """Transfer "held": a streamed shard that a slot still holds from an earlier plan of the run
    is not copied again; its arrays (read where the earlier copy left them) equal the store's,
    whatever the plans copied in between; a new run (seed) forgets what the slots hold."""
    store = make_store(tmp_path)
    spec = gr.algorithms.sssp.SSSP.spec
    mover, ex, model, planner, _ = setup(store, spec, budget_kind, transfers=HOLDING)
    sizes = np.diff(np.asarray(store.intervals))
    streamed = [i for i in range(store.num_shards) if i not in model.resident]
    held = 0
    rng = np.random.default_rng(5)
    for it in range(1, 12):
        active = sorted(rng.choice(store.num_shards, size=rng.integers(1, store.num_shards + 1), replace=False))
        counts = np.zeros(store.num_shards, np.int64)
        counts[active] = sizes[active]
        plan = planner.plan(it, counts, False)
        stats, seen = run_plan(mover, ex, plan, store)   # every unit's data equals the store's
        assert sorted(seen) == sorted(active)
        kinds = [u.transfer for u in plan.units]
        # a held unit needs no copy, keeps its slot and runs before any copy into that slot
        assert_held_before_refill(plan)
        for u in plan.units:
            if u.transfer == "held":
                assert u.nbytes == 0 and u.slot is not None
                assert plan.summary()["shard_modes"][str(u.shards[0])] == "held"
        moved = [u for u in plan.units if u.transfer in ("copy", "load")]
        assert stats["copies"] == len(moved)
        held += kinds.count("held")
    assert streamed and held > 0
    # the same active set twice: the shards the first plan copied last are held by the second
    counts = np.zeros(store.num_shards, np.int64)
    counts[streamed] = sizes[streamed]
    first = planner.plan(20, counts, False)
    run_plan(mover, ex, first, store)
    slots = {}   # what each slot holds after the first plan (held units keep theirs)
    for u in first.units:
        if u.transfer in ("copy", "held"):
            slots[u.slot] = u.shards
    again = planner.plan(21, counts, False)
    held_units = [u for u in again.units if u.transfer == "held"]
    assert {u.shards for u in held_units} == set(slots.values())   # a grouped copy: its shards
    assert held_units and again.bytes_copy < sum(model.regions[i] for i in streamed)
    run_plan(mover, ex, again, store)
    # a new run starts with nothing held
    planner.seed(np.zeros(store.num_shards, np.int64), seeded=False)
    assert all(u.transfer != "held" for u in planner.plan(1, counts, False).units)


def test_push_copies_are_held_for_push_plans_only(tmp_path):
    """A push copy moves only the push arrays: a later push plan may take the shard as held, a
    pull plan (which reads the CSC too) copies it again; a pull copy is held for both."""
    from grstream.engine.schedule import push_arrays
    store = make_store(tmp_path)
    spec = gr.algorithms.sssp.SSSP.spec
    model = model_for(store, needed_arrays(spec, push=True), "one-slot")
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE), transfers=HOLDING,
                        push=PushFacts(threshold=1.0))
    planner = Planner(spec, store, model, caps, policies_for(caps))
    sizes = np.diff(np.asarray(store.intervals))
    streamed = [i for i in range(store.num_shards) if i not in model.resident]
    one = np.zeros(store.num_shards, np.int64)
    one[streamed[0]] = sizes[streamed[0]]
    planner.push(1, one)
    assert [u.transfer for u in planner.push(2, one).units] == ["held"]
    assert [u.transfer for u in planner.plan(3, one, False).units] == ["copy"]
    assert [u.transfer for u in planner.push(4, one).units] == ["held"]
    assert [u.transfer for u in planner.plan(5, one, False).units] == ["held"]
    # why the pull plan copied again: a push copy lacks arrays a pull reads (the CSC)
    assert not set(needed_arrays(spec)) <= set(push_arrays(spec))


def test_executors_without_held_slots_always_copy(tmp_path):
    store = make_store(tmp_path)
    spec = gr.algorithms.sssp.SSSP.spec
    mover, ex, model, planner, _ = setup(store, spec, "one-slot")
    sizes = np.diff(np.asarray(store.intervals))
    for it in range(1, 4):
        assert "held" not in {u.transfer for u in planner.plan(it, sizes, False).units}


def test_hold_slots_is_an_executor_option():
    from grstream.backends.cuda.options import CudaOptions
    from grstream.errors import UsageError
    assert "hold_slots" in CudaOptions.names()
    assert "held" in CudaExecutor.capabilities(CudaExecutor.make_setup(options={})).transfers
    assert "held" not in CudaExecutor.capabilities(CudaExecutor.make_setup(options={"hold_slots": False})).transfers
    for bad in (0, "no", None):
        with pytest.raises(UsageError, match="hold_slots"):
            CudaOptions.of({"hold_slots": bad})


def test_dense_plans_keep_the_first_copys_slot_free(tmp_path):
    """Dense plans hold every slot but one: the first copy goes into a slot no held unit needs,
    so it starts with the iteration; each later copy into a held slot comes after its held unit."""
    store = make_store(tmp_path, shards=8)
    spec = gr.algorithms.pagerank.PageRank.spec
    mover, ex, model, planner, _ = setup(store, spec, "partial", copies=False, transfers=HOLDING)
    sizes = np.diff(np.asarray(store.intervals))
    assert model.slots == 2 and planner.dense
    held_seen = 0
    for it in range(1, 5):
        plan = planner.plan(it, sizes, True)
        run_plan(mover, ex, plan, store)
        copies = [u for u in plan.units if u.transfer == "copy"]
        held = [u for u in plan.units if u.transfer == "held"]
        assert copies and copies[0].slot not in {u.slot for u in held}
        assert len(held) <= model.slots - 1
        assert_held_before_refill(plan)
        held_seen += len(held)
    assert held_seen >= 3


def test_a_held_unit_without_the_copy_that_put_it_there_is_an_internal_error(tmp_path):
    from grstream.errors import InternalError
    store = make_store(tmp_path)
    mover, ex, model, planner, _ = setup(store, gr.algorithms.bfs.BFS.spec, "one-slot")
    with pytest.raises(InternalError, match="not in streaming slot"):
        mover.slot_arrays(0, 0)


@pytest.mark.parametrize("pinned", ["all", "staging3"])
def test_store_reads_of_several_units_run_at_once(tmp_path, monkeypatch, pinned):
    """Shards filling the pinned cache, and shards read through the staging buffers, are read
    on several threads at once; what arrives is the store's data, and the bytes read are the
    plan's store tier."""
    import time

    store = make_store(tmp_path)
    spec = gr.algorithms.pagerank.PageRank.spec
    mover, ex, model, planner, ledger = setup(store, spec, "one-slot", pinned)
    assert mover.read_threads > 1 and (model.staging == 3 or pinned == "all")
    inner, lock, now, most = store.read, threading.Lock(), [0], [0]

    def read(i, name, out=None):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.02)
        try:
            return inner(i, name, out=out)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(store, "read", read)
    counts = np.diff(np.asarray(store.intervals))
    for it in (1, 2):
        plan = planner.plan(it, counts, True)
        stats, seen = run_plan(mover, ex, plan, store)
        tiers = {t: b for t, _, b in plan.tiers}
        assert stats["bytes_read"] <= tiers["store"] == plan.bytes_store
        assert (stats["bytes_read"] == 0) == (tiers["store"] == 0)
        if pinned == "all" and it == 2:
            assert tiers["store"] == 0 and tiers["pinned"] == sum(model.regions)
    assert most[0] > 1
    for kind in ("device", "pinned"):
        assert ledger.peak[kind] <= ledger.limits[kind]


def new_threads(prefix, before):
    """Threads named ``prefix...`` that were not alive in ``before``: the store's process-wide
    read pool (grstream/store/parallel_reads.py, "grstream-read") and earlier tests' threads
    ending on their own are not the mover's."""
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t not in before]


def slowed_reads(tmp_path, monkeypatch, seconds=0.25):
    """A 12-shard store whose dataset reads each take ``seconds`` (their start times recorded),
    with a mover caching every shard: (store, mover, executor, planner, start times)."""
    import functools
    import time

    store = make_store(tmp_path, shards=12)
    mover, ex, _, planner, _ = setup(store, gr.algorithms.pagerank.PageRank.spec, "one-slot", "all")
    started = []

    @functools.wraps(store.read)
    def slow_read(i, name, out=None):
        started.append(time.perf_counter())
        time.sleep(seconds)
        return slow_read.__wrapped__(i, name, out=out)

    monkeypatch.setattr(store, "read", slow_read)
    return store, mover, ex, planner, started


def test_closing_with_reads_pending_cancels_them_and_refills_the_cache_later(tmp_path, monkeypatch):
    """A plan closed after its first unit (and the mover closed after it) does not wait for the
    read-ahead: reads not started are cancelled, a running one stops at its next dataset, no
    read thread remains; the cached shards whose reads were dropped are read again by the next
    plan, which delivers the store's bytes."""
    import time

    before = set(threading.enumerate())
    store, mover, ex, planner, started = slowed_reads(tmp_path, monkeypatch)
    inner = store.read.__wrapped__
    counts = np.diff(np.asarray(store.intervals))
    items = mover.deliver(planner.plan(1, counts, True), {})
    unit, _ = next(items)
    ex.shard_done(unit.slot if unit.transfer == "copy" else None)
    t0 = time.perf_counter()
    items.close()
    closed = time.perf_counter() - t0
    # the reads already running finish (one dataset each); no read starts once close began (but
    # one that passed its check just then), so the rest of the read-ahead (several units, each of
    # several datasets) is not waited for
    assert max(started) < t0 + 0.1 and closed < 0.4, (closed, max(started) - t0)
    assert len(started) < store.num_shards * len(mover.names)
    assert not new_threads("grstream-read-ahead", before)
    filled = set(mover.cache_filled)
    monkeypatch.setattr(store, "read", inner)
    stats, seen = run_plan(mover, ex, planner.plan(2, counts, True), store)   # checks the bytes
    assert sorted(seen) == list(range(store.num_shards))
    assert stats["bytes_read"] == sum(store.shard_info(i).dataset_nbytes[n] for i in range(store.num_shards)
                                      if i not in filled for n in mover.names)
    t0 = time.perf_counter()
    mover.close()
    assert time.perf_counter() - t0 < 0.2
    assert not new_threads("grstream-read", before)


def test_closing_the_mover_stops_a_plan_left_delivering(tmp_path, monkeypatch):
    """A mover closed while a plan's reads are still queued (its generator never closed) cancels
    them and stops the running ones before its pinned memory goes: close returns within one
    dataset's read and no read thread remains."""
    import time

    before = set(threading.enumerate())
    store, mover, ex, planner, started = slowed_reads(tmp_path, monkeypatch)
    items = mover.deliver(planner.plan(1, np.diff(np.asarray(store.intervals)), True), {})
    next(items)
    t0 = time.perf_counter()
    mover.close()
    assert max(started) < t0 + 0.1 and time.perf_counter() - t0 < 0.4
    deadline = time.perf_counter() + 1.0   # the read-ahead thread ends at its next check
    while time.perf_counter() < deadline and new_threads("grstream-read", before):
        time.sleep(0.01)
    assert not new_threads("grstream-read", before)
    items.close()


def test_lanes_and_changed_programs_hold_their_buffers(tmp_path):
    """Lanes hold every per-instance array once per lane (each copy aligned) and a table of the
    lanes' kernel arguments, and refuse compacted units; a gather_from "changed" program holds
    the changed-set pair even where push's buffers are not held."""
    from grstream.algorithms.pagerank_delta import DeltaPageRank
    from grstream.engine.capabilities import Feature
    store = make_store(tmp_path)
    spec, n = gr.algorithms.bfs.BFS.spec, store.num_vertices
    one = CudaExecutor.footprint(spec, False, CudaExecutor.make_setup(store))
    four = CudaExecutor.footprint(spec, False, CudaExecutor.make_setup(store, lanes=4))
    for name in ("cur level", "nxt level", "frontier 0", "frontier 1", "accumulator", "changed flags"):
        # (one's bytes are aligned already: four aligned copies, lane_runs.LaneRuns' strides)
        assert four.static[name] == 4 * one.static[name]
    args = CudaExecutor._buffers(store, spec, False)[0].translated.args_dtype.itemsize
    assert four.static["lane arguments"] == -(-4 * args // ALIGN) * ALIGN and "lane arguments" not in one.static
    assert "compact" not in CudaExecutor.capabilities(CudaExecutor.make_setup(store, lanes=4)).transfers
    assert "compact" in CudaExecutor.capabilities(CudaExecutor.make_setup(store)).transfers
    delta = CudaExecutor.footprint(DeltaPageRank.spec, False, CudaExecutor.make_setup(store))
    assert delta.static["changed 0"] == delta.static["changed 1"] == -(-4 * ((n + 31) // 32) // ALIGN) * ALIGN
    assert "push accumulator" not in delta.static and "changed 0" not in one.static
    assert CudaExecutor.capabilities(CudaExecutor.make_setup(store)).has(Feature.GATHER_CHANGED)


def test_a_lane_takes_its_own_parameters():
    from grstream.backends.cuda.lane_runs import one_lane
    from grstream.engine.lanes import lane_program as merged
    programs = [gr.algorithms.bfs.BFS(source=s) for s in (3, 5, 9)]
    lanes = merged(programs)
    assert [int(one_lane(lanes, k).source) for k in range(3)] == [3, 5, 9]
    assert type(one_lane(lanes, 1)) is gr.algorithms.bfs.BFS


class IterationWeighted(gr.algorithms.pagerank.PageRank):
    """PageRank whose messages read the iteration number: they change between iterations."""

    def gather_map(self, src, dst, edge):
        return src.rank / src.out_degree * (self.iteration + 1)


def test_the_next_dense_plans_first_passes_are_queued_only_where_they_cannot_change(tmp_path):
    """The hoisted messages and the fill of the next plan go behind a read back (phases
    VertexPhases._early_begin) for dense hoisted pulls whose messages read nothing that changes
    between iterations, on one executor of the whole graph, without lanes or push state."""
    from types import SimpleNamespace
    from grstream.backends.cuda.phases import VertexPhases
    store = make_store(tmp_path)
    n = int(store.num_vertices)
    sizes = np.diff(np.asarray(store.intervals))

    def ok(cls, span=None, lanes=None, push=False, **plan_changes):
        spec = cls.spec
        mover, ex, model, planner, _ = setup(store, spec, "partial")
        plan = replace(planner.plan(1, sizes, True), hoist=True, **plan_changes)
        executor = SimpleNamespace(spec=spec, lane_runs=lanes, pushes=SimpleNamespace(available=push),
                                   span=span or (0, n), setup_span=span, dev=SimpleNamespace(n=n))
        return VertexPhases._early_begin_ok(executor, plan)
    PageRank = gr.algorithms.pagerank.PageRank
    assert ok(PageRank)
    assert not ok(IterationWeighted)                   # messages that change every iteration
    assert not ok(PageRank, span=(0, n // 2))          # an MPI rank's vertices
    assert not ok(PageRank, lanes=object())
    assert not ok(PageRank, push=True)
    assert not ok(PageRank, dense=False)
    assert not ok(PageRank, seed=True)
    assert not ok(gr.algorithms.bfs.BFS)               # a frontier program's next plan may push


def test_busy_overlap_sweep_matches_every_pair():
    """The sweep over the two unions gives the overlap that summing over every pair of their
    intervals gives (spans overlapping, nested, touching, empty)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        spans = [[tuple(sorted(rng.uniform(0, 10, 2))) for _ in range(rng.integers(0, 12))] for _ in range(2)]
        c, k, o = busy_overlap(*spans)
        cu, ku = _union(spans[0]), _union(spans[1])
        pairs = sum(max(0.0, min(b, d) - max(a, c_)) for a, b in cu for c_, d in ku)
        assert o == pytest.approx(pairs) and c == pytest.approx(sum(b - a for a, b in cu))
    assert busy_overlap([(0.0, 1.0)], [(1.0, 2.0)]) == (1.0, 1.0, 0.0)


def test_read_back_reads_each_timing_event_once():
    """The per-mode times and the timeline of one read back share one reading of the events."""
    from types import SimpleNamespace
    from grstream.backends.cuda.streams import Streams
    from grstream.backends.cuda.transfer import ModeTimes
    from grstream.engine.backend import IterationStats
    read = []

    class Event:
        def __init__(self, t):
            self.t = t

        def time_since(self, origin):
            read.append(self)
            return (self.t - origin.t) * 1e3
    streams = Streams.__new__(Streams)
    streams.copy_spans = [(Event(0), Event(1)), (Event(0.5), Event(2))]
    streams.kernel_spans = [(Event(1), Event(3))]
    streams._pool, streams._slot_free, streams.ahead = [], {}, None
    streams._retired, streams._prev_copy = [], []
    origin = Event(0)
    times = streams.span_times(origin)
    st = IterationStats()
    ModeTimes().report(times, {"copy_spans": [("copy", 0, 2)], "modes": {"copy": 8}},
                       SimpleNamespace(take_stats=lambda: (0, 0.0)), st)
    assert streams.timeline(origin, times) == pytest.approx((2.0, 2.0, 1.0))
    assert len(read) == 6 and st.transfer_seconds == pytest.approx({"copy": 2.0})


def test_every_event_of_a_plan_goes_back_to_the_pool(monkeypatch):
    """After a plan's read back (``Streams.reset``) every event its copies and kernels recorded
    is in the pool, the events ending each unit's copies (which the next copies waited for)
    too: the next plans reuse them instead of making new ones."""
    import types
    from grstream.backends.cuda.streams import Streams
    made = []

    class Event:
        def __init__(self):
            made.append(self)

        def record(self, stream):
            pass

    class Stream:
        def wait_for_event(self, event):
            pass
    cuda = types.SimpleNamespace(Stream=Stream, Event=Event, memcpy_htod_async=lambda *a: None)
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=cuda))
    monkeypatch.setitem(sys.modules, "pycuda.driver", cuda)
    streams = Streams(num_streams=2)
    host = np.zeros(4, np.uint8)
    for plan in range(2):
        for k in range(3):
            streams.begin_copy(k % 2)
            streams.copy_array(host, 0)
            streams.copy_array(host, 8)
            streams.end_copy()
            streams.begin_kernels()
            streams.shard_done(k % 2)
        streams.reset()
        assert len(set(map(id, streams._pool))) == len(streams._pool) == len(made)
    assert len(made) == 3 * (2 * 2 + 2 + 2)   # (the second plan took every event from the pool)


def test_cached_shards_views_and_mapped_arrays_are_made_once(tmp_path):
    """A cached shard's views (copies out of the pinned cache) and its mapped arrays (zero-copy
    units) are made once and reused by every plan; close drops them with the buffers."""
    store = make_store(tmp_path)
    spec = gr.algorithms.bfs.BFS.spec
    model = model_for(store, needed_arrays(spec), "partial", "all")
    ex = SyncExecutor()
    mover = Mover(store, model, ex, Ledger(model), {}, mapped=True)
    i = next(iter(model.pinned_offsets))
    at = model.pinned_offsets[i]
    views = mover._views(i, mover.cache, at)
    assert mover._views(i, mover.cache, at) is views
    assert mover._views(i, mover.staging[0], 0) is not views   # another place, its own views
    arrays = mover.mapped_arrays(i)
    assert mover.mapped_arrays(i) is arrays and arrays.shard == i
    assert arrays["out/indptr"] == mover.cache_dev + at + model.offsets[i]["out/indptr"]
    mover.close()
    assert mover._made == {}
