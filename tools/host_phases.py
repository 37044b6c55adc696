"""Host time per BFS level on the GPU, by phase: where a level's wall time beyond its kernels goes.

Usage (on the GPU machine): python3 tools/host_phases.py --scale 24 --dir DIR [--repeat 3]
[--budget BYTES] [--out DIR]

Runs BFS from the highest-out-degree vertex of the compressed, random-label RMAT store of
tools/bench_targets.py (built into ``--dir`` when missing) at ``--budget`` (default: the 1/4
budget bench_targets gives RMAT-24's BFS) and in GPU memory, in one Session each: a warm run,
``--repeat`` timed runs, one run with wall-clock timers around the engine's calls (planning, the
plan's summary, the executor's primitives and their parts: begin, the loads, the launches,
publish, the read back and its wait, the timeline) and around the PyCUDA calls (copies, memsets,
event records and reads, stream waits, launches), then one run under cProfile. The timers add
no synchronisation; each adds about a microsecond a call, so their sums run a little over the
level's wall. Prints per level the timers, largest first; writes ``host_phases.json`` (each
level's wall, kernel and timer figures) and ``host_phases_cprofile.txt`` into ``--out``.
``--device cpu``: the same on the CPU executor (a smoke test of the script: the CUDA timers stay
empty).
"""
import argparse
import collections
import contextlib
import cProfile
import functools
import io
import json
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from bench_gpu import PINNED  # noqa: E402
from bench_targets import build_rmat, compressed_path, per_iteration  # noqa: E402

#: bench_targets' 1/4 budget of BFS on RMAT-24 (vertex state with the push buffers + 1/4 of the
#: shard bytes a push reads; docs/BENCHMARKS.md)
QUARTER_24 = 1290625024


class Timers:
    """Seconds and calls per name and iteration while ``on``; the iteration is the planner's."""

    def __init__(self):
        self.on, self.iteration = False, 0
        self.table = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))

    def add(self, name, seconds, calls=1):
        row = self.table[self.iteration][name]
        row[0] += calls
        row[1] += seconds

    def wrap(self, name, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - t0)
        return timed

    def wrap_generator(self, name, fn):
        """Time spent inside each step of the generator ``fn`` returns (a unit's delivery)."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            inner = fn(*args, **kwargs)

            def steps():
                try:
                    while True:
                        t0 = time.perf_counter()
                        try:
                            item = next(inner)
                        except StopIteration:
                            return
                        finally:
                            if self.on:
                                self.add(name, time.perf_counter() - t0)
                        yield item
                finally:
                    inner.close()
            return steps()
        return timed

    def report(self):
        """level (0: the run's start, "end": its results) -> name -> [calls, ms], largest first."""
        return {it: {k: [v[0], round(v[1] * 1e3, 4)] for k, v in sorted(d.items(), key=lambda kv: -kv[1][1])}
                for it, d in self.table.items()}


#: (module, attribute path, generator) of what is timed
ENGINE = [("grstream.engine.planner", "Planner.iteration", False),
          ("grstream.engine.planner", "Planner.observe", False),
          ("grstream.engine.plan", "IterationPlan.summary", False),
          ("grstream.engine.session", "Session._execute", False)]
CUDA = [("grstream.backends.cuda.executor", f"CudaExecutor.{m}", False)
        for m in ("begin", "gather", "apply", "activate", "done", "publish", "reduce", "read_back")] + \
       [("grstream.backends.cuda.executor", "CudaExecutor.load", True),
        ("grstream.backends.cuda.movement", "Mover.deliver", True),
        ("grstream.backends.cuda.transfer", "ModeTimes.report", False),
        ("grstream.backends.cuda.streams", "Streams.timeline", False),
        ("grstream.backends.cuda.streams", "Streams.settle", False),
        ("grstream.backends.cuda.kernelargs", "PreparedKernel.launch", False),
        ("grstream.backends.cuda.kernelargs", "KernelArgs.convert", False)] + \
       [("grstream.backends.cuda.device", f"DeviceState.{m}", False)
        for m in ("readback", "upload_args", "count_frontier", "clear_counters", "launch")] + \
       [("grstream.backends.cuda.pushes", f"Pushes.{m}", False)
        for m in ("begin", "shard", "several", "apply", "publish", "read_back")]
DRIVER = ["memcpy_dtoh", "memcpy_htod", "memcpy_htod_async", "memcpy_dtoh_async", "memset_d32_async",
          "memcpy_dtod_async", "Stream.synchronize", "Stream.wait_for_event", "Event.synchronize",
          "Event.record", "Event.time_since", "Event.query", "Function.prepared_async_call"]


@contextlib.contextmanager
def installed(timers, cuda=True):
    """The timers around the engine's calls (and, ``cuda``, the CUDA executor's and PyCUDA's)
    while the block runs; everything as it was after."""
    import importlib
    done = []

    def patch(owner, attr, name, generator=False):
        fn = getattr(owner, attr)   # (a class's own attribute is put back; an inherited one removed)
        done.append((owner, attr, vars(owner).get(attr) if isinstance(owner, type) else fn))
        setattr(owner, attr, (timers.wrap_generator if generator else timers.wrap)(name, fn))
    try:
        for module, path, generator in ENGINE + (CUDA if cuda else []):
            cls, attr = path.split(".")
            patch(getattr(importlib.import_module(module), cls), attr, path, generator)
        planner = importlib.import_module("grstream.engine.planner").Planner
        timed = planner.iteration

        def iteration(self, it, *args, **kwargs):
            timers.iteration = it   # (the planner's iteration names the level its calls go to)
            return timed(self, it, *args, **kwargs)
        done.append((planner, "iteration", timed))
        planner.iteration = iteration
        if cuda:
            executor = importlib.import_module("grstream.backends.cuda.executor").CudaExecutor
            state = executor.state

            def final(self):   # the run's results: their download is no level's
                timers.iteration = "end"
                return state(self)
            done.append((executor, "state", vars(executor).get("state")))
            executor.state = final
            driver = importlib.import_module("pycuda.driver")
            for path in DRIVER:
                owner, attr = (driver, path) if "." not in path else (getattr(driver, path.split(".")[0]),
                                                                      path.split(".")[1])
                patch(owner, attr, "cuda." + path)
        yield timers
    finally:
        for owner, attr, original in reversed(done):
            if original is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


def run_case(label, store, source, budget, repeat, device="cuda"):
    """Timed runs, one timed by phase, one profiled: a dict of what was measured and the profile."""
    BFS = gr.algorithms.bfs.BFS
    timers = Timers()
    pinned = PINNED if device == "cuda" else None
    with gr.Session(store, device=device, memory_budget=budget, pinned_budget=pinned) as session:
        session.run(BFS(source=source))
        runs = [session.run(BFS(source=source)) for _ in range(repeat)]
        with installed(timers, cuda=device == "cuda"):
            timers.on = True
            timed = session.run(BFS(source=source))
            timers.on = False
        prof = cProfile.Profile()
        prof.enable()
        session.run(BFS(source=source))
        prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(50)
    stats.sort_stats("cumulative").print_stats(60)
    levels = per_iteration(timed)
    return {"label": label, "budget": budget,
            "runs_ms": [[round(r.info.get("start_wall_s", 0.0) * 1e3, 2)] + [it["ms"] for it in per_iteration(r)]
                        for r in runs],
            "levels": levels, "timers": timers.report()}, buf.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--budget", type=int, default=QUARTER_24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=".")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    store = build_rmat(compressed_path(args.dir, args.scale, "none"), args, True)
    source = int(np.argmax(store.out_degree()))
    out, profiles = [], []
    for label, budget in (("bfs_quarter_c", args.budget), ("bfs_inmem_c", None)):
        res, profile = run_case(label, store, source, budget, args.repeat, args.device)
        out.append(res)
        profiles.append(f"== {label}\n{profile}")
        print(f"== {label}: start and levels (ms) of the timed runs {res['runs_ms']}")
        for it, timers in res["timers"].items():
            level = next((x for x in res["levels"] if x["it"] == it), None)
            head = f"level {it}" + (f" ({level['ms']} ms, kernels {level['kernel_ms']})" if level else "")
            print(f"  {head}: " + "; ".join(f"{k} {n}x {ms:.3f}" for k, (n, ms) in timers.items()))
    with open(os.path.join(args.out, "host_phases.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    with open(os.path.join(args.out, "host_phases_cprofile.txt"), "w") as fh:
        fh.write("\n\n".join(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
