"""``mpiexec -n 2 python -m tests.distributed.journal_check STORE FOLDER``: betweenness with its
sources spread over the ranks, each rank's runs in lanes and in its own journal, stopped by
SIGTERM on rank 1 alone after some of its runs, resumed on both ranks: equal to the uninterrupted
run under the same ranks. Prints rank 0's findings as JSON."""
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.algorithms import declaration


def main():
    store, folder = sys.argv[1], Path(sys.argv[2])
    comm = MPI.COMM_WORLD
    bc = declaration("bc")
    options = {"k": 40, "seed": 3, "comm": comm}
    with gr.open(store) as s:
        whole = bc.entry(s, **options)[0]
        seen = [0]

        def callback(st):
            seen[0] += 1
            if comm.Get_rank() == 1 and seen[0] == 8:   # (in its second or third run)
                os.kill(os.getpid(), signal.SIGTERM)
        try:
            bc.entry(s, **options, checkpoint=folder, callback=callback)
            stopped = None
        except gr.errors.GrstreamError as exc:
            stopped = f"{type(exc).__name__}: {exc}"
        saved = sorted(str(p.relative_to(folder)) for p in folder.rglob("run-*.npz"))
        again = bc.entry(s, **options, resume=folder)[0]
    found = {"stopped": stopped, "saved": saved, "equal": bool(np.array_equal(again, whole)), "seen": seen[0]}
    everyone = comm.gather(found)
    if comm.Get_rank() == 0:
        print(json.dumps(everyone))


if __name__ == "__main__":
    main()
