#!/usr/bin/env python
"""Weighted against unweighted shard builds of the same RMAT graphs, in one run.

    python tools/bench_weighted_build.py [--scales 20,21] [--runs 3] [--memory-limit 512M]
                                         [--baseline DIR] [--pause SECONDS] [--random-weights]

For each scale, ``grstream generate rmat --weights`` writes one ``(m, 3)`` float64 ``.npy``; the
unweighted build reads that same file with ``weighted=False`` (the weights column is dropped
at read), so the two builds differ only in carrying the weights. Each build runs in its own
process: time is ``build_shards`` alone (read + partition + CSR + CSC + checksums + write +
fsync), with the CPU seconds of all its threads beside it (less disturbed than wall time by
other processes on the cores); peak RSS is the process's VmHWM (interpreter and imports
included, about 60 MiB). The
runs are interleaved (unweighted, weighted, next scale, ...), so a burst of load from other
processes hits both alike; the ratio is taken per run (weighted seconds / unweighted seconds)
and its median reported with the median seconds. ``--memory-limit`` adds the external build at
that limit as a mode of its own. ``--baseline DIR`` also runs every build with grstream imported
from DIR (another checkout, e.g. ``git worktree add /tmp/base main``), interleaved with this
one's, for before/after figures taken under the same load. The last line names numpy's sort
speed: ``NPY_DISABLE_CPU_FEATURES`` in the environment reaches every build.

``--pause SECONDS`` waits that long before every build. On a VM that hands free memory back
to its host (free page reporting, about every 2 s), a page taken again after that costs
about 2.2 s per GB to fault in against 0.12 s for one freed a moment before, so without a
pause a build runs faster or slower depending on what the build before it freed (and how
long ago); with a pause of 3 s or more every build starts from the same state, all of its
memory and page cache faulted in afresh.

``--random-weights`` replaces the generator's integer weights (1..255, which the external build's
runs hold as float16) with uniform random float64 ones, which need all 8 bytes there.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, resource, sys, time
import grstream
from grstream.partition import build_shards
assert grstream.__file__.startswith(os.environ["PYTHONPATH"]), grstream.__file__
path, out, weighted, limit = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
if os.path.exists(out):
    os.unlink(out)          # every build writes a fresh file
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = usage.ru_utime + usage.ru_stime
start = time.perf_counter()
build_shards(path, out, weighted=weighted, progress=False,
             memory_limit=None if limit == "-" else int(limit))
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
os.unlink(out)
print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime - cpu0,
                  "peak": usage.ru_maxrss * 1024}))
"""


#: the checkout this tool belongs to: the grstream its "this" runs import
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_once(path, out, weighted, limit, code=None, pause=0.0):
    if pause:
        time.sleep(pause)
    # run in the output's folder: ``python -c`` puts the working directory first on sys.path,
    # which must not be a checkout other than the one measured
    env = dict(os.environ, PYTHONPATH=code or HERE)
    proc = subprocess.run([sys.executable, "-c", CHILD, path, out, "1" if weighted else "0",
                           limit], capture_output=True, text=True, check=True, env=env,
                          cwd=os.path.dirname(out))
    return json.loads(proc.stdout)


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines()
                     if line.startswith("Model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} cores"


def sort_speed():
    """numpy's version and its ``np.sort`` of 2**20 random uint64 in ms (best of 3): the
    unweighted build's sorts run at this speed, which numpy's SIMD dispatch decides (numpy
    2.4 sorts with AVX2 at about 12 ms, without SIMD at about 65 ms on AMD EPYC)."""
    import numpy as np
    from grstream.partition.weighted_keys import sort_is_fast, sort_seconds
    keys = np.random.default_rng(0).integers(0, 1 << 62, 1 << 20).astype(np.uint64)
    best = sort_seconds(keys)
    return (f"numpy {np.__version__}, np.sort of 2^20 uint64 {best * 1e3:.1f} ms (external "
            f"weighted shards: {'one sort' if sort_is_fast() else 'block sort'})")


RANDOMISE = r"""
import sys, numpy as np
edges = np.load(sys.argv[1], mmap_mode="r+")
edges[:, 2] = np.random.default_rng(int(sys.argv[2])).random(len(edges))
edges.flush()
"""


def _randomise_weights(path, seed):
    # in a process of its own: Linux keeps a process's peak RSS across fork and exec, so
    # memory touched here would show as every build's peak
    subprocess.run([sys.executable, "-c", RANDOMISE, path, str(seed)], check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="20,21")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-limit", default=None,
                        help="also measure the external build at this limit (e.g. 512M)")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds to wait before every build (3: each starts cold)")
    parser.add_argument("--random-weights", action="store_true",
                        help="uniform random float64 weights instead of integers 1..255")
    parser.add_argument("--baseline", default=None,
                        help="a grstream checkout to measure alongside (PYTHONPATH for its runs)")
    args = parser.parse_args()
    codes = [("this", None)] + ([("baseline", os.path.abspath(args.baseline))]
                                if args.baseline else [])
    from grstream.units import parse_bytes
    scales = [int(s) for s in args.scales.split(",")]
    limits = [("-", "in memory")]
    if args.memory_limit:
        limits.append((str(parse_bytes(args.memory_limit)), f"memory_limit {args.memory_limit}"))
    results = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        inputs = {}
        for scale in scales:
            inputs[scale] = os.path.join(tmp, f"rmat{scale}.npy")
            subprocess.run([sys.executable, "-m", "grstream", "generate", "rmat", "--scale",
                            str(scale), "--seed", str(args.seed), "--weights", "--quiet",
                            "-o", inputs[scale]], check=True, cwd=tmp,
                           env=dict(os.environ, PYTHONPATH=HERE))
            if args.random_weights:
                _randomise_weights(inputs[scale], args.seed)
        out = os.path.join(tmp, "g.h5")
        print(f"measuring {HERE}" + "".join(f" and {c}" for _, c in codes if c),
              file=sys.stderr)
        for run in range(args.runs):
            for scale in scales:
                for limit, _ in limits:
                    for code_name, code in codes:
                        got = [build_once(inputs[scale], out, weighted, limit, code,
                                          args.pause) for weighted in (False, True)]
                        results.setdefault((scale, limit, code_name), []).append(got)
                        print(f"run {run + 1} scale {scale} {limit} {code_name}: unweighted "
                              f"{got[0]['seconds']:.2f} s ({got[0]['cpu']:.2f} CPU s), weighted "
                              f"{got[1]['seconds']:.2f} s ({got[1]['cpu']:.2f} CPU s)",
                              file=sys.stderr, flush=True)
    lines = ["| graph | build | code | unweighted s | weighted s | weighted / unweighted "
             "(median of per-run ratios) | CPU s unweighted / weighted (ratio) "
             "| peak RSS MiB unweighted / weighted |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for scale in scales:
        for (limit, name), (code_name, _) in ((lim, c) for lim in limits for c in codes):
            pairs = results[(scale, limit, code_name)]
            plain = statistics.median(p[0]["seconds"] for p in pairs)
            weighted = statistics.median(p[1]["seconds"] for p in pairs)
            ratio = statistics.median(p[1]["seconds"] / p[0]["seconds"] for p in pairs)
            peaks = [max(p[k]["peak"] for p in pairs) / 2 ** 20 for k in (0, 1)]
            cpu = [statistics.median(p[k]["cpu"] for p in pairs) for k in (0, 1)]
            cpu_ratio = statistics.median(p[1]["cpu"] / p[0]["cpu"] for p in pairs)
            lines.append(f"| RMAT-{scale} ({16 << scale} edges) | {name} | {code_name} | "
                         f"{plain:.2f} | {weighted:.2f} | **{ratio:.2f} x** | "
                         f"{cpu[0]:.2f} / {cpu[1]:.2f} ({cpu_ratio:.2f} x) | "
                         f"{peaks[0]:.0f} / {peaks[1]:.0f} |")
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
          f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} runs"
          + (f", {args.pause:g} s pause before each build" if args.pause else "")
          + (", random float64 weights" if args.random_weights else ", weights 1..255")
          + f"; {sort_speed()}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
