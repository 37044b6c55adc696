#!/usr/bin/env python3
"""Exact betweenness centrality on the CPU path against networkx.betweenness_centrality, same run.

    python tools/bench_bc.py [--graph netscience.mtx] [--shards 7] [--repeat 1] [--record docs/BENCHMARKS.md]

The store is built from the graph file (as ``grstream shard``); NetworkX gets a DiGraph of the
store's edges, so both compute the same thing (unnormalized, directed, parallel edges once), and
the results are compared. Every figure is the median of --repeat runs.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import grstream as gr  # noqa: E402
from grstream.algorithms.bc import betweenness  # noqa: E402

DATASETS = Path(os.environ.get("GRSTREAM_DATASETS",
                               Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def digraph(store):
    G = nx.DiGraph() if store.directed else nx.Graph()   # (a symmetric .mtx: undirected)
    G.add_nodes_from(range(store.num_vertices))
    for i in range(store.num_shards):
        lo, indptr = int(store.intervals[i]), store.read(i, "out/indptr")
        src = np.repeat(np.arange(lo, lo + len(indptr) - 1), np.diff(indptr))
        G.add_edges_from(zip(src.tolist(), store.read(i, "out/dst").tolist()))
    return G


def timed(fn, repeat):
    """(median wall seconds, median CPU seconds of this process, result): on a shared machine
    the CPU time is what an idle core would take (both sides run on one thread)."""
    times, cpu, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpu), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default=str(DATASETS / "netscience.mtx"))
    ap.add_argument("--shards", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--record", help="append a dated section to this markdown file")
    ap.add_argument("--json", help="write the numbers as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = gr.build_shards(args.graph, Path(tmp) / "g.h5", num_shards=args.shards, progress=False)
        with gr.open(path) as store:
            G = digraph(store)
            t_nx, c_nx, ref = timed(lambda: nx.betweenness_centrality(G, normalized=False),
                                    args.repeat)
            t_gr, c_gr, (values, results) = timed(lambda: betweenness(store), args.repeat)
            want = np.array([ref[v] for v in range(store.num_vertices)])
            err = float(np.max(np.abs(values - want))) if len(want) else 0.0
            out = {"graph": Path(args.graph).name, "vertices": store.num_vertices,
                   "edges": store.num_edges, "shards": store.num_shards, "networkx_s": t_nx,
                   "grstream_s": t_gr, "ratio": t_gr / t_nx, "networkx_cpu_s": c_nx,
                   "grstream_cpu_s": c_gr, "cpu_ratio": c_gr / c_nx, "max_abs_error": err,
                   "runs": len(results), "iterations": sum(r.iterations for r in results)}
    print(json.dumps(out, indent=2))
    if err > 1e-6 * max(1.0, float(np.max(np.abs(want)))):
        print(f"results differ from NetworkX by {err}", file=sys.stderr)
        return 1
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    if args.record:
        with open(args.record, "a") as fh:
            fh.write(f"\n## Exact betweenness, CPU, {out['graph']} ({datetime.date.today()})\n"
                     f"`python tools/bench_bc.py --shards {out['shards']}`: {out['vertices']:,} "
                     f"vertices, {out['edges']:,} edges, {out['shards']} shards, every vertex a "
                     f"source; NetworkX timed in the same run on a DiGraph of the same edges.\n\n"
                     f"| | grstream | networkx.betweenness_centrality | ratio |\n"
                     f"| --- | --- | --- | --- |\n"
                     f"| wall | {out['grstream_s']:.2f} s | {out['networkx_s']:.2f} s | "
                     f"{out['ratio']:.2f} (goal <= 2) |\n"
                     f"| CPU of the process | {out['grstream_cpu_s']:.2f} s | "
                     f"{out['networkx_cpu_s']:.2f} s | {out['cpu_ratio']:.2f} |\n\n"
                     f"Largest difference from NetworkX: {out['max_abs_error']:.1e}.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
