#!/usr/bin/env python3
"""What checkpoints cost: PageRank on an RMAT graph for a fixed number of iterations, without a
checkpoint folder (the peer), with one where none falls due (the per-iteration cost of having
them on), and with one written after every iteration (the cost of writing one), side by side
in the same run; then a resume from the middle, checked equal to the uninterrupted run.

    python tools/bench_checkpoint.py --scale 16 [--iterations 40] [--repeat 5] [--device cpu]

Every figure is the median (and the best) of --repeat runs, in seconds.
"""
import argparse
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import grstream as gr  # noqa: E402
from grstream.algorithms.pagerank import PageRank  # noqa: E402
from grstream.io.generate import rmat  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    try:
        gr.build_shards(rmat(args.scale, edge_factor=8, seed=0), work / "g.h5", num_shards=8,
                        progress=False)
        store = gr.open(work / "g.h5")
        folder = work / "ck"

        def run(**options):
            shutil.rmtree(folder, ignore_errors=True)
            t0 = time.perf_counter()
            result = gr.run(PageRank(tol=1e-300), store, device=args.device,
                            max_iter=args.iterations, **options)
            return time.perf_counter() - t0, result

        run()   # warm-up
        cases = {"no checkpoint (peer)": {}, "checkpoint, none due": {"checkpoint": folder},
                 "checkpoint every iteration": {"checkpoint": folder, "checkpoint_every": 0}}
        times = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, options in cases.items():
                times[name].append(run(**options)[0])
        size = sum(f.stat().st_size for f in folder.iterdir())
        _, whole = run()
        half = args.iterations // 2

        def stop(stats):
            if stats.iteration == half:
                raise KeyboardInterrupt   # a crash: the last checkpoint is the iteration before
        try:
            gr.run(PageRank(tol=1e-300), store, device=args.device, max_iter=args.iterations,
                   checkpoint=folder, checkpoint_every=0, callback=stop)
        except KeyboardInterrupt:
            pass
        resumed = gr.run(PageRank(tol=1e-300), store, device=args.device, max_iter=args.iterations,
                         resume=folder)
        equal = bool(np.array_equal(resumed.value, whole.value))
        n, m = store.num_vertices, store.num_edges
        print(f"{platform.node()} {args.device}: RMAT-{args.scale} ({n:,} vertices, {m:,} edges), "
              f"PageRank {args.iterations} iterations, {args.repeat} repeats")
        for name, ts in times.items():
            print(f"  {name:<28} median {statistics.median(ts):.3f} s  best {min(ts):.3f} s")
        per = (statistics.median(times["checkpoint every iteration"])
               - statistics.median(times["no checkpoint (peer)"])) / args.iterations
        print(f"  one checkpoint: {per * 1e3:.1f} ms ({size / 2**20:.1f} MiB in the folder); "
              f"resumed at {half} equals the uninterrupted run bit for bit: {equal}")
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
