"""``mpiexec -n 2 python -m tests.distributed.prerun_check STORE FOLDER``: arguments that rank 1
alone refuses, before a run, through every entry point (gr.run, Session, Session.run,
run_lanes); each must raise on every rank, the other ranks' error naming rank 1, and leave the
world in step: a run afterwards equals one process's. Prints rank 0's findings as JSON."""
import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank


def cases(store, folder, bad):
    """name -> a call that rank 1 (``bad`` true) makes with an argument it alone refuses."""
    def session(**kw):
        return gr.Session(store, comm=MPI.COMM_WORLD, **kw)

    def in_session(work):
        with session() as s:
            return work(s)
    missing = folder / "missing" / "ck"
    return {
        "store path": lambda: session() if not bad else gr.Session(folder / "nope.h5", comm=MPI.COMM_WORLD),
        "part file": lambda: gr.Session(folder / "part{rank}.h5", comm=MPI.COMM_WORLD),
        "device": lambda: session(device="tpu" if bad else "cpu"),
        "memory budget": lambda: session(memory_budget="lots" if bad else None),
        "executor option": lambda: session(**({"spin": 1} if bad else {})),
        "max_iter": lambda: in_session(lambda s: s.run(PageRank(), max_iter=-1 if bad else 5)),
        "source": lambda: in_session(lambda s: s.run(BFS(source=10 ** 9 if bad else 0))),
        "checkpoint folder": lambda: gr.run(PageRank(), store, comm=MPI.COMM_WORLD,
                                            checkpoint=missing if bad else folder / "ck"),
        "resume folder": lambda: gr.run(PageRank(), store, comm=MPI.COMM_WORLD,
                                        resume=missing if bad else folder / "ck"),
        "lanes": lambda: in_session(lambda s: s.run_lanes([BFS(source=0), BFS(source=-1 if bad else 1)])),
    }


def main():
    store, folder = Path(sys.argv[1]), Path(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    gr.run(PageRank(), store, comm=comm, checkpoint=folder / "ck", checkpoint_every=0)
    found = {}
    for name, call in cases(store, folder, rank == 1).items():
        try:
            call()
            found[name] = None
        except gr.errors.GrstreamError as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
    # the world is still in step: a run equals one process's
    whole = gr.run(PageRank(tol=1e-10), store, comm=comm).value
    alone = gr.run(PageRank(tol=1e-10), store).value
    found["in step"] = bool(np.array_equal(whole, alone))
    everyone = comm.gather(found)
    if rank == 0:
        print(json.dumps(everyone))


if __name__ == "__main__":
    main()
