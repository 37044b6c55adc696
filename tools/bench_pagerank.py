"""PageRank on the CPU or the GPU: method "power" against method "delta" against scipy power
iteration (on the CPU), in the same run (issue 8 item 4).

Usage: python3 tools/bench_pagerank.py [--scale 20] [--store r20.h5] [--tol 1e-4] [--repeat 3]
[--device cpu|cuda]

Every row runs to its own stopping rule at ``--tol``: power (grstream and scipy) stops when the
L1 change of an iteration is below tol, delta when its proven bound on the L1 distance to the
exact ranks is below tol. Each row reports iterations, seconds (median of ``--repeat`` runs,
wall clock of the whole call) and the L1 distance to a grstream power run to tol 1e-12. Prints
one JSON document.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from grstream.algorithms.pagerank import pagerank  # noqa: E402


def scipy_matrix(store):
    """(A^T as CSR, 1 / out-degree with 0 for dangling, dangling mask): set up once, untimed."""
    a = store.to_scipy("csr", weights=False).astype(np.float64)
    out = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=out != 0)
    return a.T.tocsr(), inv, out == 0


def scipy_power(mats, tol, damping=0.85, max_iter=1000):
    """Power iteration with scipy's CSR product, stopped by the same L1 rule: (ranks, its)."""
    at, inv, dangling = mats
    n = at.shape[0]
    x = np.full(n, 1.0 / n)
    for it in range(1, max_iter + 1):
        new = damping * (at @ (x * inv) + x[dangling].sum() / n) + (1.0 - damping) / n
        change = np.abs(new - x).sum()
        x = new
        if change < tol:
            return x, it
    return x, max_iter


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times), times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--store", default=None, help="an RMAT store to reuse (built when missing)")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (device cpu)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args(argv)
    path = args.store or os.path.join(tempfile.mkdtemp(prefix="grstream-bpr-"), f"rmat{args.scale}.h5")
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        src, dst = rmat(args.scale, 16, seed=1)
        gr.build_shards((src, dst), path, num_shards=args.shards, progress=False)
    store = gr.open(path)
    opts = {"weight": None, "progress": False, "device": args.device,
            "backend_options": {"threads": args.threads} if args.device == "cpu" else {}}
    ref, _ = pagerank(store, tol=1e-12, max_iter=1000, **opts)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
           "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                      f"{os.cpu_count()} cores", "threads": args.threads,
           "graph": f"RMAT-{args.scale} (edge factor 16, seed 1), {store.num_vertices} vertices, "
                    f"{store.num_edges} edges, {store.num_shards} shards",
           "tol": args.tol, "device": args.device, "rows": []}
    for name, direction in (("power", "auto"), ("delta", "auto"), ("delta", "pull")):
        (ranks, r), secs, all_secs = timed(
            lambda: pagerank(store, tol=args.tol, max_iter=1000, method=name, direction=direction,
                             **opts), args.repeat)
        doc["rows"].append({"method": f"grstream {name}, direction {direction}",
                            "iterations": r.iterations,
                            "seconds": secs, "runs": all_secs, "converged": r.converged,
                            # (the last run's iterations alone: no set-up, no kernel compile)
                            "iteration_seconds": sum(st.time_total for st in r.stats),
                            "l1_to_reference": float(np.abs(ranks - ref).sum()),
                            "active_per_iteration": [s.active_vertices for s in r.stats]})
    mats = scipy_matrix(store)
    (x, its), secs, all_secs = timed(lambda: scipy_power(mats, args.tol), args.repeat)
    doc["rows"].append({"method": "scipy power", "iterations": its, "seconds": secs,
                        "runs": all_secs, "l1_to_reference": float(np.abs(x - ref).sum())})
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
