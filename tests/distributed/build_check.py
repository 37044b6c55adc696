"""``mpiexec -n N python -m tests.distributed.build_check FOLDER [few]``: the shard build under ranks
(every rank builds its own intervals, rank 0 writes) against one process's build of the same
input and options, for inputs and option combinations (``few``: one in three of them); rank 0 prints a JSON list of the cases
whose stores differ (every dataset and attribute but the build record: tests/partition/graphs.py
``store_contents``)."""
import itertools
import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.distributed.part_files import part_of, part_path, write_part
from grstream.io.base import EdgeSource
from grstream.partition import build, layout
from grstream.store import encode
from grstream.store.decode import COMPILED_IDS

from tests.partition.graphs import store_contents

KEY_BITS = layout._KEY_BITS


def inputs(folder):
    """name -> the input (a path or an EdgeSource of small chunks), written by rank 0."""
    rng = np.random.default_rng(7)
    n, m = 300, 4000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:40] = dst[:40]   # self-loops
    src[40:80], dst[40:80] = src[80:120], dst[80:120]   # repeated pairs
    weight = rng.integers(1, 6, m) / 4.0
    sparse = np.column_stack([src * 1000 + 7, dst * 1000 + 7])   # sparse ids: renumbered
    text = folder / "g.txt"
    if MPI.COMM_WORLD.Get_rank() == 0:
        np.save(folder / "g.npy", np.column_stack([src, dst]))
        np.save(folder / "sparse.npy", sparse)
        text.write_text("".join(f"{s} {d} {w}\n" for s, d, w in zip(src, dst, weight)))
    MPI.COMM_WORLD.Barrier()

    def chunked():   # chunks of 333 edges: many chunks to deal out
        return ((src[i:i + 333], dst[i:i + 333], weight[i:i + 333]) for i in range(0, m, 333))
    return {"npy": str(folder / "g.npy"), "sparse": str(folder / "sparse.npy"), "text": str(text),
            "chunks": EdgeSource("chunks", chunked, weighted=True, num_vertices=n + 5)}


def cases():
    yield "npy", {"num_shards": 7}
    yield "sparse", {"num_shards": 5}
    yield "sparse", {"num_shards": 5, "renumber": False}
    yield "npy", {"num_shards": 4, "renumber": True, "self_loops": False}
    yield "text", {"num_shards": 1}
    yield "text", {"num_shards": 6, "weight_dtype": "float32"}
    for undirected, self_loops, duplicates in itertools.product((False, True), repeat=3):
        yield "chunks", {"num_shards": 9, "undirected": undirected, "self_loops": self_loops,
                         "duplicates": duplicates}
    yield "text", {"num_shards": 40, "weighted": False, "duplicates": False}   # shards > ranks
    yield "npy", {"num_shards": 7, "compress": True}
    yield "chunks", {"num_shards": 9, "undirected": True, "compress": True}
    for undirected, duplicates in itertools.product((False, True), repeat=2):
        yield "chunks", {"num_shards": 6, "edge_ids": True, "undirected": undirected,
                         "duplicates": duplicates, "self_loops": duplicates}
    yield "sparse", {"num_shards": 5, "edge_ids": True, "compress": True}
    yield "npy", {"num_shards": 5, "reorder": "degree"}
    yield "sparse", {"num_shards": 4, "reorder": "rcm", "edge_ids": True, "undirected": True}
    yield "text", {"num_shards": 3, "reorder": "auto", "duplicates": False}
    yield "chunks", {"num_shards": 7, "reorder": "rcm", "compress": True}
    # within a memory limit (the shards sized by it): key runs, edge records, renumbering
    yield "npy", {"num_shards": 2, "memory_limit": 100_000}
    yield "chunks", {"memory_limit": 200_000, "undirected": True, "duplicates": False}
    yield "text", {"num_shards": 3, "memory_limit": 150_000, "edge_ids": True}
    yield "chunks", {"memory_limit": 150_000, "edge_ids": True, "undirected": True,
                     "duplicates": False, "self_loops": False}
    yield "sparse", {"num_shards": 3, "memory_limit": 100_000}   # ids beyond the vertex arrays
    yield "sparse", {"num_shards": 5, "memory_limit": 20_000_000}
    yield "npy", {"memory_limit": 120_000, "renumber": True, "self_loops": False}
    yield "npy", {"memory_limit": 100_000, "reorder": "degree", "compress": True}
    yield "text", {"memory_limit": 100_000, "weight_dtype": "float32", "duplicates": False}
    yield "text", {"memory_limit": 100_000, "key_bits": 17}
    yield "npy", {"num_shards": 1, "memory_limit": 20_000_000, "edge_ids": True}   # idle ranks


def parts_cases():
    """Cases built as part files (a path holding {rank})."""
    yield "npy", {"num_shards": 7}
    yield "chunks", {"num_shards": 9, "duplicates": False, "edge_ids": True}   # a cut of its own
    yield "text", {"num_shards": 1}   # a rank holding no shard
    yield "sparse", {"num_shards": 6, "compress": True, "reorder": "degree"}
    yield "npy", {"memory_limit": 100_000}
    yield "chunks", {"memory_limit": 100_000, "duplicates": False}   # laid out before written
    yield "text", {"memory_limit": 150_000, "duplicates": False, "edge_ids": True}
    yield "chunks", {"num_shards": 1, "memory_limit": 20_000_000, "duplicates": False}


def same_parts(whole, pattern, size):
    """Whether the part files at ``pattern`` equal those ``grstream split`` writes from the store
    ``whole`` (every dataset and attribute but the build record; and the part record's shards)."""
    with gr.open(whole) as store:
        for r in range(size):
            split = Path(whole).with_name(f"split{r}.h5")
            write_part(store, r, size, split)
            mine = Path(part_path(pattern, r))
            if store_contents(mine) != store_contents(split):
                return False
            with gr.open(mine) as a, gr.open(split) as b:
                if part_of(a)["shards"] != part_of(b)["shards"] or part_of(a)["index"] != r:
                    return False
    return True


def main():
    folder = Path(sys.argv[1])
    comm = MPI.COMM_WORLD
    # chunks of 1000 edges (in both builds): the 4000-edge inputs come in several, dealt out
    # round robin (a .npy's read by each rank alone: EdgeSource.rows)
    build.MAX_CHUNK_EDGES = 1000
    rank = comm.Get_rank()
    sources = inputs(folder)
    differ = []
    chosen = list(cases())[::3 if sys.argv[2:] == ["few"] else 1]
    for k, (name, options) in enumerate(chosen):
        ranks_path, one_path = folder / f"ranks{k}.h5", folder / f"one{k}.h5"
        # compressed: the ranks encode with the compiled encoder (where installed), one process
        # with the numpy reference (sides this small): the same words
        encode.COMPILED_IDS = 1
        # key_bits: keys narrowed, so weighted chunks do not fit a key run (edge records then)
        layout._KEY_BITS = options.pop("key_bits", KEY_BITS)
        got = gr.build_shards(sources[name], ranks_path, comm=comm, progress=False, **options)
        encode.COMPILED_IDS = COMPILED_IDS
        assert Path(got) == ranks_path
        if rank == 0:
            gr.build_shards(sources[name], one_path, progress=False, **options)
            if store_contents(ranks_path) != store_contents(one_path):
                differ.append([name, options])
        layout._KEY_BITS = KEY_BITS
    for j, (name, options) in enumerate(list(parts_cases())[::3 if sys.argv[2:] == ["few"] else 1]):
        pattern, one_path = folder / f"part{j}-{{rank}}.h5", folder / f"whole{j}.h5"
        got = gr.build_shards(sources[name], pattern, comm=comm, progress=False, **options)
        assert Path(got) == Path(part_path(pattern, rank))
        if rank == 0:
            gr.build_shards(sources[name], one_path, progress=False, **options)
            if not same_parts(one_path, pattern, comm.Get_size()):
                differ.append([name, options, "parts"])
    if rank == 0:
        print(json.dumps({"cases": k + j + 2, "differ": differ}))


if __name__ == "__main__":
    main()
