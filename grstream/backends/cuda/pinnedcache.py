"""The GPU executor's pinned host cache: ordinary memory registered with the device in segments.

Allocating a cache of several GB page-locked (``cuMemHostAlloc``) stops the caller for as long as
the pages take to be allocated, zeroed and locked (about half a second a GiB), and freeing it as
much again. :class:`PinnedCache` instead maps the cache's bytes as one anonymous private mapping
(contiguous host addresses; transparent huge pages asked for) and registers them with the device
(``cuMemHostRegister``: locked, and with ``mapped`` readable by kernels in place) in segments of
``segment_bytes``, on a thread started with the cache: the executor's set-up and the first
iterations run meanwhile, and store reads may fill pages before or while they are registered
(only the device needs them registered). Whoever is about to use a range on the device (a copy
out of it, a zero-copy unit's kernels) calls :meth:`PinnedCache.ready`, which returns once the
range's segments are registered -- registering those not yet started on the caller's own thread.
:meth:`PinnedCache.close` unregisters and unmaps on a thread as well, so the caller goes on while
the memory goes back; a cache made afterwards first waits for such releases (two caches never
hold their memory at once), and so does the interpreter before it exits (the thread is not a
daemon).

With unified addressing a registered page's device address is its host address
(``CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM``), so the segments are as
contiguous on the device as on the host; a device without that attribute gets the cache
registered whole, as one segment, before :class:`PinnedCache` returns. A copy never spans two
registrations: :meth:`PinnedCache.pieces` cuts a range at the segment bounds.

The registrar does the driver calls (:class:`CudaRegistrar` through ctypes, which releases the
GIL during a call: PyCUDA's wrappers of ``cuMemHostRegister`` and ``cuMemHostAlloc`` keep it, so a
thread registering through them would stop the interpreter). Tests pass a stand-in with the same
methods.
"""
import ctypes
import mmap
import threading

import numpy as np

from ...errors import DeviceError

#: bytes registered with one driver call: a caller waits for at most one segment another thread
#: is registering (segment bounds are whole pages: a page is registered once)
SEGMENT_BYTES = 128 << 20
_TODO, _BUSY, _DONE = 0, 1, 2
#: caches being released on a thread (joined before another cache is made)
_releasing = []
_releasing_lock = threading.Lock()


def wait_for_releases():
    """Return once every cache closed so far has given its memory back."""
    with _releasing_lock:
        threads = list(_releasing)
    for thread in threads:
        thread.join()
    with _releasing_lock:
        _releasing[:] = [t for t in _releasing if t.is_alive()]


class PinnedCache:
    """``nbytes`` of host memory registered with the device in segments (module docstring).

    Parameters
    ----------
    nbytes : int
    registrar : object
        ``contiguous`` (bool: segments keep contiguous device addresses), ``register(address,
        nbytes, mapped)``, ``unregister(address)`` (any thread), ``device_address(cache)``,
        ``keeps_context`` (bool: its context lives until ``close()``, called once the memory
        is unregistered, so that the release may outlast the caller's own hold on it).
    mapped : bool
        Register so that kernels read the bytes in place; :attr:`device_address` is then their
        device address (else None).
    segment_bytes : int
    """

    def __init__(self, nbytes, registrar, mapped=False, segment_bytes=SEGMENT_BYTES):
        wait_for_releases()
        self.nbytes, self.registrar, self.mapped = int(nbytes), registrar, bool(mapped)
        self._map = mmap.mmap(-1, max(self.nbytes, 1), flags=mmap.MAP_PRIVATE)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            self._map.madvise(mmap.MADV_HUGEPAGE)
        self.array = np.frombuffer(self._map, np.uint8, count=self.nbytes)
        self.address = self.array.ctypes.data if self.nbytes else 0
        page = mmap.PAGESIZE
        step = max(int(segment_bytes) // page, 1) * page if registrar.contiguous else max(self.nbytes, 1)
        self.bounds = list(range(0, self.nbytes, step)) + [self.nbytes] if self.nbytes else [0]
        self._state = [_TODO] * (len(self.bounds) - 1)
        self._left = len(self._state)
        self._cond = threading.Condition()
        self._error = None
        self._closing = False
        self._releaser = None
        self._thread = None
        if not registrar.contiguous:   # one registration, whose device address is the driver's
            try:
                self.ready(0, self.nbytes)
            except BaseException:
                self.close(wait=True)
                raise
        elif self._left:
            self._thread = threading.Thread(target=self._register_all, name="grstream-pin", daemon=True)
            self._thread.start()
        self.device_address = registrar.device_address(self) if self.mapped else None

    # ------------------------------------------------------------------ registration
    def _register_all(self):
        for k in range(len(self._state)):
            if not self._claim(k):
                if self._closing or self._error is not None:
                    return
                continue
            if not self._register(k):
                return

    def _claim(self, k):
        """Take segment ``k`` to register (False: taken already, or the cache is closing)."""
        with self._cond:
            if self._state[k] != _TODO or self._closing or self._error is not None:
                return False
            self._state[k] = _BUSY
            return True

    def _register(self, k):
        lo, hi = self.bounds[k], self.bounds[k + 1]
        try:
            self.registrar.register(self.address + lo, hi - lo, self.mapped)
        except BaseException as exc:
            with self._cond:
                self._state[k] = _TODO
                self._error = exc
                self._cond.notify_all()
            return False
        with self._cond:
            self._state[k] = _DONE
            self._left -= 1
            self._cond.notify_all()
        return True

    def segments(self, lo, hi):
        """Indices of the segments holding bytes ``[lo, hi)``."""
        if hi <= lo:
            return range(0)
        first = int(np.searchsorted(self.bounds, lo, side="right")) - 1
        last = int(np.searchsorted(self.bounds, hi, side="left"))
        return range(max(first, 0), min(last, len(self._state)))

    def ready(self, lo, hi):
        """Return once bytes ``[lo, hi)`` are registered (the device may use them); a segment no
        thread has started is registered here. Raises :class:`DeviceError` if a registration
        failed."""
        if self._left == 0:
            return
        for k in self.segments(lo, hi):
            if self._claim(k):
                if not self._register(k):
                    break
                continue
            with self._cond:
                while self._state[k] != _DONE and self._error is None and not self._closing:
                    self._cond.wait()
        if self._error is not None:
            raise DeviceError(f"registering {self.nbytes} bytes of pinned host cache with the device "
                              f"failed: {self._error}") from self._error
        if self._closing:
            raise DeviceError("the pinned host cache is closed")

    @property
    def registered(self):
        """Whether every segment is registered."""
        return self._left == 0

    def pieces(self, lo, hi):
        """``[(a, b), ...]``: ``[lo, hi)`` cut at the segment bounds (one registration each)."""
        return [(max(lo, self.bounds[k]), min(hi, self.bounds[k + 1])) for k in self.segments(lo, hi)]

    def offset(self, view):
        """Byte offset of ``view`` (an array) in the cache, or None when it lies elsewhere."""
        if not self.nbytes or view.nbytes == 0:
            return None
        at = view.__array_interface__["data"][0] - self.address
        return at if 0 <= at and at + view.nbytes <= self.nbytes else None

    # ------------------------------------------------------------------ release
    def close(self, wait=False):
        """Give the memory back: registration stops, registered segments are unregistered and
        the mapping is unmapped on a thread (joined here with ``wait``, or where the registrar
        cannot keep its context alive until then; else by the next cache made, or the
        interpreter's exit). The caller has finished every device use of it."""
        wait = wait or not self.registrar.keeps_context
        if self._releaser is not None:
            if wait:
                self._releaser.join()
            return
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._releaser = threading.Thread(target=self._release, name="grstream-unpin", daemon=False)
        with _releasing_lock:
            _releasing.append(self._releaser)
        self._releaser.start()
        if wait:
            self._releaser.join()

    def _release(self):
        if self._thread is not None:
            self._thread.join()   # a segment being registered finishes first
        done = [k for k, s in enumerate(self._state) if s == _DONE]
        for k in done:
            try:
                self.registrar.unregister(self.address + self.bounds[k])
            except Exception:   # a context already gone took its registrations with it
                pass
        with self._cond:
            for k in done:
                self._state[k] = _TODO
            self._left += len(done)   # (ready and registered see it: nothing is registered now)
        self.registrar.close()
        self.array = None
        self._map = None   # unmapped once no view of it remains


# ---------------------------------------------------------------------- the CUDA driver's side
#: cuMemHostRegister's flags
_REGISTER_DEVICEMAP = 0x02
#: CUdevice_attribute
_CAN_USE_HOST_POINTER = 91


class CudaRegistrar:
    """``cuMemHostRegister`` / ``cuMemHostUnregister`` through ctypes (the GIL released), each
    call with the context current at construction pushed on the calling thread. When that
    context is the device's primary context (grstream's own, device.ensure_context) the
    registrar retains it until :meth:`close`: the executor's close may release its hold while
    the cache is still being unregistered.

    ``lib``: the driver library (``libcuda.so.1``; tests pass a stand-in)."""

    def __init__(self, lib=None):
        self.lib = lib if lib is not None else ctypes.CDLL("libcuda.so.1")
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise DeviceError("no CUDA context is current to register host memory with")
        self.ctx = ctx
        dev, flag = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(flag), _CAN_USE_HOST_POINTER, dev),
                    "cuDeviceGetAttribute")
        self.contiguous = bool(flag.value)
        self.device = dev
        self.keeps_context = self._retain_primary()

    def _retain_primary(self):
        flags, active, primary = ctypes.c_uint(), ctypes.c_int(), ctypes.c_void_p()
        if self.lib.cuDevicePrimaryCtxGetState(self.device, ctypes.byref(flags), ctypes.byref(active)) != 0 \
                or not active.value:
            return False
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(primary), self.device),
                    "cuDevicePrimaryCtxRetain")
        if primary.value == self.ctx.value:
            return True
        self.lib.cuDevicePrimaryCtxRelease_v2(self.device)   # a context of the caller's own
        return False

    def close(self):
        """Give back the primary context's retain (once every registration is undone)."""
        if self.keeps_context:
            self.keeps_context = False
            self.lib.cuDevicePrimaryCtxRelease_v2(self.device)

    def _check(self, status, call):
        if status != 0:
            raise DeviceError(f"{call} failed: CUDA error {status}")

    def _current(self, call, *args):
        """Run driver function ``call`` with this registrar's context current."""
        self._check(self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")
        try:
            self._check(getattr(self.lib, call)(*args), call)
        finally:
            popped = ctypes.c_void_p()
            self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))

    def register(self, address, nbytes, mapped):
        self._current("cuMemHostRegister_v2", ctypes.c_void_p(address), ctypes.c_size_t(nbytes),
                      ctypes.c_uint(_REGISTER_DEVICEMAP if mapped else 0))
        if mapped and self.contiguous:   # what the attribute promises: the host address
            dptr = self._device_pointer(address)
            if dptr != address:
                self.unregister(address)
                raise DeviceError(f"registered host memory at {address:#x} has device address {dptr:#x}")

    def _device_pointer(self, address):
        dptr = ctypes.c_uint64()
        self._current("cuMemHostGetDevicePointer_v2", ctypes.byref(dptr), ctypes.c_void_p(address),
                      ctypes.c_uint(0))
        return int(dptr.value)

    def unregister(self, address):
        self._current("cuMemHostUnregister", ctypes.c_void_p(address))

    def device_address(self, cache):
        return cache.address if self.contiguous else self._device_pointer(cache.address)
