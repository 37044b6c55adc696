"""The pinned host cache registered in segments on a thread (no GPU: stand-in registrars, and a
stand-in of the driver library for the ctypes side)."""
import mmap
import threading
import time

import numpy as np
import pytest

from grstream.backends.cuda import pinnedcache
from grstream.backends.cuda.movement import Mover
from grstream.backends.cuda.pinnedcache import CudaRegistrar, PinnedCache, wait_for_releases
from grstream.engine.memory import Ledger
from grstream.engine.schedule import needed_arrays
from grstream.errors import DeviceError
from grstream.algorithms.bfs import BFS

from .test_movement import StandInRegistrar, SyncExecutor, make_store, model_for

PAGE = mmap.PAGESIZE


class GatedRegistrar(StandInRegistrar):
    """Registrations off the main thread wait for ``gate``; unregistrations for ``unpin``."""

    def __init__(self, gate=None, unpin=None, fail_at=None):
        super().__init__()
        self.gate, self.unpin, self.fail_at = gate, unpin, fail_at

    def register(self, address, nbytes, mapped):
        if self.gate is not None and threading.current_thread() is not threading.main_thread():
            self.gate.wait(10)
        if self.fail_at is not None and address == self.fail_at:
            raise OSError("cannot lock the pages")
        super().register(address, nbytes, mapped)

    def unregister(self, address):
        if self.unpin is not None:
            self.unpin.wait(10)
        super().unregister(address)


def test_segments_are_whole_pages_and_hold_the_bytes_written():
    reg = StandInRegistrar()
    cache = PinnedCache(10 * PAGE + 123, reg, segment_bytes=3 * PAGE + 5)
    try:
        assert cache.bounds == [0, 3 * PAGE, 6 * PAGE, 9 * PAGE, 10 * PAGE + 123]
        assert cache.address % PAGE == 0 and cache.array.nbytes == 10 * PAGE + 123
        data = np.random.default_rng(0).integers(0, 256, cache.nbytes, dtype=np.uint8)
        cache.array[:] = data
        cache.ready(0, cache.nbytes)
        assert cache.registered
        assert sorted(reg.ranges.items()) == [(cache.address + a, b - a)
                                              for a, b in zip(cache.bounds, cache.bounds[1:])]
        # a range cut at the segment bounds: the pieces are the range, each in one registration
        for lo, hi in [(0, 1), (5, 3 * PAGE), (3 * PAGE - 1, 3 * PAGE + 1), (100, cache.nbytes)]:
            pieces = cache.pieces(lo, hi)
            assert pieces[0][0] == lo and pieces[-1][1] == hi
            assert all(b == c for (_, b), (c, _) in zip(pieces, pieces[1:]))
            assert all(reg.within_one(cache.address + a, b - a) for a, b in pieces)
            assert np.array_equal(np.concatenate([cache.array[a:b] for a, b in pieces]), data[lo:hi])
        assert cache.offset(cache.array[7:19].view(np.uint8)) == 7
        assert cache.offset(np.zeros(4, np.uint8)) is None
    finally:
        cache.close(wait=True)
    assert reg.ranges == {}


def test_a_range_needed_before_the_thread_reached_it_is_registered_by_the_caller():
    gate = threading.Event()
    reg = GatedRegistrar(gate=gate)
    cache = PinnedCache(8 * PAGE, reg, segment_bytes=PAGE)
    try:
        cache.ready(5 * PAGE, 7 * PAGE)   # the thread waits at segment 0: the caller does 5 and 6
        assert [(a - cache.address) // PAGE for _, a, who in reg.calls if who == "MainThread"] == [5, 6]
        assert not cache.registered
        gate.set()
        cache.ready(0, cache.nbytes)
        assert cache.registered and len(reg.ranges) == 8   # each segment registered once
    finally:
        gate.set()
        cache.close(wait=True)


def test_close_does_not_wait_for_the_memory_to_go_back():
    unpin = threading.Event()
    reg = GatedRegistrar(unpin=unpin)
    cache = PinnedCache(4 * PAGE, reg, segment_bytes=PAGE)
    cache.ready(0, cache.nbytes)
    t0 = time.perf_counter()
    cache.close()
    assert time.perf_counter() - t0 < 1.0 and len(reg.ranges) == 4   # still registered
    unpin.set()
    wait_for_releases()   # what the next cache made does first
    assert reg.ranges == {} and cache.array is None
    assert not cache.registered
    with pytest.raises(DeviceError, match="closed"):   # a use after close: nothing is registered
        cache.ready(0, PAGE)
    assert all(who == "grstream-unpin" for kind, _, who in reg.calls if kind == "unregister")


def test_the_next_cache_waits_until_a_closed_one_gave_its_memory_back():
    unpin = threading.Event()
    old = GatedRegistrar(unpin=unpin)
    cache = PinnedCache(2 * PAGE, old, segment_bytes=PAGE)
    cache.ready(0, cache.nbytes)
    cache.close()
    threading.Timer(0.2, unpin.set).start()
    t0 = time.perf_counter()
    PinnedCache(PAGE, StandInRegistrar()).close(wait=True)
    assert time.perf_counter() - t0 >= 0.15 and old.ranges == {}


def test_a_failed_registration_is_raised_where_the_range_is_needed():
    gate = threading.Event()
    reg = GatedRegistrar(gate=gate)   # the thread waits at segment 0
    cache = PinnedCache(4 * PAGE, reg, segment_bytes=PAGE)
    try:
        reg.fail_at = cache.address + 2 * PAGE
        with pytest.raises(DeviceError, match="cannot lock the pages"):
            cache.ready(2 * PAGE, 3 * PAGE)
        gate.set()
        with pytest.raises(DeviceError):
            cache.ready(0, cache.nbytes)
    finally:
        gate.set()
        cache.close(wait=True)
    assert reg.ranges == {}   # what was registered went back


def test_without_contiguous_device_addresses_the_cache_is_one_registration():
    reg = StandInRegistrar(SyncExecutor())
    reg.contiguous = False
    cache = PinnedCache(5 * PAGE + 1, reg, mapped=True, segment_bytes=PAGE)
    try:
        assert cache.registered and cache.bounds == [0, cache.nbytes]
        assert reg.ranges == {cache.address: cache.nbytes} and cache.device_address is not None
    finally:
        cache.close(wait=True)


def test_the_mover_closes_without_waiting_for_the_cache_to_be_unpinned(tmp_path):
    store = make_store(tmp_path)
    model = model_for(store, needed_arrays(BFS.spec), "partial", "all")
    assert model.pinned_cache_bytes > 0
    unpin = threading.Event()

    class Ex(SyncExecutor):
        def pinned_cache(self, nbytes, mapped=False, segment_bytes=PAGE):
            self.pinned = PinnedCache(nbytes, GatedRegistrar(unpin=unpin), mapped, segment_bytes)
            return self.pinned

    ex, ledger = Ex(), Ledger(model)
    mover = Mover(store, model, ex, ledger, {})
    cache = ex.pinned
    cache.ready(0, cache.nbytes)
    t0 = time.perf_counter()
    mover.close()
    assert time.perf_counter() - t0 < 1.0 and ledger.held["pinned"] == 0
    assert cache.registrar.ranges   # still going back on its thread
    unpin.set()
    wait_for_releases()
    assert cache.registrar.ranges == {}


class FakeDriver:
    """What CudaRegistrar calls of libcuda, recording the context stack of the calling thread."""

    def __init__(self, host_pointer=1, primary=77):
        self.host_pointer, self.primary = host_pointer, primary
        self.stack = threading.local()
        self.calls = []
        self.status = 0
        self.retains = 0

    def _stack(self):
        if not hasattr(self.stack, "s"):
            self.stack.s = [77] if threading.current_thread() is threading.main_thread() else []
        return self.stack.s

    def cuCtxGetCurrent(self, out):
        s = self._stack()
        out._obj.value = s[-1] if s else None
        return 0

    def cuCtxGetDevice(self, out):
        out._obj.value = 0
        return 0

    def cuDeviceGetAttribute(self, out, attribute, device):
        assert attribute == pinnedcache._CAN_USE_HOST_POINTER
        out._obj.value = self.host_pointer
        return 0

    def cuDevicePrimaryCtxGetState(self, device, flags, active):
        active._obj.value = 1
        return 0

    def cuDevicePrimaryCtxRetain(self, out, device):
        self.retains += 1
        out._obj.value = self.primary
        return 0

    def cuDevicePrimaryCtxRelease_v2(self, device):
        self.retains -= 1
        return 0

    def cuCtxPushCurrent_v2(self, ctx):
        self._stack().append(ctx.value)
        return 0

    def cuCtxPopCurrent_v2(self, out):
        out._obj.value = self._stack().pop()
        return 0

    def cuMemHostRegister_v2(self, address, nbytes, flags):
        self.calls.append(("register", address.value, nbytes.value, flags.value, list(self._stack())))
        return self.status

    def cuMemHostUnregister(self, address):
        self.calls.append(("unregister", address.value, list(self._stack())))
        return 0

    def cuMemHostGetDevicePointer_v2(self, out, address, flags):
        out._obj.value = address.value + (0 if self.host_pointer else 1 << 40)
        return 0


def test_the_ctypes_registrar_calls_the_driver_with_the_context_current_on_each_thread():
    lib = FakeDriver()
    reg = CudaRegistrar(lib)
    assert reg.contiguous and reg.ctx.value == 77
    assert reg.keeps_context and lib.retains == 1   # the primary context, kept while releasing
    cache = PinnedCache(3 * PAGE, reg, mapped=True, segment_bytes=PAGE)
    cache.ready(0, cache.nbytes)
    assert cache.device_address == cache.address   # unified addressing: the host address
    cache.close(wait=True)
    assert lib.retains == 0
    registers = [c for c in lib.calls if c[0] == "register"]
    assert sorted(c[1] for c in registers) == [cache.address + k * PAGE for k in range(3)]
    assert all(c[2] == PAGE and c[3] == 2 and c[4][-1] == 77 for c in registers)   # DEVICEMAP
    assert sorted(c[1] for c in lib.calls if c[0] == "unregister") == sorted(c[1] for c in registers)
    assert all(c[-1][-1] == 77 for c in lib.calls)
    assert lib._stack() == [77]   # pushes and pops balanced on this thread

    # a context of the caller's own (not the primary one): not retained, released in close
    lib = FakeDriver(host_pointer=0, primary=55)
    reg = CudaRegistrar(lib)
    assert not reg.keeps_context and lib.retains == 0
    cache = PinnedCache(3 * PAGE, reg, segment_bytes=PAGE, mapped=False)
    assert not reg.contiguous and cache.registered and cache.device_address is None
    assert [c[2:4] for c in lib.calls] == [(3 * PAGE, 0)]
    cache.close()
    assert [c[0] for c in lib.calls] == ["register", "unregister"]   # done before close returned
    cache = PinnedCache(PAGE, CudaRegistrar(lib), mapped=True)
    assert cache.device_address == cache.address + (1 << 40)
    cache.close(wait=True)

    # a device that promised host addresses but gives others: refused, nothing left registered
    lib = FakeDriver()
    lib.cuMemHostGetDevicePointer_v2 = lambda out, address, flags: setattr(out._obj, "value", 5) or 0
    cache = PinnedCache(PAGE, CudaRegistrar(lib), mapped=True)
    with pytest.raises(DeviceError, match="has device address 0x5"):
        cache.ready(0, PAGE)
    cache.close(wait=True)
    assert [c[0] for c in lib.calls] == ["register", "unregister"] and lib.retains == 0

    lib = FakeDriver(host_pointer=0, primary=55)
    lib.status = 2   # CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(DeviceError, match="cuMemHostRegister_v2 failed: CUDA error 2"):
        PinnedCache(PAGE, CudaRegistrar(lib))
    assert lib._stack() == [77] and lib.retains == 0


def test_no_context_current_is_a_device_error():
    lib = FakeDriver()
    lib.stack.s = []
    with pytest.raises(DeviceError, match="no CUDA context"):
        CudaRegistrar(lib)
