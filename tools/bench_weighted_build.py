#!/usr/bin/env python
"""Weighted against unweighted shard builds of the same RMAT graphs, in one run.

    python tools/bench_weighted_build.py [--scales 20,21] [--runs 3] [--memory-limit 512M]

For each scale, ``grstream generate rmat --weights`` writes one ``(m, 3)`` float64 ``.npy``; the
unweighted build reads that same file with ``weighted=False`` (the weights column is dropped
at read), so the two builds differ only in carrying the weights. Each build runs in its own
process: time is ``build_shards`` alone (read + partition + CSR + CSC + checksums + write +
fsync), peak RSS is the process's VmHWM (interpreter and imports included, about 60 MiB). The
runs are interleaved (unweighted, weighted, next scale, ...), so a burst of load from other
processes hits both alike; the ratio is taken per run (weighted seconds / unweighted seconds)
and its median reported with the median seconds. ``--memory-limit`` adds the external build at
that limit as a mode of its own.
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

CHILD = r"""
import json, os, resource, sys, time
from grstream.partition import build_shards
path, out, weighted, limit = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
if os.path.exists(out):
    os.unlink(out)          # every build writes a fresh file
start = time.perf_counter()
build_shards(path, out, weighted=weighted, progress=False,
             memory_limit=None if limit == "-" else int(limit))
seconds = time.perf_counter() - start
os.unlink(out)
print(json.dumps({"seconds": seconds,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def build_once(path, out, weighted, limit):
    proc = subprocess.run([sys.executable, "-c", CHILD, path, out, "1" if weighted else "0",
                           limit], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines()
                     if line.startswith("Model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="20,21")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-limit", default=None,
                        help="also measure the external build at this limit (e.g. 512M)")
    args = parser.parse_args()
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
                            "-o", inputs[scale]], check=True)
        out = os.path.join(tmp, "g.h5")
        for run in range(args.runs):
            for scale in scales:
                for limit, _ in limits:
                    got = [build_once(inputs[scale], out, weighted, limit)
                           for weighted in (False, True)]
                    results.setdefault((scale, limit), []).append(got)
                    print(f"run {run + 1} scale {scale} {limit}: unweighted "
                          f"{got[0]['seconds']:.2f} s, weighted {got[1]['seconds']:.2f} s",
                          file=sys.stderr, flush=True)
    lines = ["| graph | build | unweighted s | weighted s | weighted / unweighted "
             "(median of per-run ratios) | peak RSS MiB unweighted / weighted |",
             "| --- | --- | --- | --- | --- | --- |"]
    for scale in scales:
        for limit, name in limits:
            pairs = results[(scale, limit)]
            plain = statistics.median(p[0]["seconds"] for p in pairs)
            weighted = statistics.median(p[1]["seconds"] for p in pairs)
            ratio = statistics.median(p[1]["seconds"] / p[0]["seconds"] for p in pairs)
            peaks = [max(p[k]["peak"] for p in pairs) / 2 ** 20 for k in (0, 1)]
            lines.append(f"| RMAT-{scale} ({16 << scale} edges) | {name} | {plain:.2f} | "
                         f"{weighted:.2f} | {ratio:.2f} x | {peaks[0]:.0f} / {peaks[1]:.0f} |")
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
          f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} runs")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
