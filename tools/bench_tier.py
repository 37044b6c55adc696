"""The pinned host tier: PageRank streaming through a small device budget, with the pinned cache the
size of the device budget (the former default) and with the cache sized from the host (the default).

Usage (on the GPU machine): python3 tools/bench_tier.py --scale 25 --shards 64 [--dir DIR]
[--iters 10] [--json out.json]

An RMAT graph (edge factor 16, seed 1; reused from ``--dir`` when there) is run with the device
budget of tools/bench_gpu.py (vertex state + 1/4 of the shard bytes PageRank reads), so three
quarters of the graph stream every iteration. Each case is one fresh Session and one run of
``--iters`` iterations: the first iteration reads every streamed shard from the store, the later
ones find what the pinned cache holds. Printed per case: the pinned budget and cached shards, the
median later iteration (ms, GB over the link, GB/s of the iteration and of the copy engine while
copying) and the bytes per tier (resident, pinned, store) of a later iteration. The two cases'
ranks must agree and match the CPU executor's within L1 1e-6 (``--skip-cpu`` leaves that out).
Records the device, its pinned link rate, cores, host memory, the date and the command.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from bench_gpu import budget_quarter, log  # noqa: E402
from grstream.engine.memory import host_available  # noqa: E402


def case(store, budget, pinned, iters, device):
    """One fresh Session, one PageRank run of ``iters`` iterations: its figures and ranks."""
    t0 = time.perf_counter()
    with gr.Session(store, device=device, memory_budget=budget, pinned_budget=pinned) as session:
        r = session.run(gr.algorithms.pagerank.PageRank(), max_iter=iters)
    wall = time.perf_counter() - t0
    later = r.stats[1:] or r.stats
    k = int(np.argsort([s.time_total for s in later])[len(later) // 2])
    mid = later[k]
    mem = r.info["memory"]
    out = {"pinned_budget": mem["pinned_budget"], "pinned_rule": mem.get("pinned_rule"),
           "pinned_shards": mem["pinned_shards"], "resident_shards": mem["resident_shards"],
           "num_shards": mem["num_shards"], "wall_s": wall, "iterations": r.iterations,
           "first_iteration_ms": r.stats[0].time_total * 1e3,
           "iteration_ms": mid.time_total * 1e3, "iteration_gb": mid.bytes_h2d / 1e9,
           "iteration_gbps": mid.bytes_h2d / mid.time_total / 1e9 if mid.time_total else 0.0,
           "copy_gbps": mid.bytes_h2d / mid.time_copy / 1e9 if mid.time_copy else 0.0,
           "tier_bytes": dict(mid.tier_bytes), "first_tier_bytes": dict(r.stats[0].tier_bytes),
           "store_gb_read": r.totals()["bytes_read"] / 1e9}
    return out, np.asarray(r.values["rank"], dtype=np.float64)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=25)
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--dir", default=None, help="where the store is (built there when missing)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-cpu", action="store_true", help="leave out the CPU executor's check")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of the script")
    args = ap.parse_args(argv)
    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
           "cores": os.cpu_count(), "host_available": host_available(),
           "scale": args.scale, "shards": args.shards}
    gpu = args.device == "cuda"
    if gpu:
        from bench_link import pinned_h2d_gbps
        from grstream.backends import cuda
        out["device"] = cuda.available()[1]
        out["pinned_h2d_gbps"] = pinned_h2d_gbps(mib=1024, repeat=5)
        log(f"device {out['device']}: pinned H2D {out['pinned_h2d_gbps']:.1f} GB/s, "
            f"{out['cores']} cores, {out['host_available'] / 2**30:.1f} GiB available")
    folder = args.dir or os.getcwd()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rmat{args.scale}-{args.shards}.h5")
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        t0 = time.perf_counter()
        src, dst = rmat(args.scale, 16, seed=1)
        t1 = time.perf_counter()
        gr.build_shards((src, dst), path, num_shards=args.shards, progress=False)
        out.update(generate_s=t1 - t0, build_s=time.perf_counter() - t1)
        del src, dst
        log(f"built {path} in {out['generate_s']:.1f} + {out['build_s']:.1f} s")
    store = gr.open(path)
    program = gr.algorithms.pagerank.PageRank()
    if gpu:
        budget, minimum, needed = budget_quarter(program, store)
    else:   # the CPU's budget rule differs; the smoke test streams half of the shards
        budget, minimum, needed = None, 0, store.nbytes()
    out.update(num_vertices=int(store.num_vertices), num_edges=int(store.num_edges),
               budget=budget, minimum=minimum, pagerank_bytes=needed)
    log(f"RMAT-{args.scale}: {store.num_vertices:,} vertices, {store.num_edges:,} edges; PageRank "
        f"reads {needed / 1e9:.2f} GB of shards; device budget {(budget or 0) / 1e9:.2f} GB")
    cases = {"device-sized cache": budget if gpu else None, "host-sized cache": None}
    ranks = {}
    for name, pinned in cases.items():
        fig, ranks[name] = case(store, budget, pinned, args.iters, args.device)
        out[name] = fig
        log(f"{name}: pinned budget {fig['pinned_budget'] / 1e9:.2f} GB ({fig['pinned_rule']}), "
            f"{fig['pinned_shards']} shards cached, {fig['resident_shards']} resident of "
            f"{fig['num_shards']}; first iteration {fig['first_iteration_ms']:.0f} ms, later "
            f"{fig['iteration_ms']:.1f} ms, {fig['iteration_gb']:.2f} GB over the link, "
            f"{fig['iteration_gbps']:.1f} GB/s ({fig['copy_gbps']:.1f} GB/s while copying); "
            f"tiers {fig['tier_bytes']}; {fig['store_gb_read']:.1f} GB read from the store in "
            f"{fig['wall_s']:.1f} s")
    a, b = ranks.values()
    out["l1_between_cases"] = float(np.abs(a - b).sum())
    if not args.skip_cpu:
        t0 = time.perf_counter()
        ref = gr.run(program, store, max_iter=args.iters).values["rank"]
        out["cpu_s"] = time.perf_counter() - t0
        out["l1_vs_cpu"] = float(np.abs(b - np.asarray(ref, dtype=np.float64)).sum())
    log(f"checks: L1 between the cases {out['l1_between_cases']:.3g}"
        + (f", against the CPU executor {out['l1_vs_cpu']:.3g} ({out['cpu_s']:.0f} s)"
           if "l1_vs_cpu" in out else ""))
    ok = out["l1_between_cases"] < 1e-6 and out.get("l1_vs_cpu", 0.0) < 1e-6
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    print(json.dumps({k: out[k] for k in ("device-sized cache", "host-sized cache")}, default=str))
    log("results check: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
