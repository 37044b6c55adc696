"""``mpiexec -n N python -m tests.distributed.build_memory_check EDGES.npy OUT LIMIT KIND``: the
shard build under ranks within a memory limit, each rank printing (as JSON, rank 0 for all)
how far its peak memory grew over the build: ``KIND`` ``keys`` (key runs), ``records`` (edge
ids: edge records) or ``weighted`` (weighted key runs)."""
import json
import sys

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.io.base import EdgeSource


def high_water():
    with open("/proc/self/status") as status:
        line = next(l for l in status if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def main():
    path, out, limit, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    comm = MPI.COMM_WORLD
    # warm up: every library the build touches is loaded before the baseline is taken
    small = np.array([[0, 1], [1, 2], [2, 0]])
    gr.build_shards(small, out + ".warm.h5", memory_limit=limit, comm=comm, progress=False,
                    edge_ids=kind == "records")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = high_water()
    source = path
    if kind == "weighted":
        def chunks():   # a weight per edge, computed from its ids (the file read, not mapped)
            with open(path, "rb") as f:
                np.lib.format.read_array_header_1_0(f, *[np.lib.format.read_magic(f)][:0])
                while True:
                    pairs = np.fromfile(f, dtype=np.int64, count=2 * 65536).reshape(-1, 2)
                    if not len(pairs):
                        return
                    yield pairs[:, 0].copy(), pairs[:, 1].copy(), pairs[:, 0] % 7 + 0.5
        source = EdgeSource("weighted", chunks, weighted=True)
    gr.build_shards(source, out, memory_limit=limit, comm=comm, progress=False,
                    edge_ids=kind == "records")
    grown = comm.gather(high_water() - base)
    if comm.Get_rank() == 0:
        with gr.open(out) as store:
            print(json.dumps({"grown": grown, "mode": store.build["mode"],
                              "shards": store.num_shards, "edges": store.num_edges}))


if __name__ == "__main__":
    main()
