#!/usr/bin/env python
"""Partition engine throughput against scipy's coo -> csr + coo -> csc, on an RMAT binary edge list.

Each measurement runs in its own subprocess so its peak RSS (VmHWM above the process's RSS
before the work) and its CPU time (user + system of all its threads) are its own. Reported:
median edges/s of ``--runs`` runs, the median CPU time over wall time, and the largest peak,
also as a multiple of the edge array's bytes.

    python tools/bench_partition.py --scale 20 [--runs 3] [--threads 1,2] \
        [--memory-limit 256M,64M] [--text txt,gz] [--no-scipy] [--write]

Peers: scipy loading the same .npy and converting coo -> csr and coo -> csc (end to end, the
two layouts a store holds), against grstream building the whole store from that file (read +
partition + CSR/CSC + checksums + write) with each thread count of ``--threads`` (default: the
cores available) and each memory limit; the same edges as a SNAP text edge list (``--text``:
plain ``txt`` and gzip ``gz``, written as ``grstream generate`` writes them) against the .npy
build with default threads; and the sort step alone, both from edge arrays already in memory.
Ratios are taken per run (peer seconds / our seconds, the runs interleaved) and their median
reported. CPU time includes the text parse's worker processes; their largest peak RSS is shown
beside the build's.
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
import json, os, resource, sys, time
import numpy as np

def cpu():
    # the text parse's worker processes are children: their CPU time counts too
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime

def hwm():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1]) * 1024

mode, path, out, limit, threads = sys.argv[1:6]
threads = None if threads == "-" else int(threads)
import scipy.sparse as sp
import grstream
from grstream.partition import build_shards, compress
from grstream.partition.layout import compress_pieces
from grstream.store.format import id_dtype_for
from concurrent.futures import ThreadPoolExecutor

num_shards = int(os.environ.get("BENCH_SHARDS", "128"))
if os.path.exists(out):
    os.unlink(out)          # every build writes a fresh file, as scipy's result is fresh memory
if mode.endswith("-sort"):
    # sort-only peers: the edge arrays are in memory before the clock starts
    edges = np.load(path)
    src, dst = edges[:, 0].copy(), edges[:, 1].copy()
    del edges
    n = int(max(src.max(), dst.max())) + 1
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = hwm()
start, cpu_start = time.perf_counter(), cpu()
if mode == "scipy":
    # scipy's end to end: load the same .npy, coo -> csr and coo -> csc (a store's two layouts)
    edges = np.load(path)
    n = int(edges.max()) + 1
    coo = sp.coo_matrix((np.ones(len(edges), dtype=np.float32), (edges[:, 0], edges[:, 1])),
                        shape=(n, n))
    coo.tocsr()
    coo.tocsc()
    m = len(edges)
elif mode == "scipy-sort":
    coo = sp.coo_matrix((np.ones(len(src), dtype=np.float32), (src, dst)), shape=(n, n))
    coo.tocsr()
    coo.tocsc()
    m = len(src)
elif mode == "layout-sort":
    # what the in-memory build does: CSC on a second thread while CSR runs on this one
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(compress_pieces, [dst], [src], n, id_dtype_for(n))
        compress_pieces([src], [dst], n, id_dtype_for(n))
        pending.result()
    m = len(src)
else:
    build_shards(path, out, memory_limit=None if limit == "-" else int(limit), progress=False,
                 num_shards=num_shards, threads=threads)
seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu_start
if mode == "build":
    m = grstream.open(out).num_edges
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "cpu": cpu_seconds, "edges": m, "peak": hwm() - base,
                  "worker_peak": workers}))
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


def run_once(mode, path, out, limit, threads="-"):
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, path, out, limit, threads],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def summarize(results):
    rate = statistics.median(r["edges"] / r["seconds"] for r in results)
    return {"edges_per_s": rate, "peak_mib": max(r["peak"] for r in results) / 2 ** 20,
            "worker_mib": max(r.get("worker_peak", 0) for r in results) / 2 ** 20,
            "seconds": statistics.median(r["seconds"] for r in results),
            "cpu_ratio": statistics.median(r["cpu"] / r["seconds"] for r in results)}


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("Model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} available)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--edge-factor", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory-limit", default="256M,64M",
                        help="comma-separated limits, each measured as its own mode")
    parser.add_argument("--threads", default="-",
                        help="comma-separated thread counts of the in-memory build (- : the "
                             "default, every core available)")
    parser.add_argument("--shards", type=int, default=128, help="shards of each store")
    parser.add_argument("--text", default="txt,gz",
                        help="text inputs to build from besides the .npy: txt, gz or both "
                             "(comma-separated; empty for none)")
    parser.add_argument("--no-scipy", action="store_true",
                        help="leave out scipy's peers (end to end and sort only): the text "
                             "inputs against the .npy build alone")
    parser.add_argument("--write", action="store_true",
                        help="also print the section for docs/BENCHMARKS.md (machine, date, command)")
    args = parser.parse_args()
    from grstream.units import parse_bytes
    limits = [(text, parse_bytes(text)) for text in args.memory_limit.split(",") if text]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        path = os.path.join(tmp, "rmat.npy")
        t = time.perf_counter()
        edges = rmat(args.scale, args.edge_factor, args.seed)
        np.save(path, edges)
        m, input_mib = len(edges), edges.nbytes / 2 ** 20
        texts = [kind for kind in args.text.split(",") if kind]
        inputs = {"npy": path}
        for kind in texts:
            from grstream.io.write import write_edges
            inputs[kind] = os.path.join(tmp, "rmat.txt" + (".gz" if kind == "gz" else ""))
            step = 1 << 22
            write_edges(inputs[kind], ((edges[i:i + step, 0], edges[i:i + step, 1], None)
                                       for i in range(0, m, step)), weighted=False)
        del edges
        print(f"RMAT scale {args.scale}: {m} edges ({input_mib:.0f} MiB) in {time.perf_counter() - t:.1f} s")
        out = os.path.join(tmp, "g.h5")
        counts = args.threads.split(",")
        modes = [
            ("scipy", "-", "-", "scipy: np.load(.npy) + coo->csr + coo->csc", None),
        ] + [
            ("build:" + kind, "-", "-", f"grstream build_shards from {'gzip ' if kind == 'gz' else ''}"
                                        f"SNAP text, in memory, threads default", "npy-default")
            for kind in texts
        ] + [
            ("build", "-", t, f"grstream build_shards from the .npy, in memory, "
                              f"threads {'default' if t == '-' else t}", "scipy")
            for t in counts
        ] + [
            ("build", str(limit), "-", f"grstream build_shards from the .npy, memory_limit "
                                       f"{text}", "scipy") for text, limit in limits
        ] + [
            ("scipy-sort", "-", "-", "sort only: scipy coo->csr + coo->csc of in-memory arrays",
             None),
            ("layout-sort", "-", "-", "sort only: grstream CSR + CSC of in-memory arrays "
                                      "(two threads)", "scipy-sort"),
        ]
        if args.no_scipy:
            modes = [m_ for m_ in modes if not m_[0].startswith(("scipy", "layout"))]
        os.environ["BENCH_SHARDS"] = str(args.shards)
        runs = {k: [] for k in range(len(modes))}
        ratios = {k: [] for k in range(len(modes))}
        # runs interleaved, so a burst of load from other processes hits every mode alike
        for _ in range(args.runs):
            got = {}
            for k, (mode, lim, threads, _, _) in enumerate(modes):
                mode, _, kind = mode.partition(":")
                got[k] = run_once(mode, inputs[kind or "npy"], out, lim, threads)
                runs[k].append(got[k])
            for k, (mode, lim, _, _, peer) in enumerate(modes):
                if peer == "npy-default":
                    # the .npy build with default threads, in memory
                    j = next(i for i, m_ in enumerate(modes) if m_[:3] == ("build", "-", "-"))
                    ratios[k].append(got[j]["seconds"] / got[k]["seconds"])
                elif any(m_[0] == peer for m_ in modes):
                    j = next(i for i, m_ in enumerate(modes) if m_[0] == peer)
                    ratios[k].append(got[j]["seconds"] / got[k]["seconds"])
    lines = ["| what | edges/s | x peer (median of per-run ratios) | median s | CPU / wall "
             "| peak RSS MiB (x edge bytes) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for k, (_, _, _, name, peer) in enumerate(modes):
        r = summarize(runs[k])
        ratio = f"{statistics.median(ratios[k]):.2f} x {peer}" if ratios[k] else "peer"
        workers = (f"; text workers {r['worker_mib']:.0f} each"
                   if modes[k][0].startswith("build:") else "")
        lines.append(f"| {name} | {r['edges_per_s'] / 1e6:.2f} M | {ratio} | {r['seconds']:.2f} "
                     f"| {r['cpu_ratio']:.2f} | {r['peak_mib']:.0f} "
                     f"({r['peak_mib'] / input_mib:.2f} x{workers}) |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        section = (f"\n## Partition engine (tools/bench_partition.py)\n\n"
                   f"{datetime.date.today().isoformat()}, {cpu_model()}; RMAT scale {args.scale}, "
                   f"edge factor {args.edge_factor} ({m} edges, {input_mib:.0f} MiB int64 .npy), "
                   f"unweighted; median of {args.runs} runs, each in its own process; peak RSS is "
                   f"VmHWM above the process's RSS before the work. Command: `python "
                   f"tools/bench_partition.py --scale {args.scale} --runs {args.runs} "
                   f"--threads {args.threads} --shards {args.shards} --text {args.text} "
                   f"--memory-limit '{args.memory_limit}'{' --no-scipy' * args.no_scipy}`; "
                   f"load average before: "
                   f"{os.getloadavg()[0]:.1f}.\n\n{table}\n")
        print(section)


if __name__ == "__main__":
    main()
