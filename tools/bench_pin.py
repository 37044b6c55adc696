"""Pinning host memory on the GPU machine: what a pinned host cache of N GiB costs to make and to
give back, by PyCUDA's ``pagelocked_empty`` (``cuMemHostAlloc``, mapped) against the engine's
:class:`~grstream.backends.cuda.pinnedcache.PinnedCache` (an anonymous mapping registered in
segments by ``cuMemHostRegister``): on the caller's thread alone, with its registering thread
(``ready`` of the whole range: the thread and the caller register segments at once), and after
the pages were written (a cache filled by reads before it is registered).

Usage (on the GPU machine): python3 tools/bench_pin.py --gib 2 [--json out.json]
"""
import argparse
import json
import mmap
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from grstream.backends.cuda.device import ensure_context, release_context  # noqa: E402
from grstream.backends.cuda.pinnedcache import SEGMENT_BYTES, CudaRegistrar, PinnedCache  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 3)


def mapping(nbytes):
    mem = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    mem.madvise(mmap.MADV_HUGEPAGE)
    return mem, np.frombuffer(mem, np.uint8)


def sequential(out, name, nbytes, write):
    """Segments registered one after another on this thread (the pages written first or not)."""
    mem, arr = mapping(nbytes)
    if write:
        _, out["write_pages_s"] = timed(lambda: arr.fill(1))
    reg, base, starts = CudaRegistrar(), arr.ctypes.data, range(0, nbytes, SEGMENT_BYTES)
    _, out[f"{name}_s"] = timed(lambda: [reg.register(base + lo, min(SEGMENT_BYTES, nbytes - lo), True)
                                         for lo in starts])
    _, out[f"{name}_unregister_s"] = timed(lambda: [reg.unregister(base + lo) for lo in starts])
    reg.close()
    arr = None   # the mapping unmaps once no view of it remains
    _, out[f"{name}_unmap_s"] = timed(mem.close)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    nbytes = int(args.gib * 2**30)
    cuda = ensure_context()
    out = {"gib": args.gib, "segment_bytes": SEGMENT_BYTES}
    try:
        host, out["alloc_s"] = timed(lambda: cuda.pagelocked_empty(
            nbytes, np.uint8, mem_flags=cuda.host_alloc_flags.DEVICEMAP))
        _, out["alloc_free_s"] = timed(host.base.free)
        sequential(out, "register_one_thread", nbytes, write=False)
        sequential(out, "register_written", nbytes, write=True)
        t0 = time.perf_counter()
        cache = PinnedCache(nbytes, CudaRegistrar(), mapped=True)
        cache.ready(0, nbytes)   # its thread and this one register at once
        out["register_threaded_s"] = round(time.perf_counter() - t0, 3)
        _, out["close_caller_s"] = timed(cache.close)
        _, out["close_release_s"] = timed(lambda: cache.close(wait=True))
    finally:
        release_context()
    print(json.dumps(out))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
