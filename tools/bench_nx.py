#!/usr/bin/env python3
"""NetworkX backend benchmark: a cold ``nx.pagerank(G, backend="grstream")`` against its floor,
and multi-source against single-source BFS, in one run.

    python tools/bench_nx.py [--scale 18] [--bfs-scale 16] [--repeat 3] [--networkx]
                             [--record docs/BENCHMARKS.md]

Graphs: RMAT (edge factor 16, seed 1) as a networkx.DiGraph (parallel edges merged), nodes
``0..n-1`` added first. Rows:

- the floor of a cold call, each part timed alone: NetworkX's edges into numpy
  (``nx.to_scipy_sparse_array``, COO), ``gr.build_shards`` of those arrays into a temporary
  store, grstream's PageRank on that store (NetworkX's stopping rule); and their sum; a lower
  floor with the edges listed by the backend's own pass (``grstream.nx.adjacency.Edges``);
- ``nx.pagerank(G, backend="grstream")`` with NetworkX's conversion cache off (conversion,
  checks and run), and its ratio to the floor;
- ``nx.pagerank(B)`` on a graph converted beforehand; NetworkX's own ``nx.pagerank(G)`` with
  ``--networkx``;
- on the --bfs-scale graph, converted beforehand: BFS distances from one source and from 50
  (``nx.multi_source_dijkstra_path_length(B, sources, weight=None)``), and their ratio;
- ``nx.average_shortest_path_length(nx.path_graph(200), backend="grstream")``.

Every figure is the median of --repeat runs; results are checked against NetworkX's. --record
replaces the section "## NetworkX backend" of the given markdown file.
"""
import argparse
import datetime
import os
import platform
import re
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
from grstream.algorithms.pagerank import pagerank as gr_pagerank  # noqa: E402
from grstream.io.arrays import array_source  # noqa: E402
from grstream.io.generate import rmat  # noqa: E402
from grstream.nx.adjacency import Edges  # noqa: E402


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def rmat_digraph(scale):
    src, dst = rmat(scale, edge_factor=16, seed=1, weights=False)[:2]
    G = nx.DiGraph()
    G.add_nodes_from(range(1 << scale))
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    return G


def pagerank_rows(G, repeat, with_networkx):
    """Rows ``(what, seconds, note)`` of the cold call and its floor; the cold call's ratio."""
    rows = []
    t_edges, A = timed(lambda: nx.to_scipy_sparse_array(G, format="coo"), repeat)
    with tempfile.TemporaryDirectory() as tmp:
        def build():
            edges = array_source(A.row.astype(np.int64), A.col.astype(np.int64), None,
                                 name="<floor>", weighted=False, chunk_edges=None, fmt="arrays",
                                 num_vertices=len(G))  # isolated nodes count too
            return gr.build_shards(edges, os.path.join(tmp, f"g{time.perf_counter_ns()}.h5"),
                                   renumber=False)
        t_build, path = timed(build, repeat)
        store = gr.open(path)
        t_run, (rank, _) = timed(lambda: gr_pagerank(store, stop="networkx"), repeat)
        store.close()
    floor = t_edges + t_build + t_run
    t_pass, _ = timed(lambda: Edges(G, "weight", 1).edges(True), repeat)
    low = t_pass + t_build + t_run
    rows += [("floor: edges into numpy (`nx.to_scipy_sparse_array`, COO)", t_edges, ""),
             ("floor: `gr.build_shards` of those arrays", t_build, ""),
             ("floor: grstream PageRank on that store", t_run, ""),
             ("**floor** (sum)", floor, "1.00 x floor"),
             ("edges into numpy by the backend's adjacency pass (`grstream.nx.adjacency.Edges`)",
              t_pass, ""),
             ("**lower floor**: that pass + build + PageRank", low, "")]

    def cold():
        with nx.config(cache_converted_graphs=False):
            return nx.pagerank(G, backend="grstream")
    t_cold, got = timed(cold, repeat)
    want = dict(zip(range(len(G)), rank.tolist()))
    err = max(abs(got[v] - want[v]) for v in G)
    rows.append(('**`nx.pagerank(G, backend="grstream")`, cold** (cache off)', t_cold,
                 f"{t_cold / floor:.2f} x floor, {t_cold / low:.2f} x lower floor; max diff "
                 f"to the floor's ranks {err:.1e}"))
    B = grnx.convert_from_nx(G, edge_attrs={"weight": 1})
    t_warm, _ = timed(lambda: nx.pagerank(B), repeat)
    rows.append(("`nx.pagerank(B)`, B converted beforehand", t_warm, ""))
    if with_networkx:
        t_nx, want_nx = timed(lambda: nx.pagerank(G), 1)
        err = max(abs(got[v] - want_nx[v]) for v in G)
        rows.append(("NetworkX's own `nx.pagerank(G)` (one run)", t_nx,
                     f"{t_nx / t_cold:.2f} x the cold backend call; max diff {err:.1e}"))
    return rows, (t_cold / floor, t_cold / low)


def bfs_rows(G, repeat):
    """Rows of one- against 50-source BFS on a converted graph; the ratio."""
    B = grnx.convert_from_nx(G)
    rng = np.random.default_rng(1)
    degree = np.fromiter((d for _, d in G.out_degree()), np.int64, len(G))
    sources = rng.choice(np.flatnonzero(degree > 0), 50, replace=False).tolist()
    one = sources[:1]

    def dist(S, graph=B):
        return nx.multi_source_dijkstra_path_length(graph, S, weight=None)
    t1, got1 = timed(lambda: dist(one), repeat)
    t50, got50 = timed(lambda: dist(sources), repeat)
    assert got50 == nx.multi_source_dijkstra_path_length(G, sources, weight=None)
    assert got1 == nx.single_source_shortest_path_length(G, one[0])
    t_nx50, _ = timed(lambda: dist(sources, G), 1)
    P = nx.path_graph(200)
    t_avg, avg = timed(lambda: nx.average_shortest_path_length(P, backend="grstream"), 1)
    assert avg == nx.average_shortest_path_length(P)
    rows = [("BFS distances from 1 source (`multi_source_dijkstra_path_length`, weight=None)",
             t1, ""),
            ("BFS distances from 50 sources, one super-source run", t50,
             f"{t50 / t1:.2f} x one source"),
            ("NetworkX's own 50-source call (one run)", t_nx50, ""),
            ("`average_shortest_path_length(path_graph(200))` (lanes of 64 sources)", t_avg, "")]
    return rows, t50 / t1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--bfs-scale", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--networkx", action="store_true", help="also time NetworkX's own PageRank")
    ap.add_argument("--record", help="replace the NetworkX section of this markdown file")
    args = ap.parse_args(argv)
    if "grstream" not in nx.utils.backends.backends:
        from grstream.nx.testing import register_without_install
        register_without_install()
    nx.config.warnings_to_ignore.add("cache")
    G = rmat_digraph(args.scale)
    n, m = G.number_of_nodes(), G.number_of_edges()
    rows, ratio = pagerank_rows(G, args.repeat, args.networkx)
    del G
    H = rmat_digraph(args.bfs_scale)
    more, bfs_ratio = bfs_rows(H, args.repeat)
    lines = [f"| {what} | {sec:.2f} | {note} |" for what, sec, note in rows + more]
    table = "\n".join(["| what | median s | |", "| --- | --- | --- |", *lines])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    command = (f"python tools/bench_nx.py --scale {args.scale} --bfs-scale {args.bfs_scale} "
               f"--repeat {args.repeat}" + (" --networkx" if args.networkx else ""))
    section = (
        f"## NetworkX backend\n\nWhat: a cold `nx.pagerank(G, backend=\"grstream\")` against its "
        f"floor (NetworkX's edges into numpy + `gr.build_shards` + grstream's PageRank on the "
        f"store) on RMAT scale {args.scale}, edge factor 16, seed 1, as a networkx.DiGraph "
        f"({n:,} nodes, {m:,} edges): **{ratio[0]:.2f} x the floor** (target 1.5 x), "
        f"{ratio[1]:.2f} x a lower floor listing the edges by the backend's own vectorised "
        f"pass instead of `nx.to_scipy_sparse_array`; and "
        f"50-source against 1-source BFS on RMAT scale {args.bfs_scale} converted "
        f"beforehand: **{bfs_ratio:.2f} x** (target 2 x). Device: the CPU device, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores shared "
        f"(load average {load:.1f} at the end), NetworkX {nx.__version__}. Date: "
        f"{datetime.date.today()}. Command: `{command}` (median of {args.repeat}).\n\n"
        f"{table}\n\n")
    print(section)
    if args.record:
        path = Path(args.record)
        text = path.read_text()
        old = re.search(r"^## NetworkX backend\n.*?(?=^## )", text, re.S | re.M)
        text = (text[:old.start()] + section + text[old.end():] if old
                else text.rstrip("\n") + "\n\n" + section)
        path.write_text(text)


if __name__ == "__main__":
    main()
