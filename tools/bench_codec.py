#!/usr/bin/env python3
"""Compressed ids (docs/FORMAT.md "Compressed ids"): bytes per edge, and a CPU PageRank
iteration on a compressed store against the uncompressed one in the same run.

    python tools/bench_codec.py sizes STORE_OR_GRAPH... [--alternatives]
    python tools/bench_codec.py pagerank --scale 20 [--repeat 5] [--iterations 5] [--dir D]
    python tools/bench_codec.py build --scale 20 [--repeat 3] [--threads T]

``sizes``: for each store (``.h5``) or graph file (built plain into a temporary folder), the
bytes per edge of each direction's ids as ``delta-blocks-32`` stores them (headers included:
offsets, masks, widths), against 4 (int32). ``--alternatives`` adds the candidates measured
when the layout was chosen, headers included: one width per block with row heads relative to
a block base (``for32``, ``for128``), resets as whole 32-bit words after a 32-lane mask
(``reset32``), and the chosen layout with 64-lane blocks (``packed64``).
``pagerank``: an RMAT graph (seed 1) built plain and compressed; PageRank's time per iteration
with the store resident and with a quarter of its bytes as the budget (the shards streamed and,
compressed, decoded each iteration), medians of ``--repeat`` runs alternating the two stores:
a run's wall over its iterations (the first one's reads included: a resident store decodes
there), the steady iteration (the median of the others' walls), and the process's CPU time over
every thread over the iterations (what a loaded machine distorts less), with the load average
before and after.
``build``: the same RMAT graph (in memory, as ``tools/bench_targets.py`` builds it) built plain
and compressed, alternating, ``--repeat`` times each on ``--threads`` threads; the medians of
the walls and of the CPU times over every thread, their ratios, and the load average before
and after.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import grstream as gr  # noqa: E402
from grstream.algorithms import pagerank  # noqa: E402
from grstream.errors import MemoryBudgetError  # noqa: E402
from grstream.store import codec, format as fmt  # noqa: E402


def _blocks(ids, lanes):
    nb = -(-len(ids) // lanes)
    pad = np.empty(nb * lanes, np.int64)
    pad[:len(ids)] = ids
    pad[len(ids):] = ids[-1]
    return pad.reshape(nb, lanes), np.diff(pad, prepend=0).reshape(nb, lanes)


def _bits(x):
    return np.frexp(np.asarray(x, np.float64))[1]


def alternative_bytes(ids, a):
    """Bytes of the candidate layouts for one id array (see the module docstring)."""
    if not len(ids):
        return {}
    out = {}
    for lanes in (32, 128):   # frame of reference: heads (lane 0, drops) relative to a base
        p, d = _blocks(ids, lanes)
        head = d < 0
        head[:, 0] = True
        base = np.where(head, p, np.iinfo(np.int64).max).min(1)
        width = _bits(np.where(head, p - base[:, None], d).max(1))
        out[f"for{lanes}"] = (lanes * width).sum() / 8 + len(p) * 8 + 4
    for lanes, reset_bits, name in ((32, 32, "reset32"), (64, a, "packed64")):
        p, d = _blocks(ids, lanes)
        need = np.where(d < 0, 99, _bits(np.maximum(d, 0)))
        need[:, 0] = 99
        best = np.full(len(p), np.inf)
        for w in range(32):
            r = (need > w).sum(1)
            best = np.minimum(best, np.ceil((r * reset_bits + (lanes - r) * w) / 32) * 4)
        out[name] = best.sum() + len(p) * (4 + lanes / 8 + 1) + 4
    return out


def sizes(paths, alternatives):
    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            if not str(path).endswith(".h5"):
                path = gr.build_shards(path, Path(tmp) / "g.h5", progress=False)
            with gr.open(path) as store:
                a = codec.id_bits(store.num_vertices)
                for direction, ids_name in fmt.ID_DATASET.items():
                    name, edges, total, alt = f"{direction}/{ids_name}", 0, 0, {}
                    for i in range(store.num_shards):
                        ids = store.read(i, name)
                        edges += len(ids)
                        total += sum(p.nbytes for p in codec.encode(ids, store.num_vertices).values())
                        for k, v in (alternative_bytes(ids, a) if alternatives else {}).items():
                            alt[k] = alt.get(k, 0) + v
                    row = {"delta-blocks-32": total / max(edges, 1)}
                    row.update({k: v / max(edges, 1) for k, v in alt.items()})
                    print(f"{Path(str(path)).name} {name}: {edges} edges, "
                          + ", ".join(f"{k} {v:.3f}" for k, v in row.items()) + " B/edge",
                          flush=True)


def quarter_budget(store):
    try:
        gr.run(pagerank.PageRank(), store, memory_budget=1, max_iter=0)
    except MemoryBudgetError as exc:
        minimum = exc.minimum
    return max(minimum, minimum + sum(store.shard_info(i).dataset_nbytes["in/src"] * 3
                                      for i in range(store.num_shards)) // 4)


def pagerank_iterations(scale, repeat, iterations, folder):
    from grstream.io.generate import rmat
    with tempfile.TemporaryDirectory() as tmp:
        paths = {c: Path(folder or tmp) / f"rmat{scale}{'-compressed' if c else ''}.h5"
                 for c in (False, True)}
        if not all(p.exists() for p in paths.values()):
            src, dst = rmat(scale, 16, seed=1)
            for c, p in paths.items():
                gr.build_shards((src, dst), p, num_shards=32, compress=c, progress=False)
            del src, dst
        stores = {c: gr.open(p) for c, p in paths.items()}
        budget = quarter_budget(stores[False])
        for label, mb in (("resident", None), ("quarter budget", budget)):
            times = {False: [], True: []}
            steady = {False: [], True: []}
            cpu = {False: [], True: []}
            load = os.getloadavg()[0]
            for _ in range(repeat):
                for c, store in stores.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    _, result = pagerank.pagerank(store, max_iter=iterations, tol=1e-300,
                                                  memory_budget=mb)
                    times[c].append((time.perf_counter() - t0) / result.iterations)
                    cpu[c].append((time.process_time() - c0) / result.iterations)
                    steady[c].append(statistics.median(s.time_total for s in result.stats[1:]))
            row = {k: [statistics.median(v[c]) * 1e3 for c in (False, True)]
                   for k, v in (("run / iterations", times), ("steady iteration", steady),
                                ("CPU time (every thread) / iterations", cpu))}
            print(f"RMAT-{scale} PageRank per iteration, {label}: " + "; ".join(
                f"{k}: plain {p:.1f} ms, compressed {q:.1f} ms, ratio {q / p:.2f}"
                for k, (p, q) in row.items())
                + f" (medians of {repeat}; load average {load:.1f} before, "
                f"{os.getloadavg()[0]:.1f} after; walls: {times})", flush=True)


def build_walls(scale, repeat, threads):
    from grstream.io.generate import rmat
    src, dst = rmat(scale, 16, seed=1)
    walls, cpu = {False: [], True: []}, {False: [], True: []}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            for c in (False, True):
                path = Path(tmp) / f"g{int(c)}.h5"
                t0, c0 = time.perf_counter(), time.process_time()
                gr.build_shards((src, dst), path, num_shards=32, compress=c, threads=threads,
                                progress=False)
                walls[c].append(time.perf_counter() - t0)
                cpu[c].append(time.process_time() - c0)
                path.unlink()
    plain, packed = (statistics.median(walls[c]) for c in (False, True))
    plain_cpu, packed_cpu = (statistics.median(cpu[c]) for c in (False, True))
    print(f"RMAT-{scale} build on {threads} threads: plain {plain:.2f} s, compressed "
          f"{packed:.2f} s, ratio {packed / plain:.2f}; CPU time (every thread) plain "
          f"{plain_cpu:.2f} s, compressed {packed_cpu:.2f} s, ratio {packed_cpu / plain_cpu:.2f} "
          f"(medians of {repeat}; load average {load[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; walls: {walls})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sizes")
    s.add_argument("paths", nargs="+")
    s.add_argument("--alternatives", action="store_true")
    p = sub.add_parser("pagerank")
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--dir", help="keep the two stores here (reused when present)")
    b = sub.add_parser("build")
    b.add_argument("--scale", type=int, default=20)
    b.add_argument("--repeat", type=int, default=3)
    b.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.what == "sizes":
        sizes(args.paths, args.alternatives)
    elif args.what == "build":
        build_walls(args.scale, args.repeat, args.threads)
    else:
        pagerank_iterations(args.scale, args.repeat, args.iterations, args.dir)


if __name__ == "__main__":
    main()
