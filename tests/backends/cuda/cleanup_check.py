"""Run as ``python -m tests.backends.cuda.cleanup_check DIR`` (on a GPU; tests/backends/cuda/
test_cuda_cleanup.py): sessions on a plain and a compressed store whose budgets stream (read-ahead,
read threads, staging only, the pinned cache, compacted and zero-copy transfers, lanes) and a run
stopped by an exception that its caller keeps in a reference cycle. Every PyCUDA stream, event
and page-locked array made is tracked by a weak reference: with the cyclic collector off, each
must be gone once its session is closed (freed there, on this thread, by reference counting).
Then what is left for the collector is collected on a worker thread, where an object holding a
CUDA resource could not be destroyed (PyCUDA would print "... could not be cleaned up"); and the
device memory free after a pass of the scenarios equals that after the pass before. Prints one
JSON line: the tracked objects still alive after each scenario, and the free bytes after each
pass.
"""
import gc
import json
import sys
import threading
import weakref
from pathlib import Path

import numpy as np
import pycuda.driver as cuda

import grstream as gr

from .test_cuda_backend import build, gpu_minimum, largest_region, skewed_graph

TRACKED = []   # (kind, weak reference) of every stream, event and page-locked array made


class Stream(cuda.Stream):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        TRACKED.append(("stream", weakref.ref(self)))


class Event(cuda.Event):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        TRACKED.append(("event", weakref.ref(self)))


_pagelocked_empty = cuda.pagelocked_empty


def pagelocked_empty(*args, **kwargs):
    arr = _pagelocked_empty(*args, **kwargs)
    TRACKED.append(("pagelocked", weakref.ref(arr)))
    return arr


cuda.Stream, cuda.Event, cuda.pagelocked_empty = Stream, Event, pagelocked_empty


class Stop(Exception):
    """Raised by a run's callback."""


def stop_at(k):
    def callback(st):
        if st.iteration == k:
            raise Stop(k)
    return callback


def interrupted(session, program):
    """The exception of a run stopped in iteration 2, kept the way pytest.raises keeps it: its
    traceback holds this frame, which holds it (a cycle only the collector frees)."""
    try:
        session.run(program, callback=stop_at(2))
    except Stop as exc:
        kept = exc
    return kept


def scenarios(plain, packed):
    """name -> a function running one scenario (sessions closed at its end); the objects it
    returns are kept until the pass ends."""
    a = gr.algorithms
    progs = [a.bfs.BFS(), a.pagerank.PageRank(), a.sssp.SSSP()]
    budget = {s: max(gpu_minimum(p, s) for p in progs) + int(s.max_shard_nbytes()) for s in (plain, packed)}

    def streamed():
        with gr.Session(plain, device="cuda", memory_budget=budget[plain]) as s:
            s.run(a.bfs.BFS())
            s.run(a.pagerank.PageRank(), max_iter=5)
            s.run(a.sssp.SSSP())
        with gr.Session(plain, device="cuda") as s:   # (the lanes refer to their executor)
            s.run_lanes([a.bfs.BFS(source=v) for v in (0, 5, 9)])

    def compact():
        with gr.Session(packed, device="cuda", memory_budget=budget[packed], transfer="compact") as s:
            s.run(a.bfs.BFS())
            s.run(a.pagerank.PageRank(), max_iter=5)

    def zerocopy():
        gr.run(a.pagerank.PageRank(), packed, device="cuda", memory_budget=budget[packed],
               max_iter=5, backend_options={"transfer": "zerocopy"})

    def staging():
        gr.run(a.sssp.SSSP(), plain, device="cuda", memory_budget=budget[plain],
               pinned_budget=largest_region(a.sssp.SSSP(), plain))

    def stopped():
        with gr.Session(plain, device="cuda", memory_budget=budget[plain]) as s:
            kept = interrupted(s, a.bfs.BFS())
        return kept
    return {"streamed": streamed, "compact": compact, "zerocopy": zerocopy, "staging": staging,
            "stopped": stopped}


def alive():
    """Kinds of the tracked objects still alive (and forget the dead ones)."""
    live = [(kind, ref) for kind, ref in TRACKED if ref() is not None]
    TRACKED[:] = live
    return sorted(kind for kind, _ in live)


def main(folder):
    rng = np.random.default_rng(7)
    n, src, dst, w = skewed_graph(rng, n=20000, m=300000, hub_edges=20000)
    plain = build(folder, n, src, dst, w, num_shards=6)
    packed = build(folder, n, src, dst, w, num_shards=6, compress=True)
    runs = scenarios(plain, packed)
    cuda.init()
    ctx = cuda.Device(0).retain_primary_context()   # (only to read the free memory)

    def free_bytes():
        ctx.push()
        try:
            return int(cuda.mem_get_info()[0])
        finally:
            cuda.Context.pop()
    report = {"alive": {}, "free": []}
    for k in range(3):   # the first pass compiles and measures the link
        kept = []
        gc.collect()
        gc.disable()
        for name, run in runs.items():
            kept.append(run())
            if k:
                report["alive"][f"{name} {k}"] = alive()
        kept = None
        TRACKED.clear()
        worker = threading.Thread(target=gc.collect)   # what is left, collected on a worker
        worker.start()
        worker.join()
        gc.enable()
        report["free"].append(free_bytes())
    plain.close()
    packed.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
