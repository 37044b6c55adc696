"""Asynchronous local rounds (IterationPlan.local_rounds) on the CPU: BFS, SSSP and CC with and
without them, in the same run, on RMAT and on a real road graph (issue 8 item 4).

Usage: python3 tools/bench_local_rounds.py [--scale 20] [--store r20.h5] [--rounds 8]
    [--datasets ../shared/datasets] [--repeat 3]

Local rounds run inside pull units, so every row pulls (``direction="pull"``), at the minimum
memory budget (one shard loaded at a time, the out-of-core case local rounds are for) and with
everything resident. Rows: iterations and seconds (median of ``--repeat``) without and with
local rounds, and whether the results are identical. Prints one JSON document.
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

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from grstream.algorithms.bfs import BFS  # noqa: E402
from grstream.algorithms.cc import ConnectedComponents  # noqa: E402
from grstream.algorithms.sssp import SSSP  # noqa: E402
from grstream.errors import MemoryBudgetError  # noqa: E402


def minimum_budget(program, store):
    try:
        gr.run(program, store, memory_budget=1, max_iter=0)
    except MemoryBudgetError as exc:
        return exc.minimum
    return None


def measure(make, store, budget, rounds, repeat):
    times, r = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = gr.run(make(), store, memory_budget=budget, direction="pull",
                   backend_options={"threads": 2, "local_rounds": rounds})
        times.append(time.perf_counter() - t0)
    return r, statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--store", default=None)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasets", default=os.environ.get("GRSTREAM_DATASETS", "../shared/datasets"))
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="grstream-blr-")
    path = args.store or os.path.join(tmp, f"rmat{args.scale}.h5")
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        src, dst = rmat(args.scale, 16, seed=1)
        gr.build_shards((src, dst), path, num_shards=8, progress=False)
    graphs = {f"RMAT-{args.scale}": gr.open(path)}
    road = os.path.join(args.datasets, "rome99.gr")
    if os.path.exists(road):
        graphs["rome99"] = gr.open(gr.build_shards(road, os.path.join(tmp, "rome.h5"),
                                                   num_shards=8, progress=False))
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
           "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
           "rounds": args.rounds, "rows": []}
    for gname, store in graphs.items():
        source = int(np.argmax(store.out_degree()))
        weighted = "weight" in store.edge_props
        programs = {"bfs": lambda: BFS(source=source), "cc": ConnectedComponents}
        if weighted:
            programs["sssp"] = lambda: SSSP(source=source)
        for pname, make in programs.items():
            for bname, budget in (("all", None), ("minimum", minimum_budget(make(), store))):
                sync, t_sync = measure(make, store, budget, 0, args.repeat)
                loc, t_loc = measure(make, store, budget, args.rounds, args.repeat)
                doc["rows"].append({
                    "graph": gname, "program": pname, "budget": bname,
                    "iterations": [sync.iterations, loc.iterations],
                    "seconds": [round(t_sync, 3), round(t_loc, 3)],
                    "local_rounds_run": sum(s.local_rounds for s in loc.stats),
                    "identical": bool(np.array_equal(sync.value, loc.value))})
                print(json.dumps(doc["rows"][-1]), file=sys.stderr, flush=True)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
