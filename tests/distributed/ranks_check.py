"""Run under ``mpiexec -n R python -m tests.distributed.ranks_check DIR [CASE]``: every program
on random graphs (several shard counts and budgets, empty and tiny graphs), each run both
distributed over the world and in one process on every rank, the results compared.

CASE "all" (default) checks equality; "fail" makes rank 1 raise in iteration 2 (a callback;
the fault test expects every rank to exit, the error naming rank 1).
"""
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP

COMM = MPI.COMM_WORLD


class TwoHopMax(gr.GASProgram):
    """A user program, dense: each vertex takes the largest ``x`` of its in-neighbours plus its own."""

    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.max
    activate = "all"

    def init(self, v):
        v.x = v.id * 7919 % 101 + 0.5
        return None

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        new = gr.maximum(v.x, acc)
        changed = new != v.x
        v.x = new
        return changed


def failing(stats):
    """A per-iteration callback that raises on rank 1 in iteration 2."""
    if COMM.Get_rank() == 1 and stats.iteration == 2:
        raise RuntimeError("injected failure")


def graphs(root):
    """(name, store path) of the test graphs, built by rank 0."""
    out = []
    rng = np.random.default_rng(7)
    specs = [("empty", 0, 0, 1), ("tiny", 2, 1, 4), ("one-shard", 50, 200, 1),
             ("random", 300, 1500, 5), ("many-shards", 500, 1200, 9)]
    for name, n, m, shards in specs:
        path = Path(root) / f"{name}.h5"
        out.append((name, path))
        if COMM.Get_rank() == 0:
            src, dst = rng.integers(0, max(n, 1), (2, m))
            edges = np.stack([src, dst], axis=1) if m else np.zeros((0, 2), dtype=np.int64)
            w = rng.uniform(0.5, 3.0, m)
            edges = np.column_stack([edges, w]) if m else np.zeros((0, 3))
            gr.build_shards(edges, path, num_shards=shards, weighted=True, progress=False,
                            renumber=False)
    COMM.Barrier()
    return out


def smallest_budget(program, store):
    """The least memory budget ``program`` runs under on ``store`` (shards stream)."""
    try:
        gr.run(program, store, memory_budget=1, max_iter=1)
    except gr.errors.MemoryBudgetError as e:
        return e.minimum
    return 1   # (an empty graph needs no memory)


def programs():
    return [("bfs", lambda: BFS(source=0)), ("sssp", lambda: SSSP(source=0)),
            ("pagerank", lambda: PageRank()), ("cc", lambda: ConnectedComponents()),
            ("user", lambda: TwoHopMax())]


def check_all(root):
    runs = 0
    for gname, path in graphs(root):
        store = gr.open(path)
        for pname, make in programs():
            if store.num_vertices == 0 and pname in ("bfs", "sssp"):   # (no source to give)
                continue
            for budget in (None, smallest_budget(make(), store)):
                one = gr.run(make(), store, memory_budget=budget, max_iter=60)
                many = gr.run(make(), store, memory_budget=budget, max_iter=60, comm=COMM)
                for field, want in one.values.items():
                    got = many.values[field]
                    ok = (np.allclose(got, want, rtol=1e-12, atol=1e-15) if pname == "pagerank"
                          else np.array_equal(got, want))
                    if not ok:
                        raise AssertionError(f"{gname}/{pname}/{budget}: {field} differs")
                assert many.info["ranks"] == COMM.Get_size()
                owned = [r["shards"] for r in many.info["rank_stats"]]   # contiguous, covering
                assert owned[0][0] == 0 and owned[-1][1] == store.num_shards
                assert all(a[1] == b[0] for a, b in zip(owned, owned[1:]))
                runs += 1
        store.close()
    if COMM.Get_rank() == 0:
        print(f"ranks_check: {runs} runs equal on {COMM.Get_size()} ranks")


def main():
    root, case = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "all")
    try:
        if case == "fail":
            path = graphs(root)[3][1]
            gr.run(BFS(source=0), path, comm=COMM, callback=failing)
        else:
            check_all(root)
    except Exception as e:   # a failed check on one rank: say so and stop the others
        sys.stderr.write(f"ranks_check rank {COMM.Get_rank()}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        COMM.Abort(2)


if __name__ == "__main__":
    main()
