"""nvcomp (NVIDIA's GPU compression library) as a baseline for the compressed layout, on the
CSC id arrays of a shard store's shards.

Usage (on the GPU machine, nvcomp's wheel installed: ``nvidia-nvcomp-cu13``):
    python tools/bench_nvcomp.py [--scale 24] [--shards 32] [--orders none,degree]
        [--repeat 5] [--workers N] [--json OUT]

The graph is tools/bench_targets.py's: RMAT (edge factor 16, seed 1), ``n`` = largest id + 1.
Each shard's ``in/src`` (the sources of its vertices' in-edges, sorted by destination then
source, int32) is what ``build_shards(..., num_shards=S)`` writes; the edges are sorted on the
GPU instead of built into a store, and the intervals are the builder's
(:func:`grstream.partition.intervals.choose_intervals` over in + out degrees). ``degree`` first
gives the vertices the ids of ``build_shards(..., reorder="degree")``.

Per order, every shard's array is compressed by each nvcomp codec as one batch (64 KiB chunks,
the codec's int32 data type where it takes one) and decompressed as one batch ``--repeat``
times (after a checked warm-up): bytes per edge (the compressed buffers with nvcomp's headers)
and GPU decompression GB/s (int32 bytes out over the best time, CUDA-synchronised wall time).
Beside them, the codec layout's bytes per edge (:func:`grstream.store.codec.encode`, every
array it writes, over the shards on ``--workers`` processes).
"""
import argparse
import json
import os
import pathlib
import sys
import time
import multiprocessing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

#: (name shown, nvcomp algorithm, its options); ANS codes bytes (its default data type)
CODECS = (
    ("Cascaded", "Cascaded", {"data_type": "<i4"}),
    ("Bitcomp", "Bitcomp", {"data_type": "<i4"}),
    ("Bitcomp sparse", "Bitcomp", {"data_type": "<i4", "algorithm_type": 1}),
    ("LZ4", "LZ4", {"data_type": "<i4"}),
    ("Snappy", "Snappy", {}),
    ("ANS", "ANS", {}),
    ("Zstd", "Zstd", {}),
    ("GDeflate", "GDeflate", {}),
    ("Deflate", "Deflate", {}),
)


def vertex_count(src, dst):
    """``n`` of a store built from the arrays: the largest id + 1."""
    return int(max(int(src.max()), int(dst.max()))) + 1


def csc_shards(src, dst, n, num_shards, xp):
    """Every shard's CSC sources (int32, in ``xp``'s memory: cupy or numpy).

    The store's ``in/src``: sources sorted by (destination, source), repeated pairs kept, cut at
    the builder's intervals.
    """
    from grstream.partition.intervals import choose_intervals
    in_degree = xp.bincount(dst, minlength=n)
    degree = in_degree + xp.bincount(src, minlength=n)
    intervals, _ = choose_intervals(_host(degree, xp).astype(np.int64), num_shards)
    key = (dst.astype(xp.uint64) << xp.uint64(32)) | src.astype(xp.uint64)
    key.sort()
    ids = (key & xp.uint64(0xFFFFFFFF)).astype(xp.int32)
    del key
    starts = np.concatenate(([0], np.cumsum(_host(in_degree, xp), dtype=np.int64)))[intervals]
    return [ids[int(a):int(b)] for a, b in zip(starts[:-1], starts[1:])]


def degree_order(src, dst, n, xp):
    """``(src, dst)`` in the ids ``reorder="degree"`` gives (:func:`vertex_order`)."""
    from grstream.partition.reorder import vertex_order
    degree = _host(xp.bincount(src, minlength=n) + xp.bincount(dst, minlength=n), xp)
    order = vertex_order("degree", degree.astype(np.int64))
    new_id = np.empty(n, dtype=np.int32)
    new_id[order] = np.arange(n, dtype=np.int32)
    new_id = xp.asarray(new_id)
    return new_id[src], new_id[dst]


def _host(array, xp):
    return array.get() if hasattr(array, "get") else np.asarray(array)


def _encode_some(shards, n, queue):
    from grstream.store import codec
    queue.put(sum(sum(part.nbytes for part in codec.encode(ids, n).values()) for ids in shards))


def layout_bytes(shards, n, workers):
    """Bytes the codec layout writes for every shard's ids, on ``workers`` forked processes
    (each takes every ``workers``-th shard; forked, so nothing is pickled but the sums)."""
    import grstream.store.codec  # noqa: F401 - an ImportError here, not in the workers
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_encode_some, args=(shards[k::workers], n, queue))
                for k in range(min(workers, len(shards)))]
    for child in children:
        child.start()
    total = sum(queue.get() for _ in children)
    for child in children:
        child.join()
    return total


def nvcomp_row(label, algorithm, options, shards, repeat):
    """One codec over the shards as a batch: bytes, encode seconds, best decode seconds."""
    import cupy as cp
    from nvidia import nvcomp
    sync = cp.cuda.Device().synchronize
    codec = nvcomp.Codec(algorithm=algorithm, **options)
    batch = nvcomp.as_arrays(shards)
    sync()
    started = time.perf_counter()
    encoded = codec.encode(batch)
    nbytes = sum(encoded.buffer_sizes)
    sync()
    encode_s = time.perf_counter() - started
    config = codec.decompression_config(encoded)
    out = codec.decode(encoded, data_type="<i4", decompression_config=config)
    for k, ids in enumerate(shards):
        if not bool(cp.array_equal(cp.asarray(out[k]).view(cp.int32).reshape(-1), ids)):
            raise AssertionError(f"{label}: shard {k} decodes to other ids")
    best = float("inf")
    for _ in range(repeat):
        sync()
        started = time.perf_counter()
        codec.decode(encoded, out=out, decompression_config=config)
        sync()
        best = min(best, time.perf_counter() - started)
    return {"codec": label, "bytes": int(nbytes), "encode_s": encode_s, "decode_s": best}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--orders", default="none,degree")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes that run the codec layout's (numpy) encoder")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args(argv)
    import cupy as cp
    from grstream.io.generate import rmat
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    started = time.perf_counter()
    src, dst = rmat(args.scale, 16, seed=1)
    n = vertex_count(src, dst)
    src, dst = cp.asarray(src.astype(np.int32)), cp.asarray(dst.astype(np.int32))
    print(f"device {device}; RMAT-{args.scale} generated in {time.perf_counter() - started:.1f} s",
          flush=True)
    rows = []
    for order in args.orders.split(","):
        s, d = (src, dst) if order == "none" else degree_order(src, dst, n, cp)
        # each shard in an allocation of its own (aligned as nvcomp's inputs want)
        shards = [ids.copy() for ids in csc_shards(s, d, n, args.shards, cp)]
        del s, d
        m = sum(len(ids) for ids in shards)
        started = time.perf_counter()
        try:
            layout = layout_bytes([ids.get() for ids in shards], n, args.workers)
            row = {"codec": "grstream layout (numpy encoder)", "bytes": layout,
                   "encode_s": time.perf_counter() - started, "decode_s": None}
        except ImportError as exc:  # a checkout without the codec layout
            row = {"codec": "grstream layout", "error": f"{type(exc).__name__}: {exc}"}
        table = [row]
        for label, algorithm, options in CODECS:
            try:
                table.append(nvcomp_row(label, algorithm, options, shards, args.repeat))
            except Exception as exc:    # a codec this wheel lacks: say so, measure the rest
                table.append({"codec": label, "error": f"{type(exc).__name__}: {exc}"})
        for row in table:
            row.update(order=order, edges=m, device=device, scale=args.scale)
            if "error" in row:
                print(f"{order:<7} {row['codec']:<32} {row['error']}", flush=True)
                continue
            rate = f"{4 * m / row['decode_s'] / 1e9:8.1f}" if row["decode_s"] else "       -"
            print(f"{order:<7} {row['codec']:<32} {row['bytes'] / m:6.3f} B/edge  "
                  f"decode {rate} GB/s  encode {row['encode_s']:6.2f} s", flush=True)
        rows += table
        del shards
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
