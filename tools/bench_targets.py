"""Issue 8's GPU targets, per iteration: BFS at the 1/4 budget and in GPU memory, CC at the 1/4 budget.

Usage (on the GPU machine): python3 tools/bench_targets.py --scale 24 [--dir DIR] [--repeat 3]
[--profile OUT.txt] [--json out.json] [--compress [--reorder none,degree]] [--cusparse]

RMAT graph as tools/bench_gpu.py builds it (reused from ``--dir`` when already there). Each case
runs ``--repeat`` + 1 times in one Session (the first fills the pinned host cache); the figure
is the median of the timed runs, start() included, and the last run's iterations are printed
(direction, transfer modes per shard, publish rule, changed vertices, ms, bytes over the link,
kernel-busy ms). Cases: BFS with the defaults at the 1/4 budget (bench_gpu's push budget: vertex
state with the push buffers + 1/4 of the pull and push regions), the same with the pull arrays
held too (``push_memory=False``), and in GPU memory, each also with the push kernels' hub path
off (``push_hub_edges=0``; docs/GPU.md "Hub rows"), without the edge-balanced push walk
(``push_merge=False``; docs/GPU.md "Edge-balanced push"), started by a host init and an upload
of the levels (``_host_init``: the peer of BFS's declared start) and with compacted-queue frontiers
below n / 1024 changed vertices (``queue_fraction``; the GPU's default is bitmaps throughout);
CC at the 1/4 budget pulled with Jacobi iterations (``publish_unit=False``), with Gauss-Seidel
iterations (publish "unit"), and with the default direction (which now pulls that way); BFS at
the 1/4 budget and dense PageRank (to convergence; the median iteration is its figure) at bench_gpu's
1/4 budget, each also with every streamed shard copied again each iteration (``hold_slots=False``:
no transfer "held"). ``--sssp``: SSSP on the weighted RMAT graph of the same scale (weights
1..255, built into ``--dir`` when missing) at its 1/4 budget and in GPU memory. Values are checked
against scipy (BFS levels, weak components' least ids, dijkstra distances over every parallel
edge). ``--profile``: cProfile of
one BFS run at the 1/4 budget and one in GPU memory (host time per function), written there.
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from bench_gpu import PINNED, budget_quarter, cusparse_pagerank_ms, finish, log  # noqa: E402


def build_rmat(path, args, compress, reorder=None):
    """The RMAT graph of ``args.scale`` (seed 1, edge factor 16) at ``path``, built when missing;
    ``compress``: with compressed ids; ``reorder``: the build's vertex order (None: the input's)."""
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        t0 = time.perf_counter()
        src, dst = rmat(args.scale, 16, seed=1)
        gr.build_shards((src, dst), path, num_shards=args.shards, progress=False, compress=compress,
                        reorder=reorder)
        del src, dst
        log(f"built {path} in {time.perf_counter() - t0:.1f}s")
    return gr.open(path)


def compressed_path(tmp, scale, order):
    """The compressed store of ``--compress`` built with vertex order ``order`` ("none": the input's)."""
    return os.path.join(tmp, f"rmat{scale}c.h5" if order == "none" else f"rmat{scale}c-{order}.h5")


def per_iteration(r):
    out = []
    for s in r.stats:
        modes = {}
        for m in s.plan.get("shard_modes", {}).values():
            modes[m] = modes.get(m, 0) + 1
        res = s.plan.get("transfer", {}).get("resident", 0)
        out.append({"it": s.iteration, "dir": s.plan.get("plan_direction"), "publish": s.plan.get("publish"),
                    "units": s.plan.get("units"), "resident": res, "modes": modes, "balance": s.plan.get("balance"),
                    "changed": int(s.changed_vertices), "active": int(s.active_vertices),
                    "ms": round(s.time_total * 1e3, 2), "kernel_ms": round(s.time_kernel * 1e3, 2),
                    "copy_ms": round(s.time_copy * 1e3, 2), "bytes": int(sum(s.transfer_bytes.values()))})
    return out


def case(store, make, budget, repeat, field, profile=None, device="cuda", **options):
    """Median ms (start() + iterations) of ``repeat`` runs after a warm one, the last Result."""
    pinned = PINNED
    if device != "cuda":   # a smoke test of this script without a GPU: engine options only
        options = {k: v for k, v in options.items() if k in ("direction", "queue_fraction")}
        pinned = None      # (the CPU has no pinned host memory to bound)
    with gr.Session(store, device=device, memory_budget=budget, pinned_budget=pinned, **options) as session:
        session.run(make())
        runs = [session.run(make()) for _ in range(repeat)]
        if profile is not None:
            prof = cProfile.Profile()
            prof.enable()
            session.run(make())
            prof.disable()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(45)
            profile.append(buf.getvalue())
    total = [r.info.get("start_wall_s", 0.0) + sum(s.time_total for s in r.stats) for r in runs]
    last = runs[-1]
    per_it = [s.time_total for r in runs for s in r.stats[1:]]   # a dense run's steady iterations
    return {"ms": float(np.median(total)) * 1e3, "ms_all": [round(t * 1e3, 2) for t in total],
            "iteration_median_ms": float(np.median(per_it)) * 1e3 if per_it else 0.0,
            "iter_ms": float(np.median([sum(s.time_total for s in r.stats) for r in runs])) * 1e3,
            "start_ms": float(np.median([r.info.get("start_wall_s", 0.0) for r in runs])) * 1e3,
            # Result.seconds: from the run's call to its last iteration, the host init and the
            # push check included (what start_ms leaves out), the result's download not
            "seconds_ms": float(np.median([r.seconds for r in runs])) * 1e3, "start_parts": last.info.get("start"),
            "iterations": last.iterations, "per_iter": per_iteration(last),
            "runs": [[(it["ms"], it["modes"], it["balance"]) for it in per_iteration(r)] for r in runs],
            "resident_shards": last.info["memory"]["resident_shards"], "slots": last.info["memory"]["slots"],
            "budget": budget}, (last.values[field] if field is not None else None)


def min_weight_csr(store):
    """The weighted out-edges as a CSR matrix that keeps parallel edges (to_scipy sums them, SSSP
    takes the lightest: scipy's dijkstra relaxes every stored entry)."""
    import scipy.sparse as sp
    indptr = np.zeros(store.num_vertices + 1, dtype=np.int64)
    ids, weights, base = [], [], 0
    for i in range(store.num_shards):
        lo, hi = int(store.intervals[i]), int(store.intervals[i + 1])
        local = store.read(i, "out/indptr")
        indptr[lo + 1:hi + 1] = local[1:] + base
        base += int(local[-1])
        ids.append(store.read(i, "out/dst"))
        weights.append(store.read(i, "out/weight").astype(np.float64))
    return sp.csr_matrix((np.concatenate(weights), np.concatenate(ids), indptr),
                         shape=(store.num_vertices, store.num_vertices))


def scipy_reference(store, source):
    from scipy.sparse import csgraph
    mat = store.to_scipy("csr", weights=False)
    t0 = time.perf_counter()
    _, lab = csgraph.connected_components(mat, directed=True, connection="weak")
    first = np.full(lab.max() + 1, mat.shape[0], dtype=np.int64)
    np.minimum.at(first, lab, np.arange(mat.shape[0]))
    d = csgraph.shortest_path(mat, indices=source, unweighted=True)
    level = np.where(np.isinf(d), -1, d).astype(np.int64)
    return first[lab], level, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-scipy", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated case names to leave out (with their "
                    "compressed runs; a compressed run alone by its own name, e.g. pr_inmem_c)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of the script")
    ap.add_argument("--compress", action="store_true",
                    help="also every case on the same RMAT graph built with compressed ids (rmat<scale>c.h5, "
                         "decoded in the kernels), at the plain store's budgets, in the same run (label _c)")
    ap.add_argument("--reorder", default="none",
                    help="with --compress: comma-separated vertex orders of the compressed stores "
                         "(none, degree, rcm; label _c, _cdegree, ...); values compared by label")
    ap.add_argument("--build-only", action="store_true", help="build the stores (plain, --compress: "
                    "compressed only) and exit")
    ap.add_argument("--cusparse", action="store_true",
                    help="cuSPARSE's SpMV through CuPy, the graph in GPU memory (PageRank's peer)")
    ap.add_argument("--sssp", action="store_true",
                    help="also SSSP on the weighted RMAT graph of --scale (weights 1..255) at the 1/4 "
                         "budget and in GPU memory, checked against scipy's dijkstra")
    args = ap.parse_args(argv)
    tmp = args.dir or "/tmp"
    orders = [o for o in args.reorder.split(",") if o] if args.compress else []
    if args.build_only:
        if not args.compress:
            build_rmat(os.path.join(tmp, f"rmat{args.scale}.h5"), args, False)
        for order in orders:
            build_rmat(compressed_path(tmp, args.scale, order), args, True, None if order == "none" else order)
        return 0
    from bench_link import pinned_h2d_gbps
    from grstream.backends import cuda
    out = {"scale": args.scale, "shards": args.shards, "device": cuda.available()[1],
           "pinned_h2d_gbps": pinned_h2d_gbps(mib=1024, repeat=5) if args.device == "cuda" else 0.0}
    log(f"device {out['device']}: pinned H2D {out['pinned_h2d_gbps']:.1f} GB/s")
    path = os.path.join(tmp, f"rmat{args.scale}.h5")
    store = build_rmat(path, args, False)
    source = int(np.argmax(store.out_degree()))
    BFS, CC = gr.algorithms.bfs.BFS, gr.algorithms.cc.ConnectedComponents

    class HostBFS(BFS):   # the declared start's peer: BFS started by a host init and an upload
        def init(self, v):
            return super().init(v)
    bq = budget_quarter(BFS(), store, push=True)[0]
    cq = {p: budget_quarter(CC(), store, push=p)[0] for p in (False, True)}
    PR = gr.algorithms.pagerank.PageRank
    pq = budget_quarter(PR(), store)[0]
    profiles = [] if args.profile else None
    cases = [("bfs_quarter", lambda: BFS(source=source), bq, "level", {}),
             ("bfs_quarter_host_init", lambda: HostBFS(source=source), bq, "level", {}),
             ("bfs_quarter_pull_regions", lambda: BFS(source=source), bq, "level", {"push_memory": False}),
             ("bfs_quarter_queue", lambda: BFS(source=source), bq, "level", {"queue_fraction": 1 / 1024}),
             ("bfs_quarter_no_hubs", lambda: BFS(source=source), bq, "level", {"push_hub_edges": 0}),
             ("bfs_quarter_no_merge", lambda: BFS(source=source), bq, "level", {"push_merge": False}),
             ("bfs_inmem", lambda: BFS(source=source), None, "level", {}),
             ("bfs_inmem_host_init", lambda: HostBFS(source=source), None, "level", {}),
             ("bfs_inmem_no_hubs", lambda: BFS(source=source), None, "level", {"push_hub_edges": 0}),
             ("bfs_inmem_queue", lambda: BFS(source=source), None, "level", {"queue_fraction": 1 / 1024}),
             ("bfs_inmem_no_merge", lambda: BFS(source=source), None, "level", {"push_merge": False}),
             ("cc_quarter_pull_jacobi", CC, cq[False], "label", {"direction": "pull", "publish_unit": False}),
             ("cc_quarter_pull_gauss_seidel", CC, cq[False], "label", {"direction": "pull"}),
             ("cc_quarter_default", CC, cq[True], "label", {}),
             ("bfs_quarter_no_hold", lambda: BFS(source=source), bq, "level", {"hold_slots": False}),
             ("pr_quarter", PR, pq, None, {}),
             ("pr_inmem", PR, None, "rank", {}),
             ("pr_quarter_no_hold", PR, pq, None, {"hold_slots": False})]
    if args.sssp:
        wpath = os.path.join(tmp, f"rmat{args.scale}w.h5")
        if not os.path.exists(wpath):
            from grstream.io.generate import rmat
            t0 = time.perf_counter()
            src, dst, w = rmat(args.scale, 16, seed=1, weights=True)
            gr.build_shards((src, dst, w), wpath, num_shards=args.shards, progress=False, weighted=True)
            del src, dst, w
            log(f"built {wpath} in {time.perf_counter() - t0:.1f}s")
        wstore = gr.open(wpath)
        wsource = int(np.argmax(wstore.out_degree()))
        SSSP = gr.algorithms.sssp.SSSP
        sq = budget_quarter(SSSP(source=wsource), wstore, push=True)[0]
        cases += [("sssp_quarter", lambda: SSSP(source=wsource), sq, "dist", {}, wstore),
                  ("sssp_inmem", lambda: SSSP(source=wsource), None, "dist", {}, wstore)]
    values = {}
    cases = [c if len(c) == 6 else c + (store,) for c in cases]
    peers = {}   # compressed case label -> (the plain case's label, its store)
    if orders:   # the same cases on each compressed store, at the plain store's budgets
        out["bytes_per_edge"] = {"plain": store.nbytes() / store.num_edges}
        plain_cases = [c for c in cases if not c[0].startswith("sssp")]
        for order in orders:
            cstore = build_rmat(compressed_path(tmp, args.scale, order), args, True,
                                None if order == "none" else order)
            suffix = "_c" if order == "none" else "_c" + order
            out["bytes_per_edge"]["compressed" + suffix[2:]] = cstore.nbytes() / cstore.num_edges
            # the plain store's BFS source, by label (a reordered store numbers it differently)
            csource = int(cstore.to_internal(store.to_labels(np.array([source])))[0])
            for label, make, budget, field, options, _ in plain_cases:
                if label.startswith("bfs"):
                    make = (lambda s, c: lambda: c(source=s))(csource, HostBFS if "host_init" in label else BFS)
                cases.append((label + suffix, make, budget, field, options, cstore))
                peers[label + suffix] = (label, cstore)
            if args.cusparse and order != "none":   # (the same matrix as the plain store's otherwise)
                out["cusparse_ms" + suffix], _ = cusparse_pagerank_ms(cstore)
                log(f"cuSPARSE SpMV on the {order}-ordered store: {out['cusparse_ms' + suffix]:.2f} ms")
    skip = set(args.skip.split(","))   # a case's name skips its compressed runs too
    cases = [c for c in cases if c[0] not in skip and peers.get(c[0], ("",))[0] not in skip]
    if args.cusparse:
        out["cusparse_ms"], _ = cusparse_pagerank_ms(store)
        log(f"cuSPARSE SpMV (PageRank's peer, in GPU memory): {out['cusparse_ms']:.2f} ms")
    for label, make, budget, field, options, st in cases:
        prof = profiles if label in ("bfs_quarter", "bfs_inmem") else None
        res, value = case(st, make, budget, args.repeat, field, prof, args.device, **options)
        if field is not None:   # (PageRank: timed per iteration only)
            values[label] = value
        out[label] = res
        finish(out, args)   # what ran so far survives a run stopped at its time limit
        log(f"{label}: {res['ms']:.1f} ms median of {args.repeat} {res['ms_all']} ({res['iter_ms']:.1f} ms in "
            f"{res['iterations']} iterations, start {res['start_ms']:.1f} ms {res['start_parts']}, seconds {res['seconds_ms']:.1f} ms, median iteration "
            f"{res['iteration_median_ms']:.2f} ms; {res['resident_shards']} resident "
            f"shards, {res['slots']} slots, budget {budget})")
        for it in res["per_iter"]:
            log(f"    {it}")
        for k, run in enumerate(res["runs"]):   # each timed run's plan: ms, transfer modes, walks
            log(f"  run {k}: " + " | ".join(f"{ms} {modes} {walks}" for ms, modes, walks in run))
    for label, v in values.items():   # compressed against plain (PageRank: sums in another order)
        if label in peers and peers[label][0] in values:
            p = values[peers[label][0]]
            v = v[peers[label][1].to_internal(store.labels())]   # in the plain store's vertex order
            out[label]["equal_plain"] = bool(np.array_equal(v, p))
            if label.startswith("pr"):
                out[label]["max_rel_diff_plain"] = float(np.max(np.abs(v - p) / np.maximum(np.abs(p), 1e-300)))
            log(f"{label}: equal to the plain store's run {out[label]['equal_plain']} "
                f"{out[label].get('max_rel_diff_plain', '')}")
    if not args.skip_scipy:
        labels, levels, secs = scipy_reference(store, source)
        out["scipy_s"] = secs
        if args.sssp:
            from scipy.sparse import csgraph
            t0 = time.perf_counter()
            dist = csgraph.dijkstra(min_weight_csr(wstore), indices=wsource)
            out["scipy_sssp_s"] = time.perf_counter() - t0
        for label, v in values.items():
            if label.startswith("pr") or label in peers:   # (compressed: checked against plain above)
                continue
            if label.startswith("sssp"):
                got = np.where(v >= np.finfo(v.dtype).max / 2, np.inf, v)
                out[label]["equal_scipy"] = bool(np.allclose(got, dist, rtol=1e-12, atol=0)
                                                 and np.array_equal(np.isinf(got), np.isinf(dist)))
                continue
            ref = levels if label.startswith("bfs") else labels
            if label.startswith("bfs"):
                v = np.where(v >= gr.algorithms.bfs.UNREACHED, -1, v)
            out[label]["equal_scipy"] = bool(np.array_equal(v, ref))
        log(f"scipy ({secs:.1f}s): equal " + ", ".join(f"{k} {out[k].get('equal_scipy')}" for k in values
                                                      if not k.startswith("pr") and k not in peers))
    if profiles:
        with open(args.profile, "w") as fh:
            fh.write("\n\n".join(profiles))
    return finish(out, args)


if __name__ == "__main__":
    sys.exit(main())
