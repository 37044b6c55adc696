"""Run under ``mpiexec -n R python -m tests.distributed.gpu_ranks_check DIR [CASE [NAME]]``: GPU
ranks (one GPU each, the NCCL exchange) against one process on one GPU, on the random graphs of
tests/distributed/ranks_check.py: every program, in each direction the CPU ranks run it (push,
pull, "auto"), with mutable edge state and gather_from = "changed" (delta PageRank) too, at two
budgets, the same direction on one GPU; CASE "algorithm NAME" one entry point of its ALGORITHMS
on two graphs (betweenness also against NetworkX on the same sources); "lanes" Session.run_lanes
over the ranks against one GPU's; "fail" makes rank 1 raise in iteration 2 (every rank must exit,
naming rank 1).
"""
import sys

import numpy as np

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.sssp import SSSP

from .ranks_check import ALGORITHMS, COMM, PROGRAMS, failing, graphs

#: every program, each direction
GPU_PROGRAMS = PROGRAMS


def same(a, b, close, rtol=1e-9):
    # (GPU atomics add in any order: floating-point sums differ in the last bits; delta
    # PageRank's push test of a vertex on its threshold may then flip: its ranks compare within
    # their error bound)
    return np.allclose(a, b, rtol=rtol, atol=1e-15) if close else np.array_equal(a, b)


#: the tolerance of delta PageRank's ranks (``same``)
DELTA_RTOL = 1e-6


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
                    if not same(got, want, close, DELTA_RTOL if pname == "delta-pagerank" else 1e-9):
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
    if not same(many, one, name in ("bc", "delta", "katz"), DELTA_RTOL if name == "delta" else 1e-9):
        raise AssertionError(f"{gname}/{name} differs")
    if name == "bc":   # each rank ran its share of the sources alone, on its own GPU
        assert all("ranks" not in r.info and r.info["backend"] == "cuda" for r in runs)
        assert any(COMM.allgather(bool(runs)))
        if not same(many, networkx_bc(store), True):
            raise AssertionError(f"{gname}/bc differs from NetworkX")
    store.close()
    return 1


def networkx_bc(store):
    """NetworkX's betweenness of ALGORITHMS' "bc" call (its sample of k sources, seed 1)."""
    import networkx as nx
    G = nx.DiGraph()
    G.add_nodes_from(range(store.num_vertices))
    G.add_edges_from(zip(*store.to_scipy("csr", weights=False).nonzero()))
    bc = nx.betweenness_centrality(G, k=min(6, store.num_vertices), seed=1, normalized=False)
    return np.array([bc[v] for v in range(store.num_vertices)])


def check_lanes(path, gname):
    """Session.run_lanes over GPU ranks: each lane equals one GPU's lanes (at two budgets)."""
    from tests.backends.cuda.test_cuda_lanes import DenseLanes
    store = gr.open(path)
    n, runs = store.num_vertices, 0
    cases = {"bfs": lambda: [BFS(source=s) for s in sorted({0, n // 2, n - 1})],
             "sssp": lambda: [SSSP(source=s) for s in sorted({0, n // 2, n - 1})],
             "dense": lambda: [DenseLanes(scale=s, stop=t) for s, t in ((1.0, 2), (2.0, 4), (0.5, 3))]}
    for name, make in cases.items():
        try:   # one GPU's least budget for these lanes; a rank's holds the exchange's bitmaps too
            # and a few aligned buffers more, as budgets() allows for one run
            with gr.Session(store, device="cuda", memory_budget=1) as s:
                s.run_lanes(make(), max_iter=1)
            least = None
        except gr.errors.MemoryBudgetError as e:
            least = e.minimum + COMM.Get_size() * len(make()) * (4 * ((n + 31) // 32) + 256) + 4096
        for budget in (None, least):
            # to convergence (the dense lanes stop by their own rule): BFS and SSSP are
            # asynchronous, so one GPU may gather values its earlier units wrote in the same
            # iteration while ranks see each other's at the iteration's end; a run cut short
            # (many-shards' SSSP takes 13-17 iterations) ends at different values
            with gr.Session(store, device="cuda") as s:
                want = s.run_lanes(make(), max_iter=60)
            with gr.Session(store, comm=COMM, device="cuda", memory_budget=budget) as s:
                assert s.can_run_lanes(type(make()[0]))
                got = s.run_lanes(make(), max_iter=60)
            for k, (g, w) in enumerate(zip(got, want)):
                assert g.info["backend"] == "cuda" and g.info["ranks"] == COMM.Get_size()
                for field in w.values:
                    if not same(g.values[field], w.values[field], name == "dense"):
                        raise AssertionError(f"{gname}/lanes/{name}/{k}/{budget}: {field} differs")
                assert g.iterations == w.iterations or name != "dense"
                assert g.converged and w.converged
                runs += 1
    store.close()
    return runs


def main():
    root, case = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "all")
    try:
        if case == "fail":
            gr.run(BFS(source=0), graphs(root)[3][1], comm=COMM, callback=failing, device="cuda")
        elif case == "lanes":
            runs = sum(check_lanes(path, g) for g, path in graphs(root) if g in ("tiny", "random", "many-shards"))
            if COMM.Get_rank() == 0:
                print(f"gpu_ranks_check: lanes equal in {runs} runs on {COMM.Get_size()} cuda ranks")
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
