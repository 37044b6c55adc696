"""The movement engine's scheduling, run with a synchronous stand-in executor (no GPU needed)."""
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import grstream as gr
from grstream.backends.cuda import loadbalance
from grstream.backends.cuda.movement import Mover, busy_overlap
from grstream.backends.cuda.schedule import (ALIGN, Residency, layout, plan_device, plan_host_cache,
                                             shard_region_bytes, vertex_state_bytes)
from grstream.engine.schedule import needed_arrays
from grstream.errors import DeviceError, MemoryBudgetError, ShardStoreError


class Address(int):
    """What device_alloc returns: an int address (PyCUDA's allocations convert with int())."""


class SyncExecutor:
    """Synchronous stand-in for CudaExecutor: device memory is host bytes at fake addresses."""

    def __init__(self):
        self.mem = {}
        self._next = 1 << 20
        self.copies = []          # (shard being copied, nbytes)
        self.busy = set()         # slots whose shard's kernels have not finished
        self.current = None

    def pinned_empty(self, nbytes):
        return np.empty(int(nbytes), np.uint8)

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
        self.locate(dev_addr, host.nbytes)[:] = host.view(np.uint8)
        self.copies.append(host.nbytes)

    def end_copy(self):
        if self.current is not None:
            self.busy.add(self.current)
        return ()

    def done(self, token):
        return True

    def wait(self, token):
        pass

    def begin_kernels(self):
        pass

    def shard_done(self, slot):
        self.busy.discard(slot)


def make_store(tmp_path, n=400, m=5000, shards=6, seed=3, weighted=True):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    data = rng.integers(1, 9, m).astype(np.float64)
    path = tmp_path / f"g{shards}.h5"
    gr.build_shards(sp.coo_matrix((data, (src, dst)), shape=(n, n)), path, num_shards=shards,
                    weighted=weighted, progress=False)
    return gr.open(path)


def device_view(ex, store, dev, name):
    dt = np.dtype(np.int64) if name.endswith("indptr") else (
        np.dtype(store.id_dtype) if name.split("/")[1] in ("src", "dst") else np.dtype(np.float64))
    length = dev.lengths[name]
    return ex.locate(dev[name], length * dt.itemsize).view(dt)


def mover_for(store, names, budget_kind, host_cached="all"):
    region = shard_region_bytes(store, names)
    vbytes = 10_000
    slot_bytes = 0
    if budget_kind == "all":
        budget = None
    elif budget_kind == "one-slot":
        budget = vbytes + int(region.max())
    elif budget_kind == "grouped":  # two slots grown to hold several consecutive shards
        budget = vbytes + int(region.sum()) - 1
        slot_bytes = int(region.sum())
    else:  # two slots and about half the shards resident
        budget = vbytes + 2 * int(region.max()) + int(region.sum()) // 2
    plan = plan_device(region, vbytes, budget, slot_bytes=slot_bytes)
    streamed = [i for i in range(store.num_shards) if i not in plan.cached]
    cached = streamed if host_cached == "all" else []
    ex = SyncExecutor()
    return Mover(store, names, plan, ex, host_cached=cached, staging=2), ex, plan


@pytest.mark.parametrize("budget_kind", ["all", "partial", "one-slot", "grouped"])
@pytest.mark.parametrize("host_cached", ["all", "none"])
def test_stream_delivers_the_store_bytes_and_skips_inactive(tmp_path, budget_kind, host_cached):
    store = make_store(tmp_path)
    names = needed_arrays(gr.algorithms.sssp.SSSP.spec)  # in-edges + weights, out-edges
    mover, ex, plan = mover_for(store, names, budget_kind, host_cached)
    assert plan.num_buffers == {"all": 0, "partial": 2, "one-slot": 1, "grouped": 2}[budget_kind]
    grouped = budget_kind == "grouped" and host_cached == "all"
    iterations = [[0, 1, 5], [1, 4], [], [0, 5, 2, 3, 4], [0, 1, 2, 3, 4, 5]]

    def nbytes(i):
        return sum(store.shard_info(i).dataset_nbytes[n] for n in names)

    copied_total, before = 0, set()
    for active in iterations:
        stats, seen = {}, []
        for dev in mover.stream(active, stats):
            seen.append(dev.shard)
            for name in names:
                np.testing.assert_array_equal(device_view(ex, store, dev, name), store.read(dev.shard, name))
        assert sorted(seen) == sorted(active)  # inactive shards never appear
        first = [i for i in active if i not in before]
        moved = [i for i in active if i not in plan.cached or i in first]
        assert stats["copied"] == len(moved)
        if grouped:  # one range per unit: the alignment padding between arrays travels too
            assert sum(nbytes(i) for i in moved) <= stats["bytes_h2d"] <= sum(mover.region[i] for i in moved)
        else:
            assert stats["bytes_h2d"] == sum(nbytes(i) for i in moved)
            assert stats["copies"] == len(moved)
        read = first if host_cached == "all" else moved
        assert stats["bytes_read"] == sum(nbytes(i) for i in read)
        copied_total += stats["bytes_h2d"]
        before |= set(active)
    assert copied_total == sum(ex.copies)
    if grouped:  # consecutive streamed shards of the last iteration share copies
        assert stats["copies"] < stats["copied"]
    if budget_kind == "all":  # in-memory: every shard crossed the link exactly once
        assert copied_total == sum(sum(store.shard_info(i).dataset_nbytes[n] for n in names)
                                   for i in range(store.num_shards))
    mover.close()
    assert ex.mem == {}


def test_streamed_shards_reread_without_host_cache(tmp_path):
    store = make_store(tmp_path)
    names = ["in/indptr", "in/src"]
    mover, ex, plan = mover_for(store, names, "one-slot", host_cached="none")
    one = sum(store.shard_info(0).dataset_nbytes[n] for n in names)
    for _ in range(3):
        stats = {}
        list(mover.stream([0], stats))
        assert stats["bytes_read"] == one and stats["bytes_h2d"] == one


def test_resident_shards_move_once(tmp_path):
    store = make_store(tmp_path)
    names = ["in/indptr", "in/src"]
    mover, ex, plan = mover_for(store, names, "all")
    for _ in range(3):
        list(mover.stream(range(store.num_shards)))
    expect = sum(sum(store.shard_info(i).dataset_nbytes[n] for n in names) for i in range(store.num_shards))
    assert sum(ex.copies) == expect


def test_store_failure_in_the_reader_reaches_the_caller(tmp_path, monkeypatch):
    store = make_store(tmp_path)
    mover, ex, plan = mover_for(store, ["in/indptr", "in/src"], "one-slot", host_cached="none")
    real = store.read

    def failing(i, name, out=None):
        if i == 3:
            raise ShardStoreError("disk on fire", shard=3, dataset=name)
        return real(i, name, out=out)

    monkeypatch.setattr(store, "read", failing)
    with pytest.raises(ShardStoreError, match="shard 3"):
        list(mover.stream([1, 2, 3, 4]))


# ---------------------------------------------------------------- planning
def test_layout_aligns_every_array():
    offsets, total = layout({"a": 10, "b": 0, "c": 300})
    assert offsets == {"a": 0, "b": ALIGN, "c": 2 * ALIGN}
    assert total == 2 * ALIGN + 512
    assert all(o % ALIGN == 0 for o in offsets.values())


def test_plan_device_modes_and_minimum():
    sizes = np.array([100, 300, 200, 300])
    plan = plan_device(sizes, 50, None)
    assert plan.all_cached and plan.num_buffers == 0
    plan = plan_device(sizes, 50, 50 + 900)
    assert plan.all_cached
    plan = plan_device(sizes, 50, 50 + 2 * 300 + 150)
    assert plan.num_buffers == 2 and plan.cached == [0]
    plan = plan_device(sizes, 50, 50 + 300)
    assert plan.num_buffers == 1 and plan.cached == []
    # three slots asked, room for two: two, not the single slot plan_memory would fall back to
    plan = plan_device(sizes, 50, 50 + 2 * 300 + 150, slots=3)
    assert plan.num_buffers == 2 and plan.cached == [0]
    plan = plan_device(np.append(sizes, 300), 50, 50 + 3 * 300 + 100, slots=3)
    assert plan.num_buffers == 3 and plan.cached == [0]
    with pytest.raises(MemoryBudgetError, match="350") as info:
        plan_device(sizes, 50, 349)
    assert info.value.minimum == 350


def test_vertex_state_counts_what_stays_resident():
    base = vertex_state_bytes(1000, [np.float64], 0, 8, 100, 4, False)
    assert vertex_state_bytes(1000, [np.float64, np.int64], 0, 8, 100, 4, False) >= base + 2 * 8000
    assert vertex_state_bytes(1000, [np.float64], 1, 8, 100, 4, False) >= base + 8000
    assert vertex_state_bytes(1000, [np.float64], 0, 8, 100, 4, True) >= base + 8000
    # a per-vertex accumulator (dense programs) instead of one interval's
    assert vertex_state_bytes(1000, [np.float64], 0, 8, 100, 4, False, acc_vertices=1000) >= base + 8 * 800


def test_plan_device_grows_slots_for_grouped_copies():
    sizes = np.full(10, 4 * ALIGN)
    one = 4 * ALIGN
    base = plan_device(sizes, 50, 50 + 6 * one, slots=2)
    assert base.buffer_bytes == one and len(base.cached) == 4
    # slots grow by at most half of what largest-shard slots leave: (6 - 2) shards / 2 / 2 slots
    grown = plan_device(sizes, 50, 50 + 6 * one, slots=2, slot_bytes=4 * one)
    assert grown.num_buffers == 2 and grown.buffer_bytes == 2 * one and len(grown.cached) == 2
    part = plan_device(sizes, 50, 50 + 6 * one, slots=2, slot_bytes=one + 2 * ALIGN)
    assert part.buffer_bytes == one + 2 * ALIGN and len(part.cached) == 3
    # no room left over, or everything resident: no growth
    assert plan_device(sizes, 50, 50 + 2 * one, slots=2, slot_bytes=5 * one).buffer_bytes == one
    assert plan_device(sizes, 50, None, slot_bytes=5 * one).all_cached


def test_residency_units_join_consecutive_streamed_shards():
    r = Residency([0], num_slots=2)
    units = r.units([0, 1, 2, 3, 5, 6], join=lambda unit, j: j == unit[-1] + 1 and len(unit) < 2)
    assert [[s.shard for s in u] for u in units] == [[0], [1, 2], [3], [5, 6]]
    assert [[s.slot for s in u] for u in units] == [[None], [0, 0], [1], [0, 0]]


def test_residency_interleaves_and_rotates_slots():
    r = Residency([0, 2], num_slots=2)
    steps = r.steps([0, 1, 2, 3, 4])
    assert [s.shard for s in steps] == [0, 1, 2, 3, 4]
    assert [s.slot for s in steps] == [None, 0, None, 1, 0]
    assert [s.copy for s in steps] == [True, True, True, True, True]
    again = r.steps([2, 4, 5])
    assert [(s.shard, s.copy) for s in again] == [(2, False), (4, True), (5, True)]
    assert r.steps([]) == []


def test_host_cache_limit():
    region = np.array([10, 20, 30, 40])
    assert plan_host_cache(region, [1, 2, 3], None) == [1, 2, 3]
    assert plan_host_cache(region, [1, 2, 3], 50) == [1, 2]
    assert plan_host_cache(region, [1, 2, 3], 0) == []


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
    the exception leaves the block (while the traceback still holds the block's frame)."""
    import threading
    store = make_store(tmp_path, shards=8)
    names = needed_arrays(gr.algorithms.bfs.BFS.spec)
    region = shard_region_bytes(store, names)
    plan = plan_device(region, 10_000, 10_000 + 2 * int(region.max()))
    ex = TokenExecutor()
    mover = Mover(store, names, plan, ex, host_cached=[], staging=2)
    with pytest.raises(RuntimeError, match="launch failed") as info:
        with mover.streaming(range(8)) as delivered:
            for k, dev in enumerate(delivered):
                if k == 2:
                    raise RuntimeError("launch failed")
    assert info.traceback  # the frames (and a suspended generator in them) are still referenced
    assert not [t for t in threading.enumerate() if t.name == "grstream-cuda-readahead"]
    assert ex.issued and {id(t) for t in ex.issued} <= ex.waited


def test_static_buffers_count_each_buffer_once():
    from grstream.backends.cuda.schedule import static_buffers
    from grstream.backends.cuda.skeletons import AGG_BLOCKS
    for S in (1, 4, 64):
        b = static_buffers(1000, {"x": np.float64}, ["in_degree"], 8, 100, S, False, [8, 4])
        # the shard counts live in the readback block only (once), after 2 counters and 2 aggregates
        assert b["readback block"] == 8 * (2 + 2 + S)
        assert b["intervals"] == 8 * (S + 1)
        assert [k for k, v in b.items() if "shard" in k or "count" in k] == []
        assert b["aggregate partials 0"] == b["aggregate partials 1"] == 8 * AGG_BLOCKS
        assert vertex_state_bytes(1000, {"x": np.float64}, ["in_degree"], 8, 100, S, False, [8, 4]) == \
            sum(-(-max(v, 1) // ALIGN) * ALIGN for v in b.values())
    grow = [vertex_state_bytes(1000, [np.float64], 0, 8, 100, S, False) for S in (32, 32 + 4096)]
    assert grow[1] - grow[0] == 2 * 8 * 4096   # intervals + readback: twice per shard, not three times
