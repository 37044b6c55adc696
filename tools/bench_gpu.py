"""GPU path benchmark (issue 4 Evidence): RMAT graph, PageRank / BFS / CC on the CUDA backend.

Usage (on the GPU machine): python3 tools/bench_gpu.py --scale 24 [--shards 32] [--json out.json]

In one process: (1) pinned host->device bandwidth; (2) an RMAT graph generated and sharded here;
(3) in-memory PageRank (budget >= store) per iteration against cuSPARSE SpMV through CuPy on the
same matrix; (4) with a memory budget of vertex state + 1/4 of the shard data PageRank needs, the
achieved streaming bandwidth of a dense iteration as a percentage of (1), and the same with every
shard streamed; (5) BFS from the highest-degree vertex with the 1/4 budget: bytes copied against
all shards x iterations, and the CPU path on this host's cores; (6) CC with the 1/4 budget.

``--transfers`` runs only (1), (2) and the transfer modes (issue 8): BFS and CC pulled at the 1/4
budget with each streamed shard copied, compacted, zero-copied or chosen by the cost model
(``auto``), and BFS with direction auto (pushed throughout: copy, zerocopy, auto),
medians of ``--repeat`` runs after a first one that fills the pinned cache, the bytes each moved
against the floor of every out-edge crossing the link once, and the modes chosen per iteration.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402


def log(*a):
    print(*a, flush=True)


def steady(stats, skip=1):
    """Median seconds of the iterations after the first ``skip`` (they read the store)."""
    rest = stats[skip:] or stats
    return float(np.median([s.time_total for s in rest]))


#: pinned host budget of every run here: the graph stays in pinned host memory after its first
#: read, as the peers' figures assume (the default is min(device budget, 8 GiB))
PINNED = 8 << 30


def run_cuda(program, store, **options):
    """gr.run on the CUDA executor; options other than memory_budget / max_iter go to it."""
    budget = options.pop("memory_budget", None)
    max_iter = options.pop("max_iter", None)
    return gr.run(program, store, device="cuda", memory_budget=budget, pinned_budget=PINNED,
                  max_iter=max_iter, backend_options=options)


def unbounded_model(program, store, push=False):
    """The memory model of ``program`` with everything resident (static bytes, shard regions);
    ``push``: as a session that may plan push iterations holds it."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.memory import plan_memory
    from grstream.engine.contract import is_dense, needed_arrays
    spec = type(program).spec
    fp = CudaExecutor.footprint(spec, is_dense(spec), CudaExecutor.make_setup(store, push=push))
    return plan_memory(store, needed_arrays(spec, push=push), fp)


def budget_quarter(program, store, push=False):
    """Vertex state + 1/4 of the shard bytes ``program`` moves, and the all-streamed minimum."""
    from grstream.errors import MemoryBudgetError
    try:
        gr.run(program, store, device="cuda", memory_budget=1)
    except MemoryBudgetError as exc:
        minimum = exc.minimum
    model = unbounded_model(program, store, push)
    needed = sum(model.regions)
    return model.static_bytes + model.scratch_bytes + needed // 4, minimum, needed


def bfs_twice(store, source, budget, **options):
    """BFS twice in one Session: the first run fills the pinned host cache from the store, the
    second finds the graph in pinned host memory (as the peers' figures assume). Each run's time
    covers start (state upload and seeding) and every iteration; the host-side init() is not
    counted."""
    runs = []
    with gr.Session(store, device="cuda", memory_budget=budget, pinned_budget=PINNED, **options) as session:
        for _ in range(2):
            r = session.run(gr.algorithms.bfs.BFS(source=source))
            start = dict(r.info["start"])
            # seeding: the engine's host scan for the seed ids plus the executor's seed work
            start["seed_s"] += r.info.get("seed_scan_s", 0.0)
            # start() is the wall clock from the state upload to the seeding read back (the upload
            # overlaps the seed scan, so its parts no longer add up to it)
            starts = dict(start, start_s=r.info.get("start_wall_s", start["state_s"] + start["seed_s"]))
            runs.append((starts["start_s"] + sum(s.time_total for s in r.stats), r.stats, r.values["level"], starts))
        info = r.info
    return runs, info


def stream_budget(program, store):
    """(static vertex bytes, largest shard region) of ``program`` on ``store``."""
    model = unbounded_model(program, store)
    return model.static_bytes + model.scratch_bytes, max(model.regions)


def cusparse_pagerank_ms(store, repeat=20):
    """Median ms of one cuSPARSE SpMV y = A^T D^-1 x (float64) through CuPy, the graph in GPU memory."""
    import cupy as cp
    import cupyx.scipy.sparse as cps
    a = store.to_scipy("csr", weights=False).astype(np.float64)
    at = a.T.tocsr()
    at.sum_duplicates()
    m = cps.csr_matrix(at)
    x = cp.full(at.shape[0], 1.0 / at.shape[0])
    y = m @ x
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        y = m @ x
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    del m, x, y
    cp.get_default_memory_pool().free_all_blocks()
    return float(np.median(times)), int(at.nnz)


def directed(store, make, mode, budget, threshold=None, repeat=2, queue_fraction=None):
    """Run ``make()`` ``repeat`` times in one Session with direction ``mode`` (push | pull | auto,
    the executor's threshold unless ``threshold``); the last run's time (start() + iterations, as
    :func:`bfs_twice`), its per-iteration (direction, format, changed vertices, ms, bytes copied)
    and values."""
    with gr.Session(store, device="cuda", memory_budget=budget, pinned_budget=PINNED, direction=mode,
                    push_threshold=threshold, queue_fraction=queue_fraction) as session:
        for _ in range(repeat):
            r = session.run(make())
    per = [(s.plan["plan_direction"], s.plan["frontier_format"][0], int(s.changed_vertices),
            round(s.time_total * 1e3, 2), int(s.bytes_h2d), round(s.time_kernel * 1e3, 2)) for s in r.stats]
    start = r.info.get("start_wall_s", 0.0)
    return {"ms": (start + sum(s.time_total for s in r.stats)) * 1e3, "start_ms": start * 1e3,
            "iterations": r.iterations, "per_iter": per, "bytes_h2d": sum(p[4] for p in per),
            "residency": r.info["residency"], "direction": r.info["direction"]}, r.values


def direction_bench(store, out, args, wstore=None):
    """BFS in memory and at the 1/4 budget, CC at the 1/4 budget, SSSP weighted: pull, push and
    the switch (auto, the GPU's threshold) side by side, results checked equal; with
    ``--direction-only`` also the switch threshold swept and the frontier format forced."""
    from grstream.backends.cuda.facts import PUSH_THRESHOLD
    modes = ["pull", "push", "auto"] if args.direction_only else [args.direction]
    source = int(np.argmax(store.out_degree()))
    BFS, CC = gr.algorithms.bfs.BFS, gr.algorithms.cc.ConnectedComponents
    # the 1/4 budget of a run that may push: vertex state with the push buffers + 1/4 of the
    # shard bytes push and pull read (pull-only runs: the pull footprint, as before)
    bq = {m: budget_quarter(BFS(), store, push=m != "pull")[0] for m in modes}
    cq = {m: budget_quarter(CC(), store, push=m != "pull")[0] for m in modes}
    cases = [("bfs_inmem", lambda: BFS(source=source), None, "level", store),
             ("bfs_quarter", lambda: BFS(source=source), bq, "level", store),
             ("cc_quarter", CC, cq, "label", store)]
    if wstore is not None:
        SSSP = gr.algorithms.sssp.SSSP
        wsource = int(np.argmax(wstore.out_degree()))
        sq = {m: budget_quarter(SSSP(source=wsource), wstore, push=m != "pull")[0] for m in modes}
        cases += [("sssp_inmem", lambda: SSSP(source=wsource), None, "dist", wstore),
                  ("sssp_quarter", lambda: SSSP(source=wsource), sq, "dist", wstore)]
    res = {}
    for label, make, budget, field, st in cases:
        ref = None
        for mode in modes:
            r, values = directed(st, make, mode, None if budget is None else budget[mode])
            if ref is None:
                ref = values[field]
            r["equal_first_mode"] = bool(np.array_equal(values[field], ref))
            res[f"{label}_{mode}"] = r
            log(f"{label} {mode} ({r['residency']}): {r['ms']:.1f} ms (start {r['start_ms']:.1f}), "
                f"{r['iterations']} iterations, {r['bytes_h2d'] / 1e9:.3f} GB copied, same values: "
                f"{r['equal_first_mode']}; per iteration (direction, format, changed, ms, bytes, kernel ms): "
                f"{r['per_iter']}")
    if args.direction_only:
        for th in (1 / 20, 1 / 8, 1 / 4, 1 / 2, 1.0):
            for label, budget in (("bfs_inmem", None), ("bfs_quarter", bq["auto"])):
                r, _ = directed(store, lambda: BFS(source=source), "auto", budget, th)
                res[f"{label}_auto_{th:.3f}"] = r
                log(f"{label} auto, threshold {th:.3f}: {r['ms']:.1f} ms; {r['per_iter']}")
        for qf in (0.0, 1.0):
            r, _ = directed(store, lambda: BFS(source=source), "push", None, queue_fraction=qf)
            res[f"bfs_inmem_push_queue{qf:g}"] = r
            log(f"bfs_inmem push, {'queue' if qf else 'bitmap'} always: {r['ms']:.1f} ms; {r['per_iter']}")
    out["directions"] = res
    out["push_threshold"] = PUSH_THRESHOLD


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--pr-iters", type=int, default=10)
    ap.add_argument("--dir", default=None, help="where to write the store (default: a temp dir)")
    ap.add_argument("--json", default=None, help="write all numbers here")
    ap.add_argument("--skip-cpu", action="store_true", help="leave out the CPU BFS comparison")
    ap.add_argument("--quick", action="store_true",
                    help="only the issue-7 figures: in-memory and 1/4-budget PageRank (default slots), "
                         "deterministic PageRank, BFS start() and iterations; no CPU, CC or variants")
    ap.add_argument("--direction", choices=("auto", "push", "pull"), default="auto",
                    help="direction of the direction runs (BFS, CC, SSSP): push, pull or the switch")
    ap.add_argument("--direction-only", action="store_true",
                    help="only BFS / CC / SSSP with pull, push and auto side by side (and the switch "
                         "threshold swept); no PageRank")
    ap.add_argument("--sssp-scale", type=int, default=None,
                    help="scale of the weighted RMAT graph of the SSSP runs (default --scale; 0: none)")
    ap.add_argument("--transfers", action="store_true",
                    help="only the transfer modes: BFS (pull, and auto: push) and CC at the 1/4 budget per mode")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per transfer mode")
    ap.add_argument("--sweep", action="store_true",
                    help="also time merge_items, slots and streams variants of PageRank")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_link import pinned_h2d_gbps
    out = {"date": datetime.date.today().isoformat(), "scale": args.scale, "shards": args.shards}

    link = pinned_h2d_gbps(mib=1024, repeat=5)
    out["pinned_h2d_gbps"] = link
    from grstream.backends import cuda
    out["device"] = cuda.available()[1]
    log(f"device {out['device']}: pinned H2D {link:.1f} GB/s")

    tmp = args.dir or tempfile.mkdtemp(prefix="grstream-bench-")
    path = os.path.join(tmp, f"rmat{args.scale}.h5")
    t0 = time.perf_counter()
    from grstream.io.generate import rmat
    src, dst = rmat(args.scale, args.edge_factor, seed=1)
    t1 = time.perf_counter()
    gr.build_shards((src, dst), path, num_shards=args.shards, progress=False)
    t2 = time.perf_counter()
    del src, dst
    store = gr.open(path)
    out.update(num_vertices=int(store.num_vertices), num_edges=int(store.num_edges),
               store_bytes=int(store.nbytes()), generate_s=t1 - t0, build_s=t2 - t1)
    log(f"RMAT scale {args.scale}: {store.num_vertices:,} vertices, {store.num_edges:,} edges, "
        f"store {store.nbytes() / 1e9:.2f} GB, {store.num_shards} shards; generated {t1 - t0:.1f}s, "
        f"sharded {t2 - t1:.1f}s")

    if args.transfers:
        bench_transfers(store, out, args.repeat)
        return finish(out, args)

    wstore = None
    sssp_scale = args.scale if args.sssp_scale is None else args.sssp_scale
    if sssp_scale:
        t0 = time.perf_counter()
        wpath = os.path.join(tmp, f"rmat{sssp_scale}w.h5")
        src, dst, w = rmat(sssp_scale, args.edge_factor, seed=1, weights=True)
        gr.build_shards((src, dst, w), wpath, num_shards=args.shards, progress=False, weighted=True)
        del src, dst, w
        wstore = gr.open(wpath)
        log(f"weighted RMAT scale {sssp_scale} for SSSP: {wstore.num_edges:,} edges, built in "
            f"{time.perf_counter() - t0:.1f}s")
    if args.direction_only:
        direction_bench(store, out, args, wstore)
        return finish(out, args)

    PageRank = gr.algorithms.pagerank.PageRank
    pr = lambda: PageRank(tol=0.0)  # noqa: E731  (dense: never converges early)

    # ---- in-memory PageRank vs cuSPARSE
    ms, nnz = cusparse_pagerank_ms(store)
    out["cusparse_spmv_ms"] = ms
    res = {}
    for lb in ("auto", "twc", "merge"):
        if args.quick and lb != "auto":
            res[lb] = res[lb + "_kernel"] = float("nan")
            continue
        r = run_cuda(pr(), store, max_iter=args.pr_iters, load_balance=lb)
        res[lb] = steady(r.stats) * 1e3
        res[lb + "_kernel"] = float(np.median([s.time_kernel for s in r.stats[1:]])) * 1e3
        if lb == "auto":
            out["pr_inmem_info"] = r.info
            first = r.stats[0]
            out["pr_inmem_first_iter_ms"] = first.time_total * 1e3
            ranks_inmem = r.values["rank"]
    out["pr_inmem_ms"] = res
    log(f"PageRank in memory: {res['auto']:.2f} ms/iter, kernels busy {res['auto_kernel']:.2f} ms "
        f"(twc {res['twc']:.2f}, merge {res['merge']:.2f}); "
        f"cuSPARSE SpMV {ms:.2f} ms ({nnz:,} nnz): ratio {res['auto'] / ms:.2f}x")

    if args.sweep:
        sweep = {}
        for items in (4, 8, 16):
            r = run_cuda(pr(), store, max_iter=4, load_balance="merge", merge_items=items)
            sweep[f"inmem_merge_items_{items}"] = steady(r.stats) * 1e3
        vbytes, largest = stream_budget(pr(), store)
        for slots, streams in ((2, 1), (2, 4), (3, 4), (4, 4)):
            # exactly ``slots`` slots and nothing resident: every shard streams
            r = run_cuda(pr(), store, max_iter=4, memory_budget=vbytes + slots * largest,
                         slots=slots, streams=streams)
            rest = r.stats[1:]
            sweep[f"stream_slots{slots}_streams{streams}"] = {
                "ms": steady(r.stats) * 1e3, "residency": r.info["residency"],
                "hidden": float(np.median([s.copy_hidden / max(s.time_copy, 1e-9) for s in rest])),
                "t_copy": float(np.median([s.time_copy for s in rest])) * 1e3,
                "t_kernel": float(np.median([s.time_kernel for s in rest])) * 1e3}
        out["sweep"] = sweep
        for k, v in sweep.items():
            log(f"sweep {k}: {v}")

    # ---- streaming PageRank with 1/4 budget and all-streamed
    quarter, minimum, needed = budget_quarter(pr(), store)
    out.update(pr_budget_quarter=quarter, pr_budget_minimum=minimum, pr_needed_bytes=needed)
    variants = [("quarter", quarter, {}), ("quarter_64mb_slots", quarter, {"slot_bytes": 64 << 20}),
                ("quarter_one_shard_per_copy", quarter, {"slot_bytes": 0, "slots": 3}),
                ("quarter_128mb_slots", quarter, {"slot_bytes": 128 << 20}), ("minimum", minimum, {})]
    for label, b, opts in variants[:2] if args.quick else variants:
        r = run_cuda(pr(), store, max_iter=args.pr_iters, memory_budget=b, **opts)
        rest = r.stats[1:]
        t = float(np.median([s.time_total for s in rest]))
        h2d = float(np.median([s.bytes_h2d for s in rest]))
        gbps = h2d / t / 1e9
        hidden = float(np.median([s.copy_hidden / s.time_copy if s.time_copy else 0 for s in rest]))
        err = float(np.max(np.abs(r.values["rank"] - ranks_inmem) / np.maximum(ranks_inmem, 1e-300)))
        out[f"pr_{label}"] = {"ms": t * 1e3, "bytes_h2d": h2d, "slots": r.info["slots"],
                              "t_copy_ms": float(np.median([s.time_copy for s in rest])) * 1e3,
                              "t_kernel_ms": float(np.median([s.time_kernel for s in rest])) * 1e3, "gbps": gbps, "pct_link": 100 * gbps / link,
                              "copy_hidden_frac": hidden, "residency": r.info["residency"],
                              "cached_shards": r.info["memory"]["resident_shards"],
                              "first_iter_ms": r.stats[0].time_total * 1e3, "max_rel_diff_vs_inmem": err,
                              "copy_gbps": float(np.median([s.bytes_h2d / max(s.time_copy, 1e-9) / 1e9 for s in rest])),
                              "copy_units": float(np.median([s.copies for s in rest])),
                              "shards_copied": float(np.median([s.shards_copied for s in rest])),
                              "slot_bytes": r.info["slot_bytes"]}
        log(f"PageRank budget {label} ({b / 1e9:.2f} GB, {r.info['residency']}, {r.info['slots']} slots of "
            f"{r.info['slot_bytes'] / 1e6:.0f} MB, {out[f'pr_{label}']['shards_copied']:.0f} shards in "
            f"{out[f'pr_{label}']['copy_units']:.0f} copies, "
            f"{r.info['memory']['resident_shards']}/{store.num_shards} resident): {t * 1e3:.2f} ms/iter, "
            f"{h2d / 1e9:.3f} GB copied -> {gbps:.1f} GB/s = {100 * gbps / link:.1f}% of pinned H2D; "
            f"copy busy {out[f'pr_{label}']['t_copy_ms']:.2f} ms, kernels {out[f'pr_{label}']['t_kernel_ms']:.2f} ms, "
            f"copy hidden {100 * hidden:.0f}%; max rel diff vs in-memory {err:.1e}")

    # ---- deterministic PageRank (TWC only, no float atomics): in memory and at the 1/4 budget
    det = {}
    for label, b in (("inmem", None), ("quarter", quarter)):
        r = run_cuda(pr(), store, max_iter=args.pr_iters, memory_budget=b, deterministic=True)
        det[label] = (steady(r.stats) * 1e3, r.values["rank"])
    out["pr_deterministic"] = {"inmem_ms": det["inmem"][0], "quarter_ms": det["quarter"][0],
                               "bit_equal": bool(np.array_equal(det["inmem"][1].view(np.uint64),
                                                                det["quarter"][1].view(np.uint64)))}
    log(f"PageRank deterministic: in memory {det['inmem'][0]:.2f} ms/iter, 1/4 budget "
        f"{det['quarter'][0]:.2f} ms/iter; ranks bit-equal: {out['pr_deterministic']['bit_equal']}")

    # ---- BFS with the 1/4 budget
    source = int(np.argmax(store.out_degree()))
    BFS = gr.algorithms.bfs.BFS
    bq, _, bneeded = budget_quarter(BFS(), store)
    runs, info = bfs_twice(store, source, bq)
    for label, (secs, stats, _, starts) in zip(("first", "second"), runs):
        out[f"bfs_{label}"] = {"ms": secs * 1e3, "iterations": len(stats),
                               "start_ms": starts["start_s"] * 1e3,
                               "start_state_ms": starts["state_s"] * 1e3,
                               "start_seed_ms": starts["seed_s"] * 1e3,
                               "iter_ms": sum(s.time_total for s in stats) * 1e3,
                               "time_read_ms": sum(s.time_read for s in stats) * 1e3,
                               "bytes_h2d": sum(s.bytes_h2d for s in stats),
                               "all_shards_x_iters": bneeded * len(stats),
                               "shards_processed": sum(s.shards_processed for s in stats),
                               "shards_skipped": sum(s.shards_skipped for s in stats),
                               "shards_copied": sum(s.shards_copied for s in stats),
                               "per_iter": [(s.active_vertices, s.shards_processed, s.bytes_h2d,
                                             round(s.time_total * 1e3, 2)) for s in stats]}
    out["bfs_info"] = info
    levels = runs[1][2]
    for label in ("first", "second"):
        b = out[f"bfs_{label}"]
        log(f"BFS {label} run from {source} (budget {bq / 1e9:.2f} GB, {info['residency']}): "
            f"{b['iterations']} iterations, {b['ms']:.1f} ms (store reads waited {b['time_read_ms']:.1f} ms); "
            f"copied {b['bytes_h2d'] / 1e9:.3f} GB vs all shards x iterations "
            f"{b['all_shards_x_iters'] / 1e9:.2f} GB; {b['shards_skipped']} of "
            f"{b['shards_skipped'] + b['shards_processed']} shard visits skipped; start() "
            f"{b['start_ms']:.1f} ms (state upload {b['start_state_ms']:.1f}, seeding {b['start_seed_ms']:.2f})")
    inmem, _ = bfs_twice(store, source, None)
    for label, (secs, stats, lv, starts) in zip(("first", "second"), inmem):
        out[f"bfs_inmem_{label}"] = {"ms": secs * 1e3, "iter_ms": sum(s.time_total for s in stats) * 1e3,
                                     "start_ms": starts["start_s"] * 1e3,
                                     "start_state_ms": starts["state_s"] * 1e3,
                                     "start_seed_ms": starts["seed_s"] * 1e3,
                                     "equal": bool(np.array_equal(lv, levels))}
        b = out[f"bfs_inmem_{label}"]
        log(f"BFS in GPU memory, {label} run: {b['ms']:.1f} ms ({b['iter_ms']:.1f} ms in iterations); start() "
            f"{b['start_ms']:.1f} ms (state upload {b['start_state_ms']:.1f}, seeding {b['start_seed_ms']:.2f}); "
            f"same levels: {b['equal']}")
    if args.quick:
        return finish(out, args)
    grouped, ginfo = bfs_twice(store, source, bq, slot_bytes=64 << 20, slots=2)
    gsecs, gstats, glevels, _ = grouped[1]
    out["bfs_second_grouped"] = {"ms": gsecs * 1e3, "iter_ms": sum(s.time_total for s in gstats) * 1e3,
                                 "bytes_h2d": sum(s.bytes_h2d for s in gstats),
                                 "equal": bool(np.array_equal(glevels, levels))}
    log(f"BFS second run with 64 MB slots (2 slots, shards grouped): {gsecs * 1e3:.1f} ms "
        f"({out['bfs_second_grouped']['iter_ms']:.1f} ms in iterations), same levels: "
        f"{out['bfs_second_grouped']['equal']}; default (one shard per copy, 3 slots): "
        f"{out['bfs_second']['ms']:.1f} ms ({out['bfs_second']['iter_ms']:.1f} ms in iterations)")
    if not args.skip_cpu:
        t0 = time.perf_counter()
        c = gr.run(BFS(source=source), store, device="cpu")
        out["bfs_cpu"] = {"s": time.perf_counter() - t0, "iter_s": sum(s.time_total for s in c.stats),
                          "cores": os.cpu_count(), "equal": bool(np.array_equal(c.values["level"], levels))}
        log(f"BFS on the CPU path ({os.cpu_count()} cores): {out['bfs_cpu']['iter_s']:.2f}s in iterations; "
            f"same levels: {out['bfs_cpu']['equal']}")

    # ---- CC with the 1/4 budget
    CC = gr.algorithms.cc.ConnectedComponents
    cq, _, _ = budget_quarter(CC(), store)
    r = run_cuda(CC(), store, memory_budget=cq)
    out["cc"] = {"iterations": r.iterations, "iter_ms": sum(s.time_total for s in r.stats) * 1e3,
                 "bytes_h2d": sum(s.bytes_h2d for s in r.stats),
                 "components": int(len(np.unique(r.values["label"])))}
    log(f"CC (budget {cq / 1e9:.2f} GB): {r.iterations} iterations, {out['cc']['iter_ms']:.1f} ms in "
        f"iterations, {out['cc']['bytes_h2d'] / 1e9:.2f} GB copied, {out['cc']['components']:,} components")
    direction_bench(store, out, args, wstore)
    return finish(out, args)


MODES = ("copy", "compact", "zerocopy", "auto")
PUSH_MODES = ("copy", "zerocopy", "auto")


def bench_transfers(store, out, repeat):
    """BFS and CC at the 1/4 budget per transfer mode (see the module docstring)."""
    source = int(np.argmax(store.out_degree()))
    floor = int(store.num_edges) * np.dtype(store.id_dtype).itemsize   # every out-edge once
    out["transfers"] = res = {"floor_bytes": floor, "source": source}
    make = {"bfs": lambda: gr.algorithms.bfs.BFS(source=source),
            "cc": lambda: gr.algorithms.cc.ConnectedComponents()}
    # pull per mode (BFS, CC), then BFS with direction auto (the GPU pushes throughout) per mode:
    # push units take copy or zerocopy (never compact), so push runs leave compact out
    cases = [("bfs", "pull", MODES), ("bfs", "auto", PUSH_MODES), ("cc", "pull", MODES)]
    reference = {}
    for algo, direction, modes in cases:
        program = make[algo]
        budget, _, _ = budget_quarter(program(), store, push=direction != "pull")
        field = "level" if algo == "bfs" else "label"
        name = algo if direction == "pull" else f"{algo}_push"
        for mode in modes:
            with gr.Session(store, device="cuda", memory_budget=budget, pinned_budget=PINNED,
                            transfer=mode, direction=direction) as session:
                # host compaction takes seconds per run on this link's scale: one timed run
                runs = [session.run(program()) for _ in range((1 if mode == "compact" else repeat) + 1)]
            timed = runs[1:]   # the first run filled the pinned host cache from the store
            if algo not in reference:   # pull + copy
                reference[algo] = timed[0].values[field]
            total = [r.info.get("start_wall_s", 0.0) + sum(s.time_total for s in r.stats) for r in timed]
            iters = [sum(s.time_total for s in r.stats) for r in timed]
            last = timed[-1]
            moved = {}
            for s in last.stats:
                for m, b in s.transfer_bytes.items():
                    moved[m] = moved.get(m, 0) + b
            per_iter = []
            for s in last.stats:
                chosen = {}
                for m in s.plan.get("shard_modes", {}).values():
                    chosen[m] = chosen.get(m, 0) + 1
                per_iter.append({"iteration": s.iteration, "active": s.active_vertices,
                                 "direction": s.plan.get("plan_direction", "pull"),
                                 "modes": chosen, "skipped": s.shards_skipped,
                                 "bytes": dict(s.transfer_bytes),
                                 "seconds": {m: round(t * 1e3, 3) for m, t in s.transfer_seconds.items()},
                                 "pack_ms": round(s.time_pack * 1e3, 3), "ms": round(s.time_total * 1e3, 3)})
            entry = res[f"{name}_{mode}"] = {
                "ms": float(np.median(total)) * 1e3, "ms_all": [t * 1e3 for t in total],
                "iter_ms": float(np.median(iters)) * 1e3, "iterations": last.iterations,
                "bytes": moved, "bytes_total": int(sum(moved.values())),
                "bytes_h2d": int(sum(s.bytes_h2d for s in last.stats)),
                "equal": bool(np.array_equal(last.values[field], reference[algo])),
                "direction": direction,
                "budget": budget, "residency": last.info["memory"]["residency"],
                "resident_shards": last.info["memory"]["resident_shards"], "per_iter": per_iter}
            log(f"{algo.upper()} 1/4 budget, direction={direction}, transfer={mode}: {entry['ms']:.1f} ms median of {len(timed)} "
                f"({entry['iter_ms']:.1f} ms in {entry['iterations']} iterations); moved "
                f"{entry['bytes_total'] / 1e9:.3f} GB ({', '.join(f'{m} {b / 1e9:.3f}' for m, b in moved.items())}) "
                f"vs floor {floor / 1e9:.2f} GB; same result as pull+copy: {entry['equal']}")
            for it in per_iter:
                log(f"    it {it['iteration']} {it['direction']}: active {it['active']:,}, modes {it['modes']}, "
                    f"skipped {it['skipped']}, {it['ms']:.2f} ms, pack {it['pack_ms']:.2f} ms, "
                    f"link s {it['seconds']}")


def finish(out, args):
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
