"""What vertex reordering buys the compressed layout, and what it costs the build.

Usage: python tools/bench_reorder.py [--input /tmp/rmat24.npy] [--shards 32]
       [--datasets ../shared/datasets] [--orders none,degree,rcm] [--directions in,out]
       [--dir /tmp] [--json OUT]

Each input is built once per order (``build_shards(..., reorder=ORDER)``; ``none`` is the peer:
the build without reordering, in the same run), each build in a process of its own, timed,
with its CPU seconds (user + system, all its threads) and peak RSS; then every shard's CSC
sources (``in/src``) and CSR destinations (``out/dst``)
go through the codec's encoder (:func:`grstream.store.codec.encode`), and its bytes per edge are
reported (all four arrays it writes counted) beside the plain 4 B of int32 ids. ``--input``
is an edge file (``grstream generate rmat --scale 24 --seed 1 -o /tmp/rmat24.npy`` writes the
target graph); ``--datasets`` adds every graph of that folder, one shard each.
"""
import argparse
import json
import multiprocessing
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

DATASET_SUFFIXES = (".mtx", ".gr", ".txt")


def encoded_bytes(ids, num_vertices):
    """Bytes the codec writes for one id array (its four arrays)."""
    from grstream.store import codec
    return sum(part.nbytes for part in codec.encode(ids, num_vertices).values())


def measure(source, path, order, num_shards, directions):
    """Build ``source`` in ``order`` (timed) and encode its id arrays; runs in a child process."""
    import grstream as gr
    started, cpu = time.perf_counter(), _cpu_seconds()
    gr.build_shards(source, path, num_shards=num_shards, reorder=None if order == "none" else order,
                    progress=False)
    seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sizes = {"in": 0, "out": 0}
    with gr.open(path) as store:
        n, m = store.num_vertices, store.num_edges
        for i in range(store.num_shards):
            for direction in directions:
                name = f"{direction}/{'src' if direction == 'in' else 'dst'}"
                sizes[direction] += encoded_bytes(store.read(i, name), n)
    os.unlink(path)
    return {"order": order, "build_s": seconds, "build_cpu_s": cpu, "peak_bytes": peak,
            "vertices": n, "edges": m,
            "csc_bytes_per_edge": sizes["in"] / max(m, 1) if "in" in directions else None,
            "csr_bytes_per_edge": sizes["out"] / max(m, 1) if "out" in directions else None}


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child(queue, *args):
    queue.put(measure(*args))


def in_child(*args):
    """:func:`measure` in a fresh process (its own peak RSS, its memory returned after)."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,) + args)
    child.start()
    result = queue.get()
    child.join()
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", action="append", default=[], help="an edge file (repeatable)")
    ap.add_argument("--shards", type=int, default=32, help="shards of each --input build")
    ap.add_argument("--datasets", help="a folder of graphs (.mtx, .gr, .txt), one shard each")
    ap.add_argument("--orders", default="none,degree,rcm")
    ap.add_argument("--directions", default="in,out",
                    help="id arrays to encode: in (CSC sources), out (CSR destinations); "
                         "empty: the builds alone")
    ap.add_argument("--dir", default="/tmp", help="where the stores are built (and removed)")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args(argv)
    inputs = [(path, args.shards) for path in args.input]
    if args.datasets:
        inputs += [(os.path.join(args.datasets, name), 1)
                   for name in sorted(os.listdir(args.datasets)) if name.endswith(DATASET_SUFFIXES)]
    rows = []
    print(f"{'graph':<22} {'order':<7} {'build s':>8} {'CPU s':>8} {'peak GB':>8} "
          f"{'CSC B/edge':>10} {'CSR B/edge':>10}", flush=True)
    for path, shards in inputs:
        target = os.path.join(args.dir, f"bench-reorder-{os.getpid()}.h5")
        for order in args.orders.split(","):
            row = in_child(path, target, order, shards,
                           [d for d in args.directions.split(",") if d])
            row["graph"] = os.path.basename(path)
            rows.append(row)
            sizes = [f"{'-' if b is None else format(b, '.3f'):>10}"
                     for b in (row["csc_bytes_per_edge"], row["csr_bytes_per_edge"])]
            print(f"{row['graph']:<22} {order:<7} {row['build_s']:8.2f} {row['build_cpu_s']:8.2f} "
                  f"{row['peak_bytes'] / 1e9:8.2f} {' '.join(sizes)}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
