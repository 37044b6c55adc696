"""Scaling over GPU ranks: dense PageRank iteration, BFS and CC at the 1/4 budget on one GPU and
on R GPU ranks (``mpiexec -n R``, one GPU each, the NCCL exchange), in the same run.

Usage (on a machine with R GPUs): python3 tools/bench_gpu_ranks.py --scale 24 [--ranks 2]
[--repeat 3] [--dir DIR] [--json out.json] [--cases bfs,cc] [--profile]

The graph and budgets are tools/bench_targets.py's: RMAT of ``--scale`` (seed 1, edge factor 16,
32 shards, reused from ``--dir``), BFS from the highest-out-degree vertex, the 1/4 budget = vertex
state + 1/4 of the shard bytes the program reads (bench_gpu.budget_quarter), per GPU: each rank
gets it whole. Also "pagerank, same total": the ranks' budgets adding up to one GPU's (vertex state
each + 1/(4R) of the shard bytes). Each case runs ``--repeat`` + 1 times in one Session (the first
fills the pinned host cache); its figure is the median of the timed runs (PageRank: the median
of their iterations after the first, ``--pr-iters`` iterations a run). BFS and CC run with the
engine's default direction and pulled, on one GPU here and on the ranks in
``mpiexec -n R python3 tools/bench_gpu_ranks.py --worker SPEC``, rank 0 reporting (its iterations
wait for every rank's exchange, so they are the world's). Every rank case's values are compared
with one GPU's (BFS and CC exactly, PageRank to 1e-9). Beside rank 0's figure (its start from its
own state upload, so with the time it waits there for the ranks still running the program's init
on the host), "from the last rank's start" counts the start of the rank that began last (it
waits for none), as one GPU's figure counts its start after its init. ``--profile`` records every run's
iterations on every rank (the warm run's too): host milliseconds of the executor's steps
(``cuda.*``, ``rank.*``: begin, publish, read_back with the device sync it waits in), of the
exchange's (``nccl.*``, ``mpi.counts``), and the garbage collector's pauses (``gc``; ``gc2``:
full collections), beside each iteration's time, exchange and kernel milliseconds; the first
iteration's steps include the run's start.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import grstream as gr  # noqa: E402
from bench_gpu import PINNED, budget_quarter, log, unbounded_model  # noqa: E402

FIELDS = {"pagerank": "rank", "bfs": "level", "cc": "label"}


def program(name, source):
    algos = gr.algorithms
    return {"pagerank": lambda: algos.pagerank.PageRank(),
            "bfs": lambda: algos.bfs.BFS(source=source),
            "cc": lambda: algos.cc.ConnectedComponents()}[name]


#: host seconds per phase of the current iteration (``--profile``: filled by :func:`profile_hooks`)
PHASES = {}


def _timed(cls, name, key):
    """Wrap ``cls.name`` (a class's or a module's) to add its host seconds (with what it waits
    for) to PHASES[key]."""
    fn = vars(cls).get(name)
    if fn is None:
        return

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[key] = PHASES.get(key, 0.0) + time.perf_counter() - t0
    setattr(cls, name, wrapper)


def _stamped(cls, name, key):
    """Record in PHASES[key] the wall clock (seconds) when ``cls.name`` is called."""
    fn = cls.__dict__[name]

    def wrapper(*args, **kwargs):
        PHASES[key] = time.time()
        return fn(*args, **kwargs)
    setattr(cls, name, wrapper)


def profile_hooks():
    """Time the executor's and the exchange's steps on the host, and the garbage collector's
    pauses (``--profile``): each iteration's seconds per step, beside its stats."""
    import gc

    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.distributed import exchange, gpu_rank, nccl, ranks
    from grstream.engine import planner, session
    # a run's host work before its start (init, the push check), and when each rank began the
    # run (after the run's first collective) and its start (wall clock: the ranks share a host)
    # (a declared start: the seed ids only; a host init under ranks: Ranks.initial_state, which
    # start_state calls, with the seed's gather)
    _timed(session, "start_state", "init")
    _timed(planner.Planner, "allow_push", "allow_push")
    for name, key in (("_guarded", "entered_at"), ("_start", "start_at")):
        _stamped(session.Session, name, key)
    for name in ("begin", "publish", "read_back", "set_frontier", "load_state", "fill_state"):
        _timed(CudaExecutor, name, "cuda." + name)
        _timed(gpu_rank.CudaRankExecutor, name, "rank." + name)
    for name in ("push", "push_everywhere", "state", "union_bitmap"):
        _timed(nccl.NcclExchange, name, "nccl." + name)
    _timed(exchange.MpiExchange, "counts", "mpi.counts")
    started = {}

    def collect(phase, info):
        if phase == "start":
            started["t"] = time.perf_counter()
        elif "t" in started:
            PHASES["gc"] = PHASES.get("gc", 0.0) + time.perf_counter() - started.pop("t")
            if info.get("generation") == 2:
                PHASES["gc2"] = PHASES.get("gc2", 0) + 1
    gc.callbacks.append(collect)


def profiled_run(session, prog, max_iter):
    """``session.run`` with each iteration's PHASES (the first holds the start's)."""
    rows = []

    def each(st):
        rows.append({"ms": round(st.time_total * 1e3, 3), "dir": st.plan.get("direction"),
                     "changed": st.changed_vertices, "ex_ms": round(st.time_exchange * 1e3, 3),
                     "ex_mb": round(st.bytes_exchanged / 1e6, 2), "kernel_ms": round(st.time_kernel * 1e3, 3),
                     **{k: round(v * 1e3, 3) if isinstance(v, float) else v for k, v in PHASES.items()}})
        PHASES.clear()
    PHASES.clear()
    result = session.run(prog, max_iter=max_iter, callback=each)
    result.info["profile"] = rows
    return result


def run_case(path, case, source, repeat, pr_iters, comm=None, device="cuda", profile=False):
    """(figures, values) of one case: ``repeat`` timed runs after a warm one in one Session."""
    make = program(case["algo"], source)
    max_iter = pr_iters if case["algo"] == "pagerank" else None
    pinned = {"pinned_budget": PINNED} if device == "cuda" else {}
    with gr.Session(path, device=device, memory_budget=case["budget"], direction=case.get("direction", "auto"),
                    comm=comm, **pinned) as session:
        if profile:
            runs = [profiled_run(session, make(), max_iter) for _ in range(repeat + 1)]
            profiles = [{"start_ms": round(r.info.get("start_wall_s", 0.0) * 1e3, 3), "iterations": r.info["profile"]}
                        for r in runs]
            runs = runs[1:]
        else:
            session.run(make(), max_iter=max_iter)
            runs = [session.run(make(), max_iter=max_iter) for _ in range(repeat)]
    total = [r.info.get("start_wall_s", 0.0) + sum(s.time_total for s in r.stats) for r in runs]
    per_it = [s.time_total for r in runs for s in r.stats[1:]]
    last = runs[-1]
    its = max(len(last.stats), 1)
    out = {"ms": float(np.median(total)) * 1e3, "ms_all": [round(t * 1e3, 2) for t in total],
           "iteration_median_ms": float(np.median(per_it)) * 1e3 if per_it else 0.0,
           "iterations": last.iterations, "budget": case["budget"],
           "bytes_h2d_per_iteration": sum(s.bytes_h2d for s in last.stats) / its,
           "exchange_bytes_per_iteration": sum(s.bytes_exchanged for s in last.stats) / its,
           "exchange_ms_per_iteration": sum(s.time_exchange for s in last.stats) / its * 1e3,
           "resident_shards": last.info["memory"]["resident_shards"],
           "rank_stats": last.info.get("rank_stats")}
    if comm is not None:
        # the ranks start a run when each has run the program's init on the host (O(n) numpy, the
        # same work on every rank), which ends at different times: the first collective of the
        # start makes the early ones wait. From the last rank's start on, every rank is ready
        ready = np.min(comm.allgather([r.info.get("start_wall_s", 0.0) for r in runs]), axis=0)
        world = [a + sum(s.time_total for s in r.stats) for a, r in zip(ready, runs)]
        out.update(ms_ready=float(np.median(world)) * 1e3, ms_ready_all=[round(t * 1e3, 2) for t in world])
    if profile:   # every rank's (rank 0 gathers them; one GPU: its own)
        out["profile"] = profiles if comm is None else comm.gather(profiles, root=0)
        if comm is not None and comm.Get_rank() == 0:
            out["starts"] = starts(out["profile"])
    return out, last.values[FIELDS[case["algo"]]]


def starts(profile):
    """Per run (the warm one first), each rank's host ms of init and of the push check, and when
    it reached its start, in ms after the first rank entered the run (``--profile``)."""
    out = []
    for k in range(len(profile[0])):
        first = [p[k]["iterations"][0] if p[k]["iterations"] else {} for p in profile]
        t0 = min((f["entered_at"] for f in first if "entered_at" in f), default=0.0)
        out.append([{"init": f.get("init"), "allow_push": f.get("allow_push"),
                     "start_at": round(f["start_at"] - t0, 3) if "start_at" in f else None} for f in first])
    return out


def worker(spec_path):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    with open(spec_path) as fh:
        spec = json.load(fh)
    results, values = {}, {}
    if spec["profile"]:
        profile_hooks()
    for case in spec["cases"]:
        res, value = run_case(spec["path"], case, spec["source"], spec["repeat"], spec["pr_iters"], comm,
                              spec["device"], spec["profile"])
        results[case["label"]] = res
        values[case["label"]] = value
        if comm.Get_rank() == 0:
            log(f"  ranks {case['label']}: {res['ms']:.1f} ms, iteration {res['iteration_median_ms']:.2f} ms; "
                f"from the last rank's start {res['ms_ready']:.1f} ms")
            for k, run in enumerate(res.get("starts", [])):   # (--profile)
                log(f"    run {k}: " + "; ".join(f"rank {r} init {x['init']} ms, push check {x['allow_push']} ms, "
                                                 f"start at +{x['start_at']} ms" for r, x in enumerate(run)))
    if comm.Get_rank() == 0:
        np.savez(spec["values"], **values)
        with open(spec["out"], "w") as fh:
            json.dump(results, fh, default=str)


def graph(scale, shards, folder):
    path = os.path.join(folder, f"rmat{scale}.h5")
    if not os.path.exists(path):
        from grstream.io.generate import rmat
        t0 = time.perf_counter()
        src, dst = rmat(scale, 16, seed=1)
        gr.build_shards((src, dst), path, num_shards=shards, progress=False)
        log(f"built {path} in {time.perf_counter() - t0:.1f}s")
    return path


def budgets(store, ranks):
    """bench_targets' 1/4 budgets per program, and PageRank's split over ``ranks``."""
    BFS, CC, PR = gr.algorithms.bfs.BFS, gr.algorithms.cc.ConnectedComponents, gr.algorithms.pagerank.PageRank
    out = {"bfs": budget_quarter(BFS(), store, push=True)[0], "cc": budget_quarter(CC(), store, push=True)[0],
           "pagerank": budget_quarter(PR(), store)[0]}
    model = unbounded_model(PR(), store)
    out["pagerank_split"] = model.static_bytes + model.scratch_bytes + sum(model.regions) // (4 * ranks)
    return out


def table(out, ranks):
    rows = [("dense PageRank iteration, 1/4 budget per GPU", "pagerank", "pagerank", "iteration_median_ms"),
            ("dense PageRank iteration, budgets adding up to one GPU's", "pagerank", "pagerank_split",
             "iteration_median_ms"),
            ("BFS, 1/4 budget, default direction", "bfs", "bfs", "ms"),
            ("BFS, 1/4 budget, pulled", "bfs_pull", "bfs_pull", "ms"),
            ("CC, 1/4 budget, default direction", "cc", "cc", "ms"),
            ("CC, 1/4 budget, pulled", "cc_pull", "cc_pull", "ms")]
    lines = [f"| | 1 GPU | {ranks} GPU ranks | from the last rank's start | exchange per iteration ({ranks} ranks) "
             f"| equal |", "|---|---|---|---|---|---|"]
    for label, one, many, key in rows:
        a, b = out["one"].get(one), out["ranks"].get(many)
        if a is None or b is None:
            continue
        ex = f"{b['exchange_bytes_per_iteration'] / 1e6:.1f} MB, {b['exchange_ms_per_iteration']:.2f} ms"
        ready = f"{b['ms_ready']:.2f} ms" if key == "ms" else "-"
        lines.append(f"| {label} | {a[key]:.2f} ms | {b[key]:.2f} ms | {ready} | {ex} | {b.get('equal')} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pr-iters", type=int, default=20)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--json", default=None)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of the script (no budgets)")
    ap.add_argument("--cases", default=None, help="labels to run, comma-separated (default all: pagerank, "
                    "pagerank_split, bfs, bfs_pull, cc, cc_pull)")
    ap.add_argument("--profile", action="store_true", help="each run's iterations in the JSON (every rank's): "
                    "host seconds of the executor's and the exchange's steps, garbage collector pauses")
    ap.add_argument("--mpi-args", default="", help="options for mpiexec before -n (e.g. Open MPI's "
                    "'--bind-to none': the placement of the ranks' processes)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    from grstream.backends import cuda
    path = graph(args.scale, args.shards, args.dir)
    store = gr.open(path)
    source = int(np.argmax(store.out_degree()))
    b = budgets(store, args.ranks) if args.device == "cuda" else dict.fromkeys(
        ("bfs", "cc", "pagerank", "pagerank_split"))
    store.close()
    out = {"scale": args.scale, "shards": args.shards, "world": args.ranks, "device": cuda.available()[1],
           "budgets": b, "one": {}, "ranks": {}}
    one_cases = [{"label": "pagerank", "algo": "pagerank", "budget": b["pagerank"]},
                 {"label": "bfs", "algo": "bfs", "budget": b["bfs"]},
                 {"label": "bfs_pull", "algo": "bfs", "budget": b["bfs"], "direction": "pull"},
                 {"label": "cc", "algo": "cc", "budget": b["cc"]},
                 {"label": "cc_pull", "algo": "cc", "budget": b["cc"], "direction": "pull"}]
    if args.cases:
        keep = set(args.cases.split(","))
        one_cases = [c for c in one_cases if c["label"] in keep]
    if args.profile:
        profile_hooks()
    values = {}
    for case in one_cases:
        res, values[case["label"]] = run_case(path, case, source, args.repeat, args.pr_iters, None, args.device,
                                              args.profile)
        out["one"][case["label"]] = res
        log(f"  1 GPU {case['label']}: {res['ms']:.1f} ms, iteration {res['iteration_median_ms']:.2f} ms")
    spec = {"path": path, "source": source, "repeat": args.repeat, "pr_iters": args.pr_iters, "device": args.device,
            "out": os.path.join(args.dir, "ranks_out.json"), "values": os.path.join(args.dir, "ranks_values.npz"),
            "cases": [{"label": "pagerank", "algo": "pagerank", "budget": b["pagerank"]},
                      {"label": "pagerank_split", "algo": "pagerank", "budget": b["pagerank_split"]},
                      *[c for c in one_cases if c["algo"] != "pagerank"]], "profile": args.profile}
    if args.cases:
        spec["cases"] = [c for c in spec["cases"] if c["label"] in keep]
    spec_path = os.path.join(args.dir, "ranks_spec.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable), "mpiexec")
    t0 = time.perf_counter()
    proc = subprocess.run([mpiexec, *shlex.split(args.mpi_args), "-n", str(args.ranks), sys.executable,
                           os.path.abspath(__file__), "--worker", spec_path])
    log(f"ranks: {time.perf_counter() - t0:.1f}s, exit {proc.returncode}")
    if proc.returncode == 0:
        with open(spec["out"]) as fh:
            out["ranks"] = json.load(fh)
        got = np.load(spec["values"])
        for label, res in out["ranks"].items():
            want = values.get("pagerank" if label.startswith("pagerank") else label)
            if want is None:   # (--cases without its one-GPU peer)
                continue
            res["equal"] = bool(np.allclose(got[label], want, rtol=1e-9, atol=0) if label.startswith("pagerank")
                                else np.array_equal(got[label], want))
    log(table(out, args.ranks))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
