"""Run under ``mpiexec -n R python -m tests.distributed.gpu_ranks_check DIR [CASE [NAME]]``: GPU
ranks (one GPU each, the NCCL exchange) against one process on one GPU, on the random graphs of
tests/distributed/ranks_check.py: every program the CUDA executor runs, in each direction
the CPU ranks run it (push, pull, "auto"), with mutable edge state too, at two budgets, the same
direction on one GPU; CASE "algorithm NAME" one entry point of its ALGORITHMS on
two graphs; "fail" makes rank 1 raise in iteration 2 (every rank must exit, naming rank 1).
"""
import sys

import numpy as np

import grstream as gr
from grstream.algorithms.bfs import BFS

from .ranks_check import ALGORITHMS, COMM, PROGRAMS, failing, graphs

#: what the CUDA executor runs (not gather_from = "changed": delta PageRank), each direction
GPU_PROGRAMS = [p for p in PROGRAMS if p[0] != "delta-pagerank"]


def same(a, b, close):
    # (GPU atomics add in any order: floating-point sums differ in the last bits)
    return np.allclose(a, b, rtol=1e-9, atol=1e-15) if close else np.array_equal(a, b)


def budgets(program, store):
    """(one GPU's, a rank's) least budget for ``program`` on ``store``: a rank holds every rank's
    frontier bitmap besides (the exchange's scratch)."""
    try:
        gr.run(program, store, memory_budget=1, max_iter=1, device="cuda")
    except gr.errors.MemoryBudgetError as e:
        return e.minimum, e.minimum + 4 * ((store.num_vertices + 31) // 32) * COMM.Get_size() + 4096
    return 1, 1   # (an empty graph needs no memory)


def check_programs(path, gname, pushed):
    runs = 0
    store = gr.open(path)
    for pname, make, directions, close in GPU_PROGRAMS:
        if store.num_vertices == 0 and pname in ("bfs", "sssp", "edge-state", "edge-rank"):
            continue
        for one_budget, rank_budget in ((None, None), budgets(make(), store)):
            for direction in directions:
                kw = dict(max_iter=60, direction=direction, device="cuda")
                one = gr.run(make(), store, memory_budget=one_budget, **kw)
                many = gr.run(make(), store, comm=COMM, memory_budget=rank_budget, **kw)
                for field, want in list(one.values.items()) + list(one.edge_values.items()):
                    got = many.values[field] if field in many.values else many.edge_values[field]
                    if not same(got, want, close):
                        raise AssertionError(f"{gname}/{pname}/{direction}/{one_budget}: {field} differs")
                assert many.info["ranks"] == COMM.Get_size() and many.info["backend"] == "cuda"
                pushed[0] += sum(st.plan["direction"].get("push", 0) for st in many.stats)
                runs += 1
    store.close()
    return runs


def check_algorithm(path, gname, name):
    store = gr.open(path)
    call = dict(ALGORITHMS)[name]
    one, (many, runs) = call(store, device="cuda")[0], call(store, comm=COMM, device="cuda")[:2]
    if not same(many, one, name in ("bc", "delta", "katz")):
        raise AssertionError(f"{gname}/{name} differs")
    if name == "bc":   # each rank ran its share of the sources alone, on its own GPU
        assert all("ranks" not in r.info and r.info["backend"] == "cuda" for r in runs)
        assert any(COMM.allgather(bool(runs)))
    store.close()
    return 1


def main():
    root, case = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "all")
    try:
        if case == "fail":
            gr.run(BFS(source=0), graphs(root)[3][1], comm=COMM, callback=failing, device="cuda")
        elif case == "algorithm":
            runs = sum(check_algorithm(path, g, sys.argv[3]) for g, path in graphs(root) if g in ("tiny", "random"))
            if COMM.Get_rank() == 0:
                print(f"gpu_ranks_check: {sys.argv[3]} equal in {runs} runs on {COMM.Get_size()} cuda ranks")
        else:
            pushed = [0]
            runs = sum(check_programs(path, g, pushed) for g, path in graphs(root))
            assert pushed[0] > 0
            if COMM.Get_rank() == 0:
                print(f"gpu_ranks_check: {runs} runs equal on {COMM.Get_size()} cuda ranks")
    except Exception as e:   # a failed check on one rank: say so and stop the others
        sys.stderr.write(f"gpu_ranks_check rank {COMM.Get_rank()}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        COMM.Abort(2)


if __name__ == "__main__":
    main()
