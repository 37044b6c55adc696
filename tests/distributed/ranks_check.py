"""Run under ``mpiexec -n R python -m tests.distributed.ranks_check DIR [CASE]``: every program
on random graphs (several shard counts and budgets, empty and tiny graphs), each run both
distributed over the world and in one process on every rank, the results compared: the
programs in each direction the engine runs them (pull, push, and "auto" switching between
them), a user program with mutable edge state in each, delta PageRank (``gather_from =
"changed"``), lanes (Session.run_lanes), and the built-in algorithms' entry points
(betweenness, predecessors, ...).

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
from grstream.algorithms.pagerank_delta import DeltaPageRank
from grstream.algorithms.sssp import SSSP
from tests.engine.test_scatter import CountedBFS, EdgeRank   # (edge state, written at the source)

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
            gr.build_shards(edges, path, num_shards=shards, weighted=True, progress=False, edge_ids=True,
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


#: (name, program, directions, tolerance): each program in every direction it runs in
PROGRAMS = [("bfs", lambda: BFS(source=0), ("auto", "push", "pull"), False),
            ("sssp", lambda: SSSP(source=0), ("auto", "push", "pull"), False),
            ("cc", lambda: ConnectedComponents(), ("auto", "push"), False),
            ("pagerank", lambda: PageRank(), ("auto",), True),
            ("delta-pagerank", lambda: DeltaPageRank(), ("auto",), True),
            ("user", lambda: TwoHopMax(), ("auto",), False),
            ("edge-state", lambda: CountedBFS(source=0), ("push", "pull"), False),
            ("edge-rank", lambda: EdgeRank(), ("auto",), True)]

#: the iterations each program's runs are cut short after (alike: still equal): 20, but 6 for
#: the two whose every vertex changes in every iteration (each iteration exchanges the same
#: dense state, and edge state: 6 check what 20 would, at under a third of the calls)
ITERATIONS = {"delta-pagerank": 6, "edge-rank": 6}


def same(a, b, close):
    return (np.allclose(a, b, rtol=1e-12, atol=1e-15, equal_nan=True) if close
            else np.array_equal(a, b))


def check_programs(path, gname, counts):
    store = gr.open(path)
    for pname, make, directions, close in PROGRAMS:
        if store.num_vertices == 0 and pname in ("bfs", "sssp", "edge-state", "edge-rank"):
            continue
        smallest = smallest_budget(make(), store)
        for budget in (None, smallest):
            # one process's answer, the same in every direction (the engine's tests show it)
            # but for edge state, which push plans do not scatter: computed once per budget;
            # the forced directions at the smallest budget only (where shards stream)
            reference = {}
            for direction in directions if budget == smallest else directions[:1]:
                kw = dict(memory_budget=budget, max_iter=ITERATIONS.get(pname, 20))
                key = direction if make().spec.edge_state else "auto"
                if key not in reference:
                    reference[key] = gr.run(make(), store, direction=key, **kw)
                one = reference[key]
                many = gr.run(make(), store, comm=COMM, direction=direction, **kw)
                for field, want in list(one.values.items()) + list(one.edge_values.items()):
                    got = many.values[field] if field in many.values else many.edge_values[field]
                    if not same(got, want, close):
                        raise AssertionError(f"{gname}/{pname}/{direction}/{budget}: {field} differs")
                if direction == key:   # the same iterations as one process
                    assert many.iterations == one.iterations or close, (gname, pname, direction)
                assert many.info["ranks"] == COMM.Get_size()
                owned = [r["shards"] for r in many.info["rank_stats"]]   # contiguous, covering
                assert owned[0][0] == 0 and owned[-1][1] == store.num_shards
                assert all(a[1] == b[0] for a, b in zip(owned, owned[1:]))
                counts["runs"] += 1
                counts["pushed"] += sum(s.plan["direction"].get("push", 0) for s in many.stats)
    store.close()


#: the built-in algorithms' entry points (name, call), their first value compared
ALGORITHMS = [("bc", lambda s, **kw: gr.algorithms.bc.betweenness(s, k=min(6, s.num_vertices), seed=1, **kw)),
              ("bfs-predecessors", lambda s, **kw: gr.algorithms.predecessors.bfs_predecessors(s, 0, **kw)),
              ("sssp-predecessors", lambda s, **kw: gr.algorithms.predecessors.sssp_predecessors(s, 0, **kw)),
              ("delta", lambda s, **kw: gr.algorithms.pagerank.pagerank(s, method="delta", **kw)),
              ("katz", lambda s, **kw: gr.algorithms.eigenvector.katz_centrality(s, **kw)),
              ("scc", lambda s, **kw: gr.algorithms.scc.strongly_connected_components(s, **kw)),
              ("kcore", lambda s, **kw: gr.algorithms.kcore.core_number(s, **kw)),
              ("bfs-to", lambda s, **kw: gr.algorithms.reach.bfs_to(s, 0, **kw)),
              ("eigenvector", lambda s, **kw: gr.algorithms.declaration("eigenvector").entry(s, **kw)),
              ("hits", lambda s, **kw: gr.algorithms.declaration("hits").entry(s, **kw))]


def check_algorithms(path, gname, counts):
    store = gr.open(path)
    for name, call in ALGORITHMS:
        one, (many, runs) = call(store)[0], call(store, comm=COMM)[:2]
        if not same(many, one, name in ("bc", "delta", "katz", "eigenvector", "hits")):
            raise AssertionError(f"{gname}/{name} differs")
        if name == "bc":   # each rank ran its share of the sources alone (sources.py)
            assert all("ranks" not in r.info for r in runs) and any(COMM.allgather(bool(runs))), gname
        counts["runs"] += 1
    store.close()


def check_lanes(path, gname, counts):
    """Session.run_lanes over the ranks: each lane equals its own run in one process."""
    store = gr.open(path)
    sources = sorted({0, 1, store.num_vertices // 2, store.num_vertices - 1})
    for make in (BFS, SSSP):
        try:   # the least budget of the lanes' run
            with gr.Session(store, memory_budget=1) as one:
                one.run_lanes([make(source=s) for s in sources], max_iter=1)
            least = 1
        except gr.errors.MemoryBudgetError as e:
            least = e.minimum
        for budget in (None, least):
            with gr.Session(store, comm=COMM, memory_budget=budget) as session:
                assert session.can_run_lanes(make)
                lanes = session.run_lanes([make(source=s) for s in sources])
            for s, got in zip(sources, lanes):
                want = gr.run(make(source=s), store)
                if not same(got.value, want.value, False):
                    raise AssertionError(f"{gname}/lanes/{make.__name__}/{s}/{budget} differs")
                counts["runs"] += 1
    store.close()


def check_all(root):
    counts = {"runs": 0, "pushed": 0}
    for gname, path in graphs(root):
        check_programs(path, gname, counts)
        if gname in ("tiny", "random"):
            check_algorithms(path, gname, counts)
            check_lanes(path, gname, counts)
    assert counts["pushed"] > 0
    if COMM.Get_rank() == 0:
        print(f"ranks_check: {counts['runs']} runs equal on {COMM.Get_size()} ranks")


def check_agree(root):
    """Rank 0's budget holds push's arrays, rank 1's only pull's: every rank pulls alike."""
    store = gr.open(graphs(root)[3][1])
    least = smallest_budget(BFS(source=0), store)
    alone = gr.run(BFS(source=0), store, memory_budget=least, direction="auto")
    assert not any(s.plan["direction"].get("push") for s in alone.stats)
    assert any(s.plan["direction"].get("push") for s in gr.run(BFS(source=0), store, direction="auto").stats)
    budget = least if COMM.Get_rank() == 1 else None
    many = gr.run(BFS(source=0), store, comm=COMM, memory_budget=budget, direction="auto")
    assert np.array_equal(many.value, gr.run(BFS(source=0), store).value)
    assert not any(s.plan["direction"].get("push") for s in many.stats)
    if COMM.Get_rank() == 0:
        print("ranks_check: push agreed")


class SeenBFS(BFS):
    """BFS recording how many vertices each init saw; its own init, not declared local."""
    seen = []

    def init(self, v):
        SeenBFS.seen.append(len(v.id))
        return super().init(v)


class SeenLocalBFS(SeenBFS):
    """The same init, declared local (by the class that defines it)."""
    local_init = True

    def init(self, v):
        return super().init(v)


def check_local(root):
    """A local_init program's init runs over the rank's own vertices only, and the run equals
    one process's; a subclass with an init of its own, not declared local, runs it over all."""
    store = gr.open(graphs(root)[3][1])
    n = int(store.num_vertices)
    for cls, source in ((SeenLocalBFS, 0), (SeenLocalBFS, n - 1), (SeenBFS, 3)):
        SeenBFS.seen = []
        with gr.Session(store, comm=COMM) as s:
            many = s.run(cls(source=source))
            lo, hi = many.info["rank_stats"][COMM.Get_rank()]["vertices"]
        assert SeenBFS.seen == [hi - lo if cls is SeenLocalBFS else n], (cls.__name__, SeenBFS.seen, lo, hi)
        assert np.array_equal(many.value, gr.run(BFS(source=source), store).value)
    for program in (ConnectedComponents(), SSSP(source=1)):
        assert np.array_equal(gr.run(program, store, comm=COMM).value, gr.run(program, store).value)
    if COMM.Get_rank() == 0:
        print("ranks_check: local init equal")


def main():
    root, case = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "all")
    try:
        if case == "fail":
            path = graphs(root)[3][1]
            gr.run(BFS(source=0), path, comm=COMM, callback=failing)
        elif case == "agree":
            check_agree(root)
        elif case == "local":
            check_local(root)
        else:
            check_all(root)
    except Exception as e:   # a failed check on one rank: say so and stop the others
        sys.stderr.write(f"ranks_check rank {COMM.Get_rank()}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        COMM.Abort(2)


if __name__ == "__main__":
    main()
