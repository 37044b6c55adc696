"""PageRank over MPI ranks against one process, in the same run (docs/DISTRIBUTED.md).

Usage: python3 tools/bench_ranks.py [--scale 20] [--ranks 2] [--dir DIR] [--iters 20]
[--repeat 5] [--device cpu] [--threads T] [--json out.json]

Builds the RMAT graph of ``--scale`` (edge factor 16, seed 1, as tools/bench_targets.py; reused
from ``--dir``) and runs dense PageRank for exactly ``--iters`` iterations (tol 0), in one
Session each: one process, and ``mpiexec -n RANKS`` of the same script, each side in fresh
processes so that nothing of the other side runs meanwhile (MPI ranks waiting in a collective
spin on a core). Each launch sets up (shards loaded, resident), runs once untimed and once
timed; the sides take turns ``--repeat`` times (one process, the ranks, one process, ...) so
that a disturbance of the machine falls on both, and the figure is the median run's seconds
per iteration (``Result.seconds / iterations``). The
ranks' values are checked against the process's (rtol 1e-12) and their exchange bytes and seconds
per iteration reported. ``--threads``: the CPU executor's threads, per rank for the ranks
(default: the cores divided by the ranks, and all cores for one process). Prints one JSON
document.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import grstream as gr  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build(scale, folder):
    """The RMAT store of ``scale`` in ``folder`` (built once)."""
    path = os.path.join(folder, f"rmat{scale}.h5")
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        t0 = time.perf_counter()
        src, dst = rmat(scale, 16, seed=1)
        gr.build_shards((src, dst), path, progress=False)
        log(f"built {path} in {time.perf_counter() - t0:.1f}s")
    return path


def timed_run(session, iters):
    """(seconds per iteration, Result) of one PageRank run of exactly ``iters`` iterations."""
    result = session.run(gr.algorithms.pagerank.PageRank(tol=0.0), max_iter=iters)
    return result.seconds / max(result.iterations, 1), result


def worker(args):
    """One side of the comparison in a process of its own (the ranks under mpiexec): set up,
    one untimed run, one timed run; rank 0 saves the values and prints its figures."""
    comm = None
    if args.ranks > 1:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    opts = {"threads": args.threads} if args.threads else {}
    with gr.Session(args.store, device=args.device, comm=comm, **opts) as session:
        timed_run(session, args.iters)   # set up: every shard loaded
        per_it, result = timed_run(session, args.iters)
    if comm is None or comm.Get_rank() == 0:
        ex = result.info.get("rank_stats", [{"exchange_bytes": 0, "exchange_s": 0.0}])
        np.save(args.values, result.value)
        print(json.dumps({"per_iter_s": per_it, "iterations": result.iterations,
                          "exchange_bytes_per_iter": [r["exchange_bytes"] / result.iterations for r in ex],
                          "exchange_s_per_iter": [r["exchange_s"] / result.iterations for r in ex]}),
              flush=True)


def side(args, path, ranks, threads, values):
    """Run one side in fresh processes (nothing of the other side runs meanwhile): its figures."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--store", path, "--values", values,
           "--iters", str(args.iters), "--device", args.device, "--ranks", str(ranks)]
    cmd += ["--threads", str(threads)] if threads else []
    if ranks > 1:
        mpiexec = shutil.which("mpiexec", path=os.pathsep.join([os.path.dirname(sys.executable),
                                                                os.environ.get("PATH", "")]))
        cmd = [mpiexec, "-n", str(ranks)] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--store", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--values", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    path = build(args.scale, args.dir)
    cores = os.cpu_count() or 1
    rank_threads = args.threads or max(1, cores // args.ranks)
    mine, theirs = (os.path.join(args.dir, f"bench_ranks_{os.getpid()}_{k}.npy") for k in "ab")
    one_s, rank_s, rank_docs = [], [], []
    try:
        for _ in range(args.repeat):
            one = side(args, path, 1, args.threads, mine)
            many = side(args, path, args.ranks, rank_threads, theirs)
            one_s.append(one["per_iter_s"])
            rank_s.append(many["per_iter_s"])
            rank_docs.append(many)
            assert np.allclose(np.load(theirs), np.load(mine), rtol=1e-12), "the ranks' PageRank differs"
            log(f"one process {one['per_iter_s'] * 1e3:.1f} ms/iteration, {args.ranks} ranks "
                f"{many['per_iter_s'] * 1e3:.1f} ms/iteration")
    finally:
        for f in (mine, theirs):
            if os.path.exists(f):
                os.remove(f)
    store = gr.open(path)
    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": platform.node(), "cores": cores, "device": args.device, "scale": args.scale,
           "vertices": int(store.num_vertices), "edges": int(store.num_edges),
           "shards": int(store.num_shards), "ranks": args.ranks, "iterations": args.iters,
           "threads_one_process": args.threads or "default", "threads_per_rank": rank_threads,
           "one_process_ms_per_iter": 1e3 * statistics.median(one_s),
           "ranks_ms_per_iter": 1e3 * statistics.median(rank_s),
           "ranks_over_one": statistics.median(rank_s) / statistics.median(one_s),
           "exchange_bytes_per_iter": rank_docs[-1]["exchange_bytes_per_iter"],
           "exchange_ms_per_iter": [1e3 * s for s in rank_docs[-1]["exchange_s_per_iter"]],
           "runs_ms": {"one": [1e3 * s for s in one_s], "ranks": [1e3 * s for s in rank_s]}}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
