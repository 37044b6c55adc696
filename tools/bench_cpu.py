#!/usr/bin/env python3
"""CPU engine benchmark: PageRank per iteration, BFS and CC totals on an RMAT graph, with a budget
holding the whole store and with 1/8 of it, side by side with scipy in the same run; and BFS / CC
per direction (pull, push, auto: issue 8) in an open Session against scipy's csgraph.

    python tools/bench_cpu.py --scale 20 [--threads 2] [--record docs/BENCHMARKS.md] [--json FILE]

Peers: scipy's CSR SpMV (one PageRank iteration: A^T D^-1 x), scipy.sparse.csgraph
breadth_first_order and connected_components. Every figure is the median of --repeat runs.
The direction comparison runs BFS from the highest-out-degree vertex (issue 8's definition) and
CC with the store resident in a Session (a warm-up run first), so it times the iterations and
the run's setup, not reading the store.
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
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import grstream as gr  # noqa: E402
from grstream.algorithms import bfs, cc, pagerank  # noqa: E402
from grstream.engine.schedule import needed_arrays, shard_bytes  # noqa: E402
from grstream.errors import MemoryBudgetError  # noqa: E402
from grstream.io.generate import rmat  # noqa: E402


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def budget_eighth(program, store):
    """Vertex state plus 1/8 of the shard bytes the program streams (at least the minimum)."""
    names = needed_arrays(type(program).spec)
    stream = int(shard_bytes(store, names).sum())
    try:
        gr.run(program, store, memory_budget=1, max_iter=0)
    except MemoryBudgetError as exc:
        minimum = exc.minimum
    largest = int(shard_bytes(store, names).max())
    vertex = minimum - largest
    return max(minimum, vertex + stream // 8)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10, help="PageRank iterations timed per run")
    ap.add_argument("--record", help="append a dated section to this markdown file")
    ap.add_argument("--json", help="write the numbers as JSON")
    ap.add_argument("--threads", type=int, default=None, help="CPU executor threads (default: cores)")
    ap.add_argument("--only-directions", action="store_true",
                    help="skip the PageRank / budget section, run the direction comparison only")
    ap.add_argument("--modes", default="pull,push,auto",
                    help="direction modes compared (comma-separated): pull, push, auto, and sync "
                         "(auto with synchronous push plans: push_async=False)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        t0 = time.perf_counter()
        src, dst = rmat(args.scale, edge_factor=args.edge_factor, seed=1)
        n = 1 << args.scale
        path = Path(tmp) / "rmat.h5"
        gr.build_shards(np.stack([src, dst], axis=1), path, num_shards=args.shards, progress=False)
        print(f"graph: RMAT scale {args.scale}, {len(src):,} edges, built in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        store = gr.open(path)
        out = {"scale": args.scale, "vertices": store.num_vertices, "edges": store.num_edges,
               "shards": store.num_shards, "threads": os.cpu_count()}

        # --- scipy peers on the same edges
        a_t = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
        outdeg = np.bincount(src, minlength=n).astype(np.float64)
        inv = np.where(outdeg > 0, 1.0 / np.maximum(outdeg, 1), 0.0)
        x = np.full(n, 1.0 / n)
        out["scipy_spmv_s"] = median_time(lambda: a_t @ (x * inv), max(5, args.repeat))
        source = int(src[0])
        a = a_t.T.tocsr()
        out["scipy_bfs_s"] = median_time(lambda: csgraph.breadth_first_order(a, source), args.repeat)
        out["scipy_cc_s"] = median_time(lambda: csgraph.connected_components(a, connection="weak"),
                                        args.repeat)

        directions(out, store, a, args)
        # --- grstream, whole store in memory and 1/8 of it
        for label, budget_of in () if args.only_directions else (("all", lambda p: None), ("eighth", lambda p: budget_eighth(p, store))):
            pr_budget = budget_of(pagerank.PageRank())
            per_iter = []
            for _ in range(args.repeat):
                # tol 0: never converges early (the program takes it; pagerank() asks for tol > 0)
                r = gr.run(pagerank.PageRank(tol=0.0), store, max_iter=args.iterations,
                           memory_budget=pr_budget)
                # the first iteration also fills the cache in memory mode: time the steady state
                per_iter.append(statistics.median(s.time_total for s in r.stats[1:]))
            out[f"pagerank_iter_{label}_s"] = statistics.median(per_iter)
            out[f"pagerank_budget_{label}"] = pr_budget
            bfs_budget = budget_of(bfs.BFS(source=source))
            out[f"bfs_{label}_s"] = median_time(lambda: bfs.bfs(store, source, memory_budget=bfs_budget),
                                                args.repeat)
            cc_budget = budget_of(cc.ConnectedComponents())
            out[f"cc_{label}_s"] = median_time(
                lambda: cc.connected_components(store, memory_budget=cc_budget), args.repeat)
        store.close()

    if not args.only_directions:
        out["pagerank_vs_spmv"] = out["pagerank_iter_all_s"] / out["scipy_spmv_s"]
        out["pagerank_eighth_vs_all"] = out["pagerank_iter_eighth_s"] / out["pagerank_iter_all_s"]
        out["bfs_eighth_vs_all"] = out["bfs_eighth_s"] / out["bfs_all_s"]
        out["cc_eighth_vs_all"] = out["cc_eighth_s"] / out["cc_all_s"]
    out["machine"] = f"{cpu_model()}, {os.cpu_count()} cores"
    out["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out["load"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())   # 1, 5, 15 min, at the end
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    if args.record:
        record(args.record, out)
    return 0


#: Session options of each direction mode of the comparison
MODES = {"pull": {"direction": "pull"}, "push": {"direction": "push"}, "auto": {"direction": "auto"},
         "sync": {"direction": "auto", "push_async": False}}


def directions(out, store, a, args):
    """BFS (from the highest-out-degree vertex) and CC per direction in open Sessions, and
    scipy's csgraph on the same CSR. Each repeat times scipy and then every mode back to back,
    so a ratio compares runs under the same machine load (the machine may be shared): the
    figures are medians of the times and medians of the per-repeat ratios."""
    source = int(np.argmax(store.out_degree()))
    out["dir_source"] = source
    out["dir_threads"] = args.threads or min(8, os.cpu_count() or 1)
    peers = {"bfs": lambda: csgraph.breadth_first_order(a, source),
             "cc": lambda: csgraph.connected_components(a, connection="weak")}
    makers = {"bfs": lambda: bfs.BFS(source=source), "cc": lambda: cc.ConnectedComponents()}
    modes = tuple(args.modes.split(","))
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}: choose among {', '.join(MODES)}")
    sessions = {m: gr.Session(store, threads=args.threads, **MODES[m]) for m in modes}
    try:
        plans = {}
        for m, s in sessions.items():   # warm-up: loads the resident shards
            for name, make in makers.items():
                r = s.run(make())
                plans[name, m] = "".join(("A" if st.plan.get("push_async") else "P")
                                         if st.plan.get("plan_direction") == "push" else "l"
                                         for st in r.stats)
        times = {}
        for _ in range(args.repeat):
            for name, make in makers.items():
                t0 = time.perf_counter()
                peers[name]()
                times.setdefault((name, "scipy"), []).append(time.perf_counter() - t0)
                for m, s in sessions.items():
                    t0 = time.perf_counter()
                    s.run(make())
                    times.setdefault((name, m), []).append(time.perf_counter() - t0)
    finally:
        for s in sessions.values():
            s.close()
    out["dir_modes"] = list(modes)
    for name in makers:
        out[f"dir_scipy_{name}_s"] = statistics.median(times[name, "scipy"])
        for m in modes:
            out[f"dir_{name}_{m}_s"] = statistics.median(times[name, m])
            out[f"dir_{name}_{m}_plan"] = plans[name, m]
            out[f"dir_{name}_{m}_vs_scipy"] = statistics.median(
                t / p for t, p in zip(times[name, m], times[name, "scipy"]))


def record_directions(o):
    ms = lambda s: f"{s * 1e3:.1f} ms"  # noqa: E731
    rows = []
    modes = o.get("dir_modes", ["pull", "push", "auto"])
    titles = {"pull": "pull", "push": "push", "auto": "auto (default)",
              "sync": "auto, synchronous push"}
    for name, peer in (("bfs", "breadth_first_order"), ("cc", "connected_components")):
        cells = " | ".join(f"{ms(o[f'dir_{name}_{m}_s'])} ({o[f'dir_{name}_{m}_vs_scipy']:.2f}x; "
                           f"`{o[f'dir_{name}_{m}_plan']}`)" for m in modes)
        rows.append(f"| {name.upper()} | {cells} | {ms(o[f'dir_scipy_{name}_s'])} (csgraph.{peer}) |")
    head = " | ".join(titles[m] for m in modes)
    rule = " | ".join("---" for _ in modes)
    return f"""
### Direction per iteration (issue 8), RMAT scale {o['scale']} ({o['date']})
Machine: {o['machine']}; CPU executor with {o['dir_threads']} threads. `python tools/bench_cpu.py
--scale {o['scale']} --threads {o['dir_threads']} --only-directions --modes {','.join(modes)}`. Open Sessions (shards
resident, a warm-up run first), scipy on the same CSR in the same run; each repeat runs scipy
and every mode back to back. BFS from the highest-out-degree vertex ({o['dir_source']}). Each
cell: median time (median of the per-repeat ratios to scipy; the iterations' directions,
P = push, A = asynchronous push, l = pull). Load average {o.get('load', '?')}.

| program | {head} | scipy |
| --- | {rule} | --- |
""" + "\n".join(rows) + "\n"


def record(path, o):
    ms = lambda s: f"{s * 1e3:.1f} ms"  # noqa: E731
    if "pagerank_iter_all_s" not in o:
        text = record_directions(o)
        _append(path, text)
        return
    text = f"""
## CPU engine, RMAT scale {o['scale']} ({o['date']})
Machine: {o['machine']}. Graph: {o['vertices']:,} vertices, {o['edges']:,} edges, {o['shards']} shards.
`python tools/bench_cpu.py --scale {o['scale']}`; medians of repeated runs, scipy measured in the same run.
The 1/8 budget streams every shard it needs from the store each iteration through two read-ahead
buffers; the store file sits in the OS page cache, so this measures pread + compute, not a disk.
scipy's peers are single-threaded; grstream computes shards on a thread per core.

| what | grstream, whole store in memory | grstream, 1/8 budget (streaming) | scipy peer | ratios |
| --- | --- | --- | --- | --- |
| PageRank, one iteration | {ms(o['pagerank_iter_all_s'])} | {ms(o['pagerank_iter_eighth_s'])} | {ms(o['scipy_spmv_s'])} (CSR SpMV) | in-memory / SpMV = {o['pagerank_vs_spmv']:.2f} (goal <= 1.5); 1/8 / in-memory = {o['pagerank_eighth_vs_all']:.2f} (goal <= 2) |
| BFS, total | {ms(o['bfs_all_s'])} | {ms(o['bfs_eighth_s'])} | {ms(o['scipy_bfs_s'])} (csgraph.breadth_first_order) | 1/8 / in-memory = {o['bfs_eighth_vs_all']:.2f} |
| CC, total | {ms(o['cc_all_s'])} | {ms(o['cc_eighth_s'])} | {ms(o['scipy_cc_s'])} (csgraph.connected_components) | 1/8 / in-memory = {o['cc_eighth_vs_all']:.2f} |
""" + record_directions(o)
    _append(path, text)


def _append(path, text):
    p = Path(path)
    if not p.exists():
        p.write_text("# Benchmarks\n\nMeasured numbers, newest sections last. Each names its machine, date and command.\n")
    with open(p, "a") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
