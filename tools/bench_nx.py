#!/usr/bin/env python3
"""NetworkX backend benchmark: ``nx.pagerank(G)`` with NetworkX's default implementation against
``nx.pagerank(G, backend="grstream")`` on the same ~1M-edge graph, in one run.

    python tools/bench_nx.py --scale 16 [--record docs/BENCHMARKS.md]

The graph is RMAT (edge factor 16, seed 1) as a networkx.DiGraph (parallel edges merged).
Rows: NetworkX's default (scipy power iteration); the backend from a NetworkX graph, conversion
to a temporary store included (NetworkX's conversion cache off); the backend on a graph already
converted; ``grstream.nx.from_store`` over the store with a memory budget of a quarter of
its shards plus the vertex state.
Every figure is the median of --repeat runs; each result is checked against NetworkX's.
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import grstream as gr  # noqa: E402
import grstream.nx as grnx  # noqa: E402
from grstream.io.generate import rmat  # noqa: E402


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", help="append a section to this markdown file")
    args = ap.parse_args(argv)
    if "grstream" not in nx.utils.backends.backends:
        sys.exit("the grstream backend is not registered: pip install -e . first")
    nx.config.warnings_to_ignore.add("cache")
    src, dst = rmat(args.scale, edge_factor=16, seed=1, weights=False)[:2]
    G = nx.DiGraph()
    G.add_nodes_from(range(1 << args.scale))
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    n, m = G.number_of_nodes(), G.number_of_edges()
    rows = []
    t_nx, want = timed(lambda: nx.pagerank(G), args.repeat)
    rows.append(("NetworkX default (`nx.pagerank(G)`)", t_nx, 0.0))

    def cold():
        with nx.config(cache_converted_graphs=False):
            return nx.pagerank(G, backend="grstream")

    def err(got):
        return max(abs(got[v] - want[v]) for v in G)

    t, got = timed(cold, args.repeat)
    rows.append(("`nx.pagerank(G, backend=\"grstream\")`, conversion included", t, err(got)))
    B = grnx.convert_from_nx(G, edge_attrs={"weight": 1})
    t, got = timed(lambda: nx.pagerank(B), args.repeat)
    rows.append(("`nx.pagerank(B)`, B converted beforehand", t, err(got)))
    with tempfile.TemporaryDirectory() as tmp:
        path = gr.build_shards(np.stack([src, dst], 1), os.path.join(tmp, "g.h5"),
                               duplicates=False, num_shards=16)
        S = grnx.from_store(path)
        budget = S.store.nbytes() // 4 + 6 * 8 * n  # a quarter of the shards + vertex state
        with nx.config.backends.grstream(memory_budget=budget):
            t, got = timed(lambda: nx.pagerank(S), args.repeat)
        rows.append((f"`nx.pagerank(from_store(...))`, memory_budget {budget >> 20} MiB "
                     f"(store {S.store.nbytes() >> 20} MiB)", t, err(got)))
    lines = [f"| {what} | {sec:.2f} | {t_nx / sec:.2f} x | {e:.1e} |" for what, sec, e in rows]
    table = "\n".join(["| what | median s | x NetworkX | max abs diff |",
                       "| --- | --- | --- | --- |", *lines])
    print(f"RMAT scale {args.scale}: {n} nodes, {m} edges (DiGraph)\n{table}")
    if args.record:
        head = (f"\n## NetworkX backend (tools/bench_nx.py)\n\n{datetime.date.today()}, "
                f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; RMAT "
                f"scale {args.scale}, edge factor 16, seed 1, as a networkx.DiGraph ({n} nodes, "
                f"{m} edges); median of {args.repeat} runs in one process; NetworkX "
                f"{nx.__version__}. Command: `python tools/bench_nx.py --scale {args.scale} "
                f"--repeat {args.repeat}`.\n\n")
        with open(args.record, "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
