#!/usr/bin/env python
"""Partition engine throughput against scipy's coo -> csr, on an RMAT binary edge list.

Each measurement runs in its own subprocess so its peak RSS (VmHWM above the process's RSS
before the work) is its own. Reported: median edges/s of ``--runs`` runs and the largest peak.

    python tools/bench_partition.py --scale 20 [--memory-limit 256M] [--write docs/BENCHMARKS.md]
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

import numpy as np

CHILD = r"""
import json, sys, time
import numpy as np

def hwm():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1]) * 1024

mode, path, out, limit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
import scipy.sparse as sp
import grstream
from grstream.io.base import EdgeSource
from grstream.partition import build_shards, compress
from grstream.store.format import id_dtype_for

def npy_source():
    edges = np.load(path, mmap_mode="r")
    def chunks():
        for start in range(0, len(edges), 1 << 22):
            part = np.array(edges[start:start + (1 << 22)])
            yield part[:, 0].copy(), part[:, 1].copy(), None
    return EdgeSource(path, chunks, weighted=False, size_bytes=edges.nbytes)

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = hwm()
start = time.perf_counter()
if mode in ("scipy", "layout"):
    edges = np.load(path)
    src, dst = edges[:, 0].copy(), edges[:, 1].copy()
    del edges
    n = int(max(src.max(), dst.max())) + 1
    start = time.perf_counter()
    if mode == "scipy":
        sp.coo_matrix((np.ones(len(src), dtype=np.float32), (src, dst)), shape=(n, n)).tocsr()
    else:
        compress(src, dst, None, 0, n, n, id_dtype_for(n))
        compress(dst, src, None, 0, n, n, id_dtype_for(n))
    m = len(src)
else:
    try:
        from grstream.io import open_source
        source = open_source(path)
    except ImportError:
        source = npy_source()
    build_shards(source, out, memory_limit=None if limit == "-" else int(limit), progress=False)
    m = grstream.open(out).num_edges
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "edges": m, "peak": hwm() - base}))
"""


def rmat(scale, edge_factor, seed):
    """Graph500 Kronecker edges (a=.57, b=.19, c=.19) with a random vertex permutation."""
    try:
        from grstream.io.generate import rmat as generate
        src, dst = generate(scale, edge_factor, seed)
        return np.stack([src, dst], axis=1)
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    a, b, c = 0.57, 0.19, 0.19
    for bit in range(scale):
        r = rng.random(m)
        down = r >= a + b                         # quadrants c, d set the source bit
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    perm = rng.permutation(1 << scale)
    return np.stack([perm[src], perm[dst]], axis=1)


def measure(mode, path, out, limit, runs):
    results = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", CHILD, mode, path, out, limit],
                              capture_output=True, text=True, check=True)
        results.append(json.loads(proc.stdout))
    rate = statistics.median(r["edges"] / r["seconds"] for r in results)
    return {"edges_per_s": rate, "peak_mib": max(r["peak"] for r in results) / 2 ** 20,
            "seconds": statistics.median(r["seconds"] for r in results)}


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--edge-factor", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory-limit", default="256M")
    parser.add_argument("--write", metavar="MD", help="append a section to this markdown file")
    args = parser.parse_args()
    from grstream.units import parse_bytes
    limit = parse_bytes(args.memory_limit)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        path = os.path.join(tmp, "rmat.npy")
        t = time.perf_counter()
        edges = rmat(args.scale, args.edge_factor, args.seed)
        np.save(path, edges)
        m, input_mib = len(edges), edges.nbytes / 2 ** 20
        del edges
        print(f"RMAT scale {args.scale}: {m} edges ({input_mib:.0f} MiB) in {time.perf_counter() - t:.1f} s")
        out = os.path.join(tmp, "g.h5")
        rows = [
            ("scipy coo->csr (CSR only, in memory)", measure("scipy", path, out, "-", args.runs)),
            ("grstream layout: CSR + CSC (in memory)", measure("layout", path, out, "-", args.runs)),
            ("grstream build_shards, in memory (read + CSR + CSC + write)",
             measure("build", path, out, "-", args.runs)),
            (f"grstream build_shards, memory_limit {args.memory_limit}",
             measure("build", path, out, str(limit), args.runs)),
        ]
    scipy_rate = rows[0][1]["edges_per_s"]
    lines = [f"| what | edges/s | x scipy | median s | peak RSS MiB |", "| --- | --- | --- | --- | --- |"]
    for name, r in rows:
        lines.append(f"| {name} | {r['edges_per_s'] / 1e6:.2f} M | {r['edges_per_s'] / scipy_rate:.2f} "
                     f"| {r['seconds']:.2f} | {r['peak_mib']:.0f} |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        section = (f"\n## Partition engine (tools/bench_partition.py)\n\n"
                   f"{datetime.date.today().isoformat()}, {cpu_model()}; RMAT scale {args.scale}, "
                   f"edge factor {args.edge_factor} ({m} edges, {input_mib:.0f} MiB int64 .npy), "
                   f"unweighted; median of {args.runs} runs, each in its own process; peak RSS is "
                   f"VmHWM above the process's RSS before the work.\n\n{table}\n")
        new = not os.path.exists(args.write)
        with open(args.write, "a") as f:
            if new:
                f.write("# grstream benchmarks\n\nMeasured results, newest sections appended by each tool.\n")
            f.write(section)


if __name__ == "__main__":
    main()
