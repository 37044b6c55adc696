#!/usr/bin/env python3
"""grstream's one call against the C libraries on the same graph, in the same run.

    python tools/bench_cpu_peers.py --scale 20 [--bc-scale 18 --bc-sources 64] [--repeat 3]
    python tools/bench_cpu_peers.py --only-bc --device cuda   # betweenness on the GPU vs igraph
    python tools/bench_cpu_peers.py --scale 22 --skip-bc --algos bfs,sssp --cli --memory --repeat 5

One RMAT graph (grstream's generator, seed 1, weights 1..255), parallel edges reduced to the
lightest and self-loops dropped, so every system holds the same simple weighted digraph: a
shard store (ids kept) for grstream, one CSR for scipy, and the graphs of python-graphblas,
networkit and igraph built from it (building is not timed). Each figure is the median of
--repeat runs of one call, after a warm-up call (grstream: two, so that "auto" has loaded its
compiled kernels), from an opened store (grstream: ``bfs``, ``sssp``, ``connected_components``,
``pagerank`` and ``betweenness`` of grstream.algorithms, set-up included: the open store keeps
the set-up of its earlier calls, and the first call on a freshly opened store, which makes it, is
given beside for BFS, SSSP, CC and PageRank); the systems' calls are
interleaved (one call of each per round), and each call's CPU seconds (the process's user +
system, every thread) are kept beside its wall seconds, since on a shared machine the wall
seconds follow the load. ``--cli``: ``grstream run bfs`` and ``grstream run sssp`` on the store,
each in a fresh process (after the kernels' extension modules are built and one untimed run),
their engine seconds and CPU seconds (the run's own ``seconds`` and ``cpu_seconds``) and the
process's, against scipy's call of the same run. A peer that is not installed is skipped and named
in the output. Every peer's result
is checked against grstream's before its time is kept: BFS levels, SSSP distances and CC
partitions equal, PageRank within 1e-6 in L1 (each runs to its own 1e-8-level tolerance),
betweenness (64 sources sampled as NetworkX samples them, unnormalized) within 1e-9 relative.

Peers: scipy.sparse.csgraph (breadth_first_order, dijkstra, connected_components) and a scipy
SpMV power iteration for PageRank; python-graphblas (level BFS, min-plus Bellman-Ford, PageRank
by vxm); networkit (BFS, Dijkstra, WeaklyConnectedComponents, PageRank); igraph (bfs,
distances, connected_components, pagerank, betweenness with ``sources``).
"""
import argparse
import datetime
import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cpu  # noqa: E402
import grstream as gr  # noqa: E402
from grstream.algorithms import bc, bfs, cc, pagerank, sssp  # noqa: E402
from grstream.io.generate import rmat  # noqa: E402

PEERS = ("scipy", "graphblas", "networkit", "igraph")
TOL = 1e-10   # PageRank: L1 change at which every system stops


def median_time(fn, repeat, warm=True):
    """(median seconds of ``repeat`` calls, a call's result): after one untimed warm-up call
    (imports, first touch of the inputs: what a process pays once), or with ``warm`` False the
    first call timed too."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if warm:
        return bench_cpu.median_time(fn, repeat), out
    return statistics.median([first] + [bench_cpu.median_time(fn, 1)
                                        for _ in range(repeat - 1)]), out


def timed(fn):
    """(wall seconds, CPU seconds, result) of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def interleaved(calls, repeat, warm=None):
    """{name: (median wall, median CPU, result)} of ``calls`` ({name: zero-argument call}): one
    warm-up call each (``warm``: {name: calls}, default 1), then ``repeat`` rounds of one call
    each, so that every system meets the same load."""
    out = {}
    for name, fn in calls.items():
        for _ in range((warm or {}).get(name, 1)):
            out[name] = fn()
    times = {name: [] for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            wall, cpu, _ = timed(fn)
            times[name].append((wall, cpu))
    return {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t), out[name])
            for name, t in times.items()}


def simple_graph(scale, seed=1):
    """(n, src, dst, weight) of an RMAT graph without self-loops, one (lightest) edge per pair,
    sorted by (src, dst); ids past the largest endpoint are left out."""
    src, dst, w = rmat(scale, edge_factor=16, seed=seed, weights=True)
    keep = src != dst
    src, dst, w = src[keep].astype(np.int64), dst[keep].astype(np.int64), w[keep]
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(len(src), dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst, w = src[first], dst[first], w[first]
    # an edge array gives a store of max id + 1 vertices: every system gets that many
    return int(max(src.max(), dst.max())) + 1, src, dst, w


def peers_available(wanted=PEERS):
    """{peer: module} of the peers of ``wanted`` installed (scipy always: the checks use it)."""
    have = {}
    for name, module in (("scipy", "scipy"), ("graphblas", "graphblas"),
                         ("networkit", "networkit"), ("igraph", "igraph")):
        if name not in wanted and name != "scipy":
            continue
        try:
            have[name] = importlib.import_module(module)
        except ImportError as exc:
            print(f"skipped {name}: {exc}", file=sys.stderr)
    return have


class Graphs:
    """The one graph in every system's form."""

    def __init__(self, n, src, dst, w, have):
        self.n, self.have = n, have
        self.A = sp.csr_matrix((w, (src, dst)), shape=(n, n))
        self.A.sort_indices()
        self.A1 = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
        if "graphblas" in have:
            gb = have["graphblas"]
            self.gbA = gb.Matrix.from_coo(src, dst, w, nrows=n, ncols=n)
        if "networkit" in have:
            nk = have["networkit"]
            self.nk = nk.GraphFromCoo((w, (src, dst)), n=n, directed=True, weighted=True)
            self.nk.indexEdges()
            self.nk1 = nk.GraphFromCoo((np.ones(len(src)), (src, dst)), n=n, directed=True,
                                       weighted=False)
        if "igraph" in have:
            ig = have["igraph"]
            self.ig = ig.Graph(n=n, edges=np.column_stack([src, dst]), directed=True)
            self.ig.es["weight"] = w


# ---------------------------------------------------------------------- the peers' calls
def scipy_bfs(g, s):
    """scipy's BFS order and tree (what its call computes); checked against levels by
    :func:`check`: the same vertices reached, every tree parent one level up."""
    return csgraph.breadth_first_order(g.A1, s, directed=True, return_predecessors=True)


def graphblas_levels(g, s):
    gb = g.have["graphblas"]
    level = gb.Vector(int, g.n)
    q = gb.Vector(bool, g.n)
    q[s] = True
    depth = 0
    while q.nvals:
        level(q.S) << depth
        q(~level.S, replace=True) << q.vxm(g.gbA, gb.semiring.any_pair)
        depth += 1
    out = np.full(g.n, -1, dtype=np.int64)
    idx, vals = level.to_coo()
    out[idx] = vals
    return out


def graphblas_dist(g, s):
    gb = g.have["graphblas"]
    d = gb.Vector(float, g.n)
    d[s] = 0.0
    while True:
        new = d.dup()
        new(gb.binary.min) << d.vxm(g.gbA, gb.semiring.min_plus)
        if new.isequal(d):
            break
        d = new
    out = np.full(g.n, np.inf)
    idx, vals = d.to_coo()
    out[idx] = vals
    return out


def scipy_pagerank(A1, n, d=0.85):
    out = np.asarray(A1.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros(n), where=out > 0)
    AT = A1.T.tocsr()
    x = np.full(n, 1.0 / n)
    while True:
        new = d * (AT @ (x * inv) + x[out == 0].sum() / n) + (1 - d) / n
        if np.abs(new - x).sum() < TOL:
            return new
        x = new


def peer_calls(g, s):
    """{algorithm: {peer: zero-argument call}} of the peers installed."""
    have, n = g.have, g.n
    calls = {"bfs": {}, "sssp": {}, "cc": {}, "pagerank": {}}
    calls["bfs"]["scipy"] = lambda: scipy_bfs(g, s)
    calls["sssp"]["scipy"] = lambda: csgraph.dijkstra(g.A, directed=True, indices=s)
    calls["cc"]["scipy"] = lambda: csgraph.connected_components(g.A1, directed=True,
                                                                connection="weak")[1]
    calls["pagerank"]["scipy"] = lambda: scipy_pagerank(g.A1, n)
    if "graphblas" in have:
        calls["bfs"]["graphblas"] = lambda: graphblas_levels(g, s)
        calls["sssp"]["graphblas"] = lambda: graphblas_dist(g, s)
    if "networkit" in have:
        nk = have["networkit"]

        def nk_bfs():
            d = np.asarray(nk.distance.BFS(g.nk1, s).run().getDistances())
            return np.where(d > n, -1, d).astype(np.int64)

        def nk_sssp():
            d = np.asarray(nk.distance.Dijkstra(g.nk, s).run().getDistances())
            return np.where(d > 1e300, np.inf, d)

        def nk_cc():
            c = nk.components.WeaklyConnectedComponents(g.nk1)
            c.run()
            return np.asarray(c.getPartition().getVector())

        def nk_pr():
            pr = nk.centrality.PageRank(g.nk1, damp=0.85, tol=1e-12,
                                        distributeSinks=nk.centrality.SinkHandling.DistributeSinks)
            pr.run()
            x = np.asarray(pr.scores())
            return x / x.sum()
        calls["bfs"]["networkit"], calls["sssp"]["networkit"] = nk_bfs, nk_sssp
        calls["cc"]["networkit"], calls["pagerank"]["networkit"] = nk_cc, nk_pr
    if "igraph" in have:
        def ig_bfs():
            out = np.full(n, -1, dtype=np.int64)
            vids, layers, _ = g.ig.bfs(s, mode="out")
            for depth in range(len(layers) - 1):
                out[vids[layers[depth]:layers[depth + 1]]] = depth
            return out
        calls["bfs"]["igraph"] = ig_bfs
        calls["sssp"]["igraph"] = lambda: np.asarray(
            g.ig.distances(source=s, weights="weight", mode="out")[0])
        calls["cc"]["igraph"] = lambda: np.asarray(
            g.ig.connected_components(mode="weak").membership)
        calls["pagerank"]["igraph"] = lambda: np.asarray(g.ig.pagerank(directed=True))
    return calls


def same_partition(a, b):
    a, b = np.asarray(a), np.asarray(b)
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def check(algo, mine, theirs):
    if algo == "bfs" and isinstance(theirs, tuple):   # scipy: (order, predecessors)
        order, pred = theirs
        reached, rest = mine >= 0, order[1:]
        return (reached.sum() == len(order) and bool(reached[order].all())
                and bool((mine[pred[rest]] == mine[rest] - 1).all()))
    theirs = np.asarray(theirs)
    if algo == "bfs":
        return np.array_equal(mine, theirs)
    if algo == "sssp":
        return np.array_equal(np.isinf(mine), np.isinf(theirs)) and np.allclose(
            mine[np.isfinite(mine)], theirs[np.isfinite(theirs)], rtol=1e-12, atol=0)
    if algo == "cc":
        return same_partition(mine, theirs)
    return float(np.abs(mine - theirs).sum()) < 1e-6


# ---------------------------------------------------------------------- the run
def engine_calls(store, s):
    return {"bfs": lambda: bfs.bfs(store, s)[0],
            "sssp": lambda: sssp.sssp(store, s)[0],
            "cc": lambda: cc.connected_components(store)[0],
            "pagerank": lambda: pagerank.pagerank(store, weight=None, tol=TOL)[0]}


def first_call(path, algo, s, repeat):
    """(median wall, median CPU seconds) of the first call on a freshly opened store, ``repeat``
    times: the calls above reuse the set-up an open store keeps from its earlier calls (the
    executor's arrays, the shards read); this one makes it (the shards from the page cache)."""
    times = []
    for _ in range(repeat):
        with gr.ShardStore(path) as store:
            wall, cpu, _ = timed(engine_calls(store, s)[algo])
        times.append((wall, cpu))
    return statistics.median(w for w, _ in times), statistics.median(c for _, c in times)


#: one system's SSSP in a fresh process: the peak resident bytes above the process's peak after
#: its libraries are loaded (grstream: a run on a tiny store first, which loads the compiled
#: kernels where numba is installed), printed
MEMORY_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[4])
import numpy as np, scipy.sparse as sp
from scipy.sparse import csgraph

def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

system, path, s, tiny = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5]
if system == "grstream":
    import grstream as gr
    from grstream.algorithms import sssp
    gr.build_shards(np.array([[0, 1, 1.0], [1, 2, 2.0]]), tiny, weighted=True, progress=False)
    with gr.ShardStore(tiny) as store:
        sssp.sssp(store, 0)
    base = peak()
    with gr.ShardStore(path) as store:
        sssp.sssp(store, s)
else:
    base = peak()
    z = np.load(path)
    A = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=(len(z["indptr"]) - 1,) * 2)
    csgraph.dijkstra(A, directed=True, indices=s)
print(peak() - base)
"""


def sssp_memory(path, g, s, tmp):
    """{system: peak bytes} of SSSP from ``s`` in a fresh process each (Linux: /proc), the
    inputs read from files: grstream's store, scipy's CSR saved as .npz."""
    if not os.path.exists("/proc/self/status"):
        return {}
    import subprocess
    csr = os.path.join(tmp, "csr.npz")
    np.savez(csr, data=g.A.data, indices=g.A.indices, indptr=g.A.indptr)
    root = str(Path(__file__).resolve().parents[1])
    out = {}
    for system, data in (("grstream", path), ("scipy", csr)):
        done = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, system, data, str(s), root,
                               os.path.join(tmp, "tiny.h5")],
                              capture_output=True, text=True, check=True)
        out[system] = int(done.stdout.split()[-1])
    return out


def run_main(args, have, tmp):
    n, src, dst, w = simple_graph(args.scale)
    path = os.path.join(tmp, f"rmat{args.scale}.h5")
    gr.build_shards(np.column_stack([src, dst, w]), path, weighted=True, renumber=False,
                    num_shards=args.shards, progress=False)
    g = Graphs(n, src, dst, w, have)
    s = int(np.argmax(np.diff(g.A.indptr)))   # the highest-out-degree vertex
    rows = []
    with gr.ShardStore(path) as store:
        assert int(store.num_vertices) == n
        mine_calls, peers = engine_calls(store, s), peer_calls(g, s)
        for algo in args.algos.split(","):
            # grstream warms up twice: "auto" loads the compiled kernels once the process's
            # runs reach COMPILED_EDGES edges (from its second RMAT-20 run on)
            got = interleaved({"grstream": mine_calls[algo], **peers[algo]}, args.repeat,
                              warm={"grstream": 2})
            t, cpu, mine = got.pop("grstream")
            row = {"graph": f"RMAT-{args.scale}", "algo": algo, "grstream": t, "cpu": cpu,
                   "peers": {}, "peer_cpu": {}, "first": first_call(path, algo, s, args.repeat)}
            for peer, (tp, cp, theirs) in got.items():
                row["peers"][peer] = (tp, check(algo, mine, theirs))
                row["peer_cpu"][peer] = cp
            rows.append(row)
            print(format_row(row), flush=True)
    if args.cli:
        # the extension modules of the kernels the calls above used are built first (a process
        # that compiled them leaves that build at its exit): the fresh processes then load them
        # as a user's later processes do
        from grstream.backends.cpu import aot
        aot.build_pending(wait=True)
        scipy_rows = {r["algo"]: (r["peers"]["scipy"][0], r["peer_cpu"]["scipy"]) for r in rows}
        for algo in ("bfs", "sssp"):
            if algo in scipy_rows:
                rows.append(cli_row(args, path, s, algo, *scipy_rows[algo]))
                print(format_row(rows[-1]), flush=True)
    if args.memory:
        peaks = sssp_memory(path, g, s, tmp)
        if peaks:
            rows.append({"graph": f"RMAT-{args.scale}", "algo": "SSSP peak memory", "bytes": peaks})
            print(format_row(rows[-1]), flush=True)
    return rows


def cli_row(args, path, s, algo, scipy_seconds, scipy_cpu):
    """``grstream run <algo>`` on the store, --repeat times after an untimed one, each in a fresh
    process: the medians
    of its engine seconds (--stats-json ``seconds``) and the engine's CPU seconds (``cpu_seconds``),
    the process's CPU seconds (user + system) and wall seconds, against scipy's median call in
    the same run (wall and CPU)."""
    import json
    import subprocess
    root = str(Path(__file__).resolve().parents[1])
    # the processes read compiled bytecode, as an installed grstream's do (a checkout run with
    # PYTHONDONTWRITEBYTECODE set compiles every module it imports, inside the run's seconds):
    # kept under the store's temporary directory, written by an untimed first run
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
               PYTHONPYCACHEPREFIX=os.path.join(os.path.dirname(path), "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    stats = os.path.join(os.path.dirname(path), "stats.json")
    cmd = [sys.executable, "-m", "grstream", "run", algo, path, "--source", str(s), "--quiet",
           "--stats-json", stats]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    runs = []
    for _ in range(args.repeat):
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        wall = time.perf_counter() - t0
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        with open(stats) as f:
            doc = json.load(f)
        runs.append((doc["seconds"], doc["cpu_seconds"], cpu, wall))
    engine, engine_cpu, cpu, wall = (statistics.median(r[i] for r in runs) for i in range(4))
    return {"graph": f"RMAT-{args.scale}", "algo": f"`grstream run {algo}`", "engine": engine,
            "engine_cpu": engine_cpu, "process_cpu": cpu, "process_wall": wall,
            "scipy": scipy_seconds, "scipy_cpu": scipy_cpu}


def run_bc(args, have, tmp):
    n, src, dst, w = simple_graph(args.bc_scale)
    path = os.path.join(tmp, f"rmat{args.bc_scale}.h5")
    gr.build_shards(np.column_stack([src, dst]), path, renumber=False, num_shards=args.shards,
                    progress=False)
    sources = bc.sample_sources(n, args.bc_sources, 1)
    on = "" if args.device == "cpu" else f" (grstream on {args.device})"
    row = {"graph": f"RMAT-{args.bc_scale}", "algo": f"betweenness, {args.bc_sources} sources{on}",
           "peers": {}}
    # CPU seconds (the process's, every thread) per call beside the wall seconds: the mean
    # over every call made, the warm-up included
    with gr.ShardStore(path) as store:
        c0 = time.process_time()
        t, mine = median_time(lambda: bc.betweenness(store, sources=sources, normalized=False,
                                                     device=args.device)[0],
                              args.bc_repeat, warm=False)
        row["cpu"] = (time.process_time() - c0) / args.bc_repeat
    row["grstream"] = t
    if "igraph" in have:
        g = have["igraph"].Graph(n=n, edges=np.column_stack([src, dst]), directed=True)
        c0 = time.process_time()
        tp, theirs = median_time(lambda: np.asarray(
            g.betweenness(directed=True, sources=[int(v) for v in sources])), args.repeat)
        row["peer_cpu"] = {"igraph": (time.process_time() - c0) / (args.repeat + 1)}
        ok = np.allclose(mine, theirs, rtol=1e-9, atol=1e-9)
        row["peers"]["igraph"] = (tp, ok)
    print(format_row(row), flush=True)
    return [row]


def format_row(row):
    if "engine" in row:
        return (f"{row['graph']} {row['algo']}: engine {row['engine']:.3f} s wall "
                f"({row['engine'] / row['scipy']:.2f}x scipy's {row['scipy']:.3f} s), "
                f"{row['engine_cpu']:.3f} s CPU ({row['engine_cpu'] / row['scipy_cpu']:.2f}x "
                f"scipy's {row['scipy_cpu']:.3f} s); process {row['process_cpu']:.2f} s CPU, "
                f"{row['process_wall']:.2f} s wall")
    if "bytes" in row:
        mine, theirs = row["bytes"]["grstream"], row["bytes"]["scipy"]
        return (f"{row['graph']} {row['algo']}: grstream {mine / 2**20:.0f} MiB; scipy dijkstra "
                f"{theirs / 2**20:.0f} MiB ({mine / theirs:.2f}x)")
    cells = [f"{p} {t:.3f} s ({row['grstream'] / t:.2f}x){'' if ok else ' RESULTS DIFFER'}"
             for p, (t, ok) in row["peers"].items()]
    if "first" in row and "scipy" in row["peers"]:
        (wall, cpu), scipy = row["first"], row["peers"]["scipy"][0]
        cells.append(f"first call on a fresh store {wall:.3f} s ({wall / scipy:.2f}x scipy), "
                     f"{cpu:.3f} s CPU ({cpu / row['peer_cpu']['scipy']:.2f}x)")
    cpu = row.get("peer_cpu", {})
    cells += [f"CPU s: grstream {row['cpu']:.3f}, " + ", ".join(
        f"{p} {c:.3f} ({row['cpu'] / c:.2f}x)" for p, c in cpu.items())] if cpu else []
    return f"{row['graph']} {row['algo']}: grstream {row['grstream']:.3f} s; " + "; ".join(cells)


def markdown(rows, args, have):
    cols = [p for p in PEERS if p in have]
    lines = [f"Device: {bench_cpu.cpu_model()}, {os.cpu_count()} cores, shared with other work (medians of "
             f"{args.repeat}, interleaved), load average {args.load_start} at the start, "
             f"{load_average()} at the end. Commit: {commit()}. Date: "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
             f"UTC. Command: `python tools/bench_cpu_peers.py {' '.join(sys.argv[1:])}`. "
             f"Skipped (not installed or not asked for): {', '.join(p for p in PEERS if p not in have) or 'none'}.",
             "", "| graph | algorithm | grstream | " + " | ".join(cols) + " | grstream / best |",
             "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " | --- |"]
    for r in rows:
        if "engine" in r:
            continue
        if "bytes" in r:
            lines.append(f"\n{format_row(r)} (peak resident bytes above each process's peak "
                         f"after loading its libraries; inputs read from files)")
            continue
        cells = []
        for p in cols:
            t, ok = r["peers"].get(p, (None, True))
            cells.append("-" if t is None else f"{t:.3f} s" + ("" if ok else " (differs)"))
        best = min((t for t, ok in r["peers"].values() if ok), default=None)
        ratio = "-" if best is None else f"{r['grstream'] / best:.2f} x"
        lines.append(f"| {r['graph']} | {r['algo']} | {r['grstream']:.3f} s | "
                     + " | ".join(cells) + f" | {ratio} |")
    timed_rows = [r for r in rows if "scipy" in r.get("peer_cpu", {})]
    lines += [f"\nCPU seconds per call (the process's, every thread; mean over the calls): "
              f"{format_row(r)}" for r in rows if "cpu" in r and r not in timed_rows]
    if timed_rows:
        lines += ["", "| graph | algorithm | grstream wall | grstream CPU | "
                  + " | ".join(f"{p} wall | {p} CPU" for p in cols) + " | wall / scipy | CPU / scipy |",
                  "| --- | --- | --- | --- | " + " | ".join("--- | ---" for _ in cols) + " | --- | --- |"]
        for r in timed_rows:
            cells = []
            for p in cols:
                t, ok = r["peers"].get(p, (None, True))
                cells.append("- | -" if t is None else f"{t:.3f} s{'' if ok else ' (differs)'} | "
                             f"{r['peer_cpu'][p]:.3f} s")
            wall, cpu = r["peers"]["scipy"][0], r["peer_cpu"]["scipy"]
            lines.append(f"| {r['graph']} | {r['algo']} | {r['grstream']:.3f} s | {r['cpu']:.3f} s | "
                         + " | ".join(cells) + f" | {r['grstream'] / wall:.2f} x | {r['cpu'] / cpu:.2f} x |")
    first = [r for r in timed_rows if "first" in r]
    if first:
        lines += ["", f"The first call on a freshly opened store (medians of {args.repeat}; the "
                  "calls above reuse the set-up the open store keeps: executor arrays, shards "
                  "read):", "", "| graph | algorithm | first call wall | first call CPU | "
                  "wall / scipy | CPU / scipy |", "| --- | --- | --- | --- | --- | --- |"]
        for r in first:
            (wall, cpu), sw, sc = r["first"], r["peers"]["scipy"][0], r["peer_cpu"]["scipy"]
            lines.append(f"| {r['graph']} | {r['algo']} | {wall:.3f} s | {cpu:.3f} s | "
                         f"{wall / sw:.2f} x | {cpu / sc:.2f} x |")
    cli = [r for r in rows if "engine" in r]
    if cli:
        lines += ["", f"Fresh processes (medians of {args.repeat}; engine: the run's --stats-json "
                  "`seconds` and `cpu_seconds`; scipy: its call above):", "",
                  "| graph | command | engine wall | engine CPU | scipy wall | scipy CPU | "
                  "wall / scipy | CPU / scipy | process CPU | process wall |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in cli:
            lines.append(f"| {r['graph']} | {r['algo']} | {r['engine']:.3f} s | "
                         f"{r['engine_cpu']:.3f} s | {r['scipy']:.3f} s | {r['scipy_cpu']:.3f} s | "
                         f"{r['engine'] / r['scipy']:.2f} x | {r['engine_cpu'] / r['scipy_cpu']:.2f} x | "
                         f"{r['process_cpu']:.2f} s | {r['process_wall']:.2f} s |")
    return "\n".join(lines) + "\n"


def commit():
    """The checkout's commit (short), or "unknown"."""
    import subprocess
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).resolve().parents[1],
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_average():
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--bc-scale", type=int, default=18)
    ap.add_argument("--bc-sources", type=int, default=64)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bc-repeat", type=int, default=1, help="grstream betweenness runs")
    ap.add_argument("--device", default="cpu", help="grstream's device for betweenness (cpu, "
                    "cuda); the peers run on the CPU")
    ap.add_argument("--skip-bc", action="store_true", help="leave betweenness out")
    ap.add_argument("--only-bc", action="store_true", help="betweenness alone")
    ap.add_argument("--markdown", help="write the table to this file")
    ap.add_argument("--memory", action="store_true",
                    help="also SSSP's peak memory, grstream and scipy each in a fresh process")
    ap.add_argument("--algos", default="bfs,sssp,cc,pagerank",
                    help="comma-separated, of bfs, sssp, cc, pagerank")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated peers to build and time (scipy always): a large "
                    "graph held by every peer at once needs several times the memory of one")
    ap.add_argument("--cli", action="store_true",
                    help="also `grstream run bfs` and `grstream run sssp` in fresh processes")
    args = ap.parse_args(argv)
    args.load_start = load_average()
    have = peers_available(args.peers.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        rows = [] if args.only_bc else run_main(args, have, tmp)
        if not args.skip_bc:
            rows += run_bc(args, have, tmp)
    text = markdown(rows, args, have)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
