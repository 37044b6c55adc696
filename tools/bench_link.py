"""Host<->device copy bandwidth: pinned vs pageable, H2D and D2H (needs PyCUDA and a GPU).

Usage: python3 tools/bench_link.py [--mib 1024] [--repeat 5]

Prints one table row per (direction, host memory kind) with the median GB/s over the repeats,
timed with CUDA events around the copy. The data movement engine is only as fast as the pinned
H2D row: every out-of-core iteration's floor is bytes / that figure.
"""
import argparse
import sys

import numpy as np


def measure(mib=1024, repeat=5):
    """Return a list of dicts {direction, host, bytes, gbps} measured on the current device."""
    import pycuda.autoinit  # noqa: F401  (creates the context)
    import pycuda.driver as cuda

    nbytes = mib << 20
    dev = cuda.mem_alloc(nbytes)
    pinned = cuda.pagelocked_empty(nbytes, np.uint8)
    pageable = np.empty(nbytes, np.uint8)
    # Real bytes, not zeros: an untouched pageable buffer is not even backed by pages yet.
    rng = np.random.default_rng(0)
    pinned[:] = rng.integers(0, 255, nbytes, dtype=np.uint8)
    pageable[:] = pinned
    stream = cuda.Stream()
    start, end = cuda.Event(), cuda.Event()
    rows = []
    for direction in ("h2d", "d2h"):
        for kind, host in (("pinned", pinned), ("pageable", pageable)):
            times = []
            for _ in range(repeat + 1):
                start.record(stream)
                if direction == "h2d":
                    if kind == "pinned":
                        cuda.memcpy_htod_async(dev, host, stream)
                    else:
                        cuda.memcpy_htod(dev, host)
                else:
                    if kind == "pinned":
                        cuda.memcpy_dtoh_async(host, dev, stream)
                    else:
                        cuda.memcpy_dtoh(host, dev)
                end.record(stream)
                end.synchronize()
                times.append(end.time_since(start) / 1e3)
            t = float(np.median(times[1:]))  # the first run pays for warm-up
            rows.append({"direction": direction, "host": kind, "bytes": nbytes, "gbps": nbytes / t / 1e9})
    dev.free()
    return rows


def pinned_h2d_gbps(mib=1024, repeat=5):
    """Median pinned host->device bandwidth in GB/s (the figure streaming is measured against)."""
    return next(r["gbps"] for r in measure(mib, repeat) if r["direction"] == "h2d" and r["host"] == "pinned")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=1024, help="transfer size in MiB")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    import pycuda.autoinit as ai
    print(f"device: {ai.device.name()}  transfer {args.mib} MiB, median of {args.repeat}")
    print(f"{'direction':<10}{'host':<10}{'GB/s':>8}")
    for r in measure(args.mib, args.repeat):
        print(f"{r['direction']:<10}{r['host']:<10}{r['gbps']:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
