"""Per-unit timeline of BFS's plans on the GPU: when each unit was issued by the host, when its
copy and its kernels ran on the device, and what each copy and each kernel waited for.

Usage (on the GPU machine): python3 tools/trace_units.py --scale 24 --dir DIR [--store c]
[--repeat 3] [--levels 2,3] [--option key=value ...]

Runs BFS from the highest-out-degree vertex of the RMAT store of ``--store`` (``plain``: the
plain store; ``c``: compressed ids, random labels; ``cdegree``: compressed, degree order; built
into ``--dir`` by tools/bench_targets.py when missing) at bench_targets' 1/4 budget (or in GPU
memory with ``--inmem``), ``--repeat`` timed runs after a warm one in one Session, and prints for
the chosen levels of the last run every unit of the plan: its transfer, shards, strategies and
bytes; the host's time issuing it (ms from the plan's first event) and its ``done``; the device
span of its copy and of its kernels (CUDA events, ms from the same origin); and what bounded
each: a copy starts after the previous copy, after the kernels that freed its slot and after
the host issued it; kernels start after their copy and after the kernels queued before them.
Also per level: the planning time, the read back's host wait, copy and kernel busy time and
their overlap. The timing events are the executor's own (``Streams.copy_spans`` /
``kernel_spans``); the tool only reads them before each read back resets them.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from bench_gpu import PINNED, budget_quarter, log  # noqa: E402


class Recorder:
    """Host times and device spans of each plan the executor runs (``plans``: main empties it
    before each timed run, so it ends with the last run's)."""

    def __init__(self):
        self.plans = []
        self.cur = None

    def install(self):
        from grstream.backends.cuda import executor, movement
        from grstream.engine import planner
        rec = self
        orig_iteration = planner.Planner.iteration
        orig_begin = executor.CudaExecutor.begin
        orig_done = executor.CudaExecutor.done
        orig_read_back = executor.CudaExecutor.read_back
        orig_deliver = movement.Mover.deliver

        def iteration(self, *a, **k):
            t = time.perf_counter()
            plan = orig_iteration(self, *a, **k)
            rec.plan_s = (t, time.perf_counter())
            return plan

        def begin(self, plan):
            orig_begin(self, plan)
            rec.cur = {"plan": plan, "host0": self._t0, "units": [], "plan_s": getattr(rec, "plan_s", None),
                       "begin_end": time.perf_counter()}
            rec.plans.append(rec.cur)

        def deliver(self, plan, stats):
            gen = orig_deliver(self, plan, stats)
            ex = self.ex
            try:
                while True:
                    c0, t0 = len(ex.copy_spans), time.perf_counter()
                    try:
                        u, data = next(gen)
                    except StopIteration:
                        return
                    if rec.cur is not None:
                        rec.cur["units"].append({"unit": u, "issue": (t0, time.perf_counter()),
                                                 "copies": (c0, len(ex.copy_spans))})
                    yield u, data
            finally:
                gen.close()

        def done(self, plan, unit):
            if rec.cur is not None and rec.cur["units"]:
                rec.cur["units"][-1]["kernel"] = len(self.dev.ex.kernel_spans)
                rec.cur["units"][-1]["done"] = time.perf_counter()
            orig_done(self, plan, unit)

        def read_back(self, plan, stats):
            t = time.perf_counter()
            streams = self.dev.ex
            orig_timeline = streams.timeline

            def timeline(origin, times=None):
                if times is None:
                    times = streams.span_times(origin)
                if rec.cur is not None:   # (seconds since the origin -> ms)
                    rec.cur["copy_spans"] = [(a * 1e3, b * 1e3) for a, b in times[0]]
                    rec.cur["kernel_spans"] = [(a * 1e3, b * 1e3) for a, b in times[1]]
                return orig_timeline(origin, times)
            streams.timeline = timeline
            try:
                rb = orig_read_back(self, plan, stats)
            finally:
                del streams.timeline
            if rec.cur is not None:
                rec.cur["read_back"] = (t, time.perf_counter())
                rec.cur["stats"] = stats
            return rb

        planner.Planner.iteration = iteration
        executor.CudaExecutor.begin = begin
        executor.CudaExecutor.done = done
        executor.CudaExecutor.read_back = read_back
        movement.Mover.deliver = deliver


def describe(u):
    bal = sorted(set(u.balance))
    shards = f"{u.shards[0]}" if len(u.shards) == 1 else f"{u.shards[0]}..{u.shards[-1]}({len(u.shards)})"
    return f"{u.transfer:8s} s{shards:12s} {'/'.join(bal):6s} slot {'-' if u.slot is None else u.slot}"


def report(p):
    """Lines describing one plan's timeline (``p``: a Recorder entry)."""
    from grstream.backends.cuda.streams import busy_overlap
    h0 = p["host0"]
    ms = (lambda t: (t - h0) * 1e3)
    copies, kernels = p.get("copy_spans", []), p.get("kernel_spans", [])
    st = p.get("stats")
    lines = []
    plan_ms = (p["plan_s"][1] - p["plan_s"][0]) * 1e3 if p["plan_s"] else float("nan")
    cb, kb, ov = busy_overlap(copies, kernels)
    lines.append(f"level {p['plan'].iteration}: wall {st.time_total * 1e3:.2f} ms, planning {plan_ms:.2f}, "
                 f"copy busy {cb:.2f}, kernel busy {kb:.2f}, overlap {ov:.2f}, units {len(p['units'])}, "
                 f"bytes {sum(st.transfer_bytes.values()) / 1e6:.1f} MB")
    lines.append("   # unit                                    host issue      host done | copy (GPU)     "
                 "kernels (GPU)  | copy waited for / kernels waited for")
    prev_copy_end, prev_kernel_end, slot_free = 0.0, 0.0, {}
    for k, r in enumerate(p["units"]):
        u = r["unit"]
        a, b = r["copies"]
        cs = copies[a:b]
        c = (min(s for s, _ in cs), max(e for _, e in cs)) if cs else None
        kk = r.get("kernel")
        ks = kernels[kk] if kk is not None and kk < len(kernels) else None
        issue = (ms(r["issue"][0]), ms(r["issue"][1]))
        why_c = why_k = ""
        if c is not None:
            bounds = {"previous copy": prev_copy_end, "host issue": issue[1],
                      "slot's kernels": slot_free.get(u.slot, 0.0)}
            top = max(bounds, key=bounds.get)
            why_c = f"{top} ({c[0] - bounds[top]:+.2f})"
            prev_copy_end = c[1]
        if ks is not None:
            kb_ = {"previous kernels": prev_kernel_end, "its copy": c[1] if c else 0.0, "host issue": issue[1]}
            top = max(kb_, key=kb_.get)
            why_k = f"{top} ({ks[0] - kb_[top]:+.2f})"
            prev_kernel_end = ks[1]
            if u.slot is not None and u.transfer in ("copy", "compact", "held"):
                slot_free[u.slot] = ks[1]
        fmt = (lambda s: f"{s[0]:6.2f}-{s[1]:6.2f}" if s else " " * 13)
        done = ms(r["done"]) if "done" in r else float("nan")
        nbytes = f"{u.nbytes / 1e6:6.1f}MB" if u.nbytes else " " * 8
        lines.append(f"  {k:2d} {describe(u)} {nbytes} {fmt(issue)} {done:7.2f} | {fmt(c)} {fmt(ks)} | "
                     f"{why_c} / {why_k}")
    tail = kernels[len(p["units"]):] if len(kernels) > len(p["units"]) else []
    rb = p.get("read_back")
    if tail:
        lines.append(f"     apply, publish, counts (GPU) {tail[-1][0]:.2f}-{tail[-1][1]:.2f}")
    if rb:
        lines.append(f"     read back (host) {ms(rb[0]):.2f}-{ms(rb[1]):.2f}; begin ended at "
                     f"{ms(p['begin_end']):.2f}")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--store", default="c", help="plain, c (compressed, random labels), cdegree")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inmem", action="store_true", help="everything in GPU memory")
    ap.add_argument("--levels", default="", help="comma-separated levels to print (default: all)")
    ap.add_argument("--option", action="append", default=[], help="key=value executor option (int/float/str)")
    args = ap.parse_args(argv)
    from bench_targets import build_rmat, compressed_path
    plain = build_rmat(os.path.join(args.dir, f"rmat{args.scale}.h5"), args, False)
    source = int(np.argmax(plain.out_degree()))
    BFS = gr.algorithms.bfs.BFS
    budget = None if args.inmem else budget_quarter(BFS(), plain, push=True)[0]
    store = plain
    if args.store != "plain":
        order = args.store[1:] or "none"
        store = build_rmat(compressed_path(args.dir, args.scale, order), args, True,
                           None if order == "none" else order)
        source = int(store.to_internal(plain.to_labels(np.array([source])))[0])
    options = {}
    for kv in args.option:
        k, v = kv.split("=", 1)
        for cast in (int, float):
            try:
                v = cast(v)
                break
            except ValueError:
                pass
        options[k] = v
    rec = Recorder()
    rec.install()
    levels = {int(x) for x in args.levels.split(",") if x}
    with gr.Session(store, device="cuda", memory_budget=budget, pinned_budget=PINNED, **options) as session:
        session.run(BFS(source=source))
        walls = []
        for _ in range(args.repeat):
            rec.plans = []
            r = session.run(BFS(source=source))
            walls.append(r.info.get("start_wall_s", 0.0) + sum(s.time_total for s in r.stats))
            log(f"run: {walls[-1] * 1e3:.2f} ms (start {r.info.get('start_wall_s', 0.0) * 1e3:.2f}); levels "
                + " | ".join(f"{s.time_total * 1e3:.2f}" for s in r.stats))
    import hashlib
    digest = hashlib.sha1(np.ascontiguousarray(r.values["level"]).tobytes()).hexdigest()[:16]
    log(f"{args.store} budget {budget} options {options}: median {np.median(walls) * 1e3:.2f} ms; "
        f"levels sha1 {digest} (the last run's, to compare trees on one store)")
    for p in rec.plans:
        if p["plan"].seed or (levels and p["plan"].iteration not in levels) or "stats" not in p:
            continue
        for line in report(p):
            log(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
