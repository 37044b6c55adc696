"""``grstream run ALGO [STORE]``: run a built-in algorithm over a shard store."""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

from ..errors import UsageError
from ..io.atomic import check_distinct, check_output
from ..io.write import save_npy, save_text
from ..units import format_bytes, parse_bytes

#: what ``-o`` writes: per-vertex values as .npy, or a labelled text table
OUTPUT_SUFFIXES = (".npy", ".tsv", ".csv")


def add_parser(sub):
    from ..algorithms import ALGORITHMS
    p = sub.add_parser("run", help="run an algorithm (bfs, sssp, pagerank, cc, bc) over a shard store",
                       description="Run a built-in algorithm over a shard store. Without STORE, runs on "
                                   "the embedded default graph (built under shards/ on first use).")
    p.add_argument("algorithm", metavar="ALGO", help="one of: " + ", ".join(ALGORITHMS))
    p.add_argument("store", metavar="STORE", nargs="?", help="shard store (.h5); default: embedded graph")
    p.add_argument("--source", default=None, metavar="ID",
                   help="source vertex as the input names it (bfs, sssp; default: the first vertex)")
    p.add_argument("--sources", type=int, default=None, metavar="K",
                   help="bc: sample K sources (seeded) instead of all vertices")
    p.add_argument("--seed", type=int, default=None, help="bc: seed of the source sample (default 0)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                   help="where to run (default cpu; auto picks the GPU when present)")
    p.add_argument("--memory-budget", default=None, metavar="BYTES",
                   help="bytes for vertex state plus shard data (e.g. 512M); default: everything")
    p.add_argument("--pinned-budget", default=None, metavar="BYTES",
                   help="GPU: pinned host bytes for staging and caching streamed shards "
                        "(default: the memory budget, at most 8G)")
    p.add_argument("--max-iter", type=int, default=None, metavar="N",
                   help="iteration limit (bfs, sssp, pagerank, cc)")
    p.add_argument("--tol", type=non_negative, default=None, help="pagerank tolerance (default 1e-6)")
    p.add_argument("--damping", type=damping, default=None, help="pagerank damping (default 0.85)")
    p.add_argument("--method", choices=("power", "delta"), default=None,
                   help="pagerank: power iteration (default) or delta (residual pushes, stops "
                        "within a proven L1 distance --tol of the exact ranks)")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write per-vertex values: .npy, or .tsv/.csv with an id column "
                        "(README \"Vertex ids\")")
    p.add_argument("--direction", choices=("auto", "push", "pull"), default="auto",
                   help="push or pull per iteration: auto (default: push while the changed "
                        "vertices' edges are at most --push-threshold of all edges), push "
                        "(whenever the program allows it), pull")
    p.add_argument("--push-threshold", type=fraction, default=None, metavar="F",
                   help="fraction of the edges up to which auto pushes (default: the executor's, "
                        "1/20 = 0.05 on the CPU, 1.0 on the GPU)")
    p.add_argument("--stats-json", metavar="FILE", help="write run statistics as JSON ('-' = stdout)")
    p.add_argument("--plot", metavar="FILE.png", help="plot frontier size and bytes moved per iteration")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=main)
    return p


#: the algorithm-specific options each algorithm takes; the others are refused, never ignored
TAKES = {"bfs": ("source", "max_iter"), "sssp": ("source", "max_iter"),
         "pagerank": ("damping", "tol", "max_iter", "method"), "cc": ("max_iter",), "bc": ("sources", "seed")}
#: option dest -> (flag, default filled in when the algorithm takes it and it was not given;
#: --source's is the store's first vertex, filled in once the store is open)
SPECIFIC = {"source": ("--source", None), "sources": ("--sources", None), "seed": ("--seed", 0),
            "damping": ("--damping", 0.85), "tol": ("--tol", None), "max_iter": ("--max-iter", None),
            "method": ("--method", "power")}


def check_options(name, args):
    """Refuse the algorithm-specific options ``name`` does not take; fill in the defaults."""
    takes = TAKES[name]
    given = [flag for dest, (flag, _) in SPECIFIC.items()
             if getattr(args, dest) is not None and dest not in takes]
    if given:
        used = ", ".join(SPECIFIC[d][0] for d in takes) or "none"
        raise UsageError(f"{name} does not take {', '.join(given)} (its options: {used})")
    if name == "bc" and args.seed is not None and args.sources is None:
        raise UsageError("bc: --seed picks the sample of --sources K; an exact run has no sample")
    for dest in takes:
        if getattr(args, dest) is None:
            setattr(args, dest, SPECIFIC[dest][1])


def non_negative(text):
    """argparse type: a finite float >= 0."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def damping(text):
    """argparse type: a float in [0, 1]."""
    value = _finite(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


def fraction(text):
    """argparse type: a float in [0, 1] (--push-threshold)."""
    return damping(text)


def _finite(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value


def main(args):
    from .. import store as store_mod
    from ..algorithms import ALGORITHMS
    from ..algorithms._common import default_source
    algo = ALGORITHMS.get(args.algorithm)
    if algo is None:
        raise UsageError(f"unknown algorithm {args.algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    for path, suffixes in ((args.output, OUTPUT_SUFFIXES), (args.plot, (".png",))):
        if path is not None and not path.endswith(suffixes):
            raise UsageError(f"{path}: expected a {' or '.join(suffixes)} file name")
    check_options(algo.NAME, args)
    if args.memory_budget is not None:
        args.memory_budget = parse_bytes(args.memory_budget)
    if args.pinned_budget is not None:
        args.pinned_budget = parse_bytes(args.pinned_budget)
    if args.max_iter is not None and args.max_iter < 0:
        raise UsageError(f"--max-iter must be >= 0, not {args.max_iter}")
    _check_outputs(args)
    if args.store is None:
        from ..defaults import default_store
        path = default_store(progress=not args.quiet)
    else:
        path = args.store
    t0 = time.perf_counter()
    with store_mod.open(path) as store:
        # every algorithm reads --max-iter through run_options (pagerank's from_args puts its
        # own default of 100 in place of None)
        run_options = {"device": args.device, "memory_budget": args.memory_budget,
                       "progress": not args.quiet, "max_iter": args.max_iter,
                       "direction": args.direction}
        if args.push_threshold is not None:
            run_options["push_threshold"] = args.push_threshold
        if args.pinned_budget is not None:
            run_options["pinned_budget"] = args.pinned_budget
        if args.source is None and algo.NAME in ("bfs", "sssp"):
            args.source = default_source(store)
        values, results = algo.from_args(store, args, run_options)
        results = results if isinstance(results, list) else [results]
        seconds = time.perf_counter() - t0
        if args.output:
            write_values(args.output, store, algo.NAME, values)
        stats = merged_stats(results)
        if args.stats_json:
            doc = {"algorithm": algo.NAME, "store": str(path), "seconds": seconds,
                   "runs": [r.to_json_dict() for r in results]}
            from ..engine.result import jsonable
            text = json.dumps(jsonable(doc), indent=2)
            if args.stats_json == "-":
                print(text)
            else:
                save_text(args.stats_json, text + "\n")
        if args.plot:
            from ..engine.plot import plot_stats
            plot_stats(stats, args.plot, title=f"{algo.NAME} on {os.path.basename(str(path))}")
        print(summary(algo.NAME, store, values, results, seconds), file=sys.stderr)
    return 0


def _check_outputs(args):
    """Refuse outputs that would replace the store or each other, or cannot be written, before
    the run."""
    from ..defaults import DEFAULT_NAME, shards_dir
    store = args.store if args.store is not None else shards_dir() / DEFAULT_NAME
    outputs = {"-o": args.output, "--plot": args.plot,
               "--stats-json": None if args.stats_json == "-" else args.stats_json}
    check_distinct(outputs)
    for what, path in outputs.items():
        if path is not None:
            check_output(path, inputs=[store], what=what)


def merged_stats(results):
    """One per-iteration list over all the runs an algorithm made (bc runs two per source)."""
    out, k = [], 0
    for r in results:
        for s in r.stats:
            k += 1
            s2 = type(s)(**s.to_dict())
            s2.iteration = k
            out.append(s2)
    return out


def summary(name, store, values, results, seconds):
    iters = sum(r.iterations for r in results)
    read = sum(r.totals()["bytes_read"] for r in results)
    h2d = sum(r.totals()["bytes_h2d"] for r in results)
    device = results[0].info.get("backend", "?") if results else "?"
    extra = ""
    if name in ("bfs",):
        extra = f", reached {int((values >= 0).sum())}"
    elif name == "sssp":
        extra = f", reached {int(np.isfinite(values).sum())}"
    elif name == "cc":
        extra = f", {len(np.unique(values))} components"
    elif name == "pagerank":
        extra = f", converged={results[0].converged}"
    elif name == "bc":
        sources = sum(r.info.get("program") == "BrandesForward" for r in results)
        exact = sources == store.num_vertices
        extra = f", {sources:,} sources" + (" (exact: every vertex)" if exact else "")
    return (f"{name}: {store.num_vertices:,} vertices, {store.num_edges:,} edges, "
            f"{store.num_shards} shards, {iters} iterations, {seconds:.3f} s on {device}, "
            f"{format_bytes(read)} read" + (f", {format_bytes(h2d)} to the GPU" if h2d else "")
            + extra)


def write_values(path, store, name, values):
    """Write per-vertex values keyed by vertex label (README "Vertex ids").

    ``.npy``: the values in vertex order when labels are the ids ``0..n-1``, else a record array
    with fields ``id`` (the label: int64, or unicode for names) and ``value``. ``.tsv``/``.csv``:
    a header ``id<sep>value`` and one line per vertex. cc's component labels are vertex labels.
    """
    if name == "cc":
        values = _unpickled(store.to_labels(values))
    text = path.endswith((".tsv", ".csv"))
    if store.has_labels or text:
        ids = _unpickled(store.labels())
        rec = np.empty(len(values), dtype=[("id", ids.dtype), ("value", values.dtype)])
        rec["id"] = ids
        rec["value"] = values
        values = rec
    if text:
        sep = "\t" if path.endswith(".tsv") else ","
        rows = "".join(f"{key}{sep}{value}\n"
                       for key, value in zip(values["id"].tolist(), values["value"].tolist()))
        save_text(path, f"id{sep}value\n" + rows)
    else:
        save_npy(path, values)


def _unpickled(array):
    # names are an object array; a .npy of them would need pickle to load: fixed-width unicode
    return array.astype(str) if array.dtype == object else array
