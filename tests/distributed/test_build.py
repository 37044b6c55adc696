"""The shard build under ``mpiexec``: every rank builds its own intervals, rank 0 writes the
store, which equals one process's build (every dataset and attribute but the build record)
for every input kind and option the build under ranks takes
(tests/distributed/build_check.py); what it does not take is refused on every rank."""
import json

import numpy as np
import pytest

import grstream as gr

from tests.partition.graphs import store_contents

from .test_ranks import mpirun, needs_mpi

pytestmark = needs_mpi


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_build_under_ranks_equals_one_process(tmp_path, ranks):
    out = mpirun(ranks, "tests.distributed.build_check", str(tmp_path),
                 *(["few"] if ranks == 3 else []), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["differ"] == [] and found["cases"] >= (15 if ranks == 2 else 5)


def test_grstream_shard_under_mpiexec(tmp_path):
    rng = np.random.default_rng(2)
    edges = tmp_path / "e.npy"
    np.save(edges, rng.integers(0, 500, (5000, 2)))
    out = mpirun(2, "grstream", "shard", str(edges), "-o", str(tmp_path / "ranks.h5"),
                 "--shards", "5", "--undirected", "--quiet", timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    gr.build_shards(str(edges), tmp_path / "one.h5", num_shards=5, undirected=True)
    assert store_contents(tmp_path / "ranks.h5") == store_contents(tmp_path / "one.h5")
    loops = int((np.load(edges)[:, 0] == np.load(edges)[:, 1]).sum())
    with gr.open(tmp_path / "ranks.h5") as store:   # every edge both ways, a self-loop once
        assert store.build["ranks"] == 2 and store.num_edges == 2 * 5000 - loops
    refused = mpirun(2, "grstream", "shard", str(edges), "-o", str(tmp_path / "r2.h5"),
                     "--memory-limit", "1G", "--edge-ids", timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.count("a build under ranks runs in memory, without memory_limit, "
                                "edge_ids") == 2, refused.stderr[-2000:]
    assert not (tmp_path / "r2.h5").exists()
    kept = mpirun(2, "grstream", "shard", str(edges), "-o", str(tmp_path / "ranks.h5"),
                  "--no-overwrite", "--quiet", timeout=60)   # refused before any rank reads
    assert kept.returncode == 2 and "MPI_Abort" not in kept.stderr, kept.stderr[-2000:]
    assert kept.stderr.count("rank 0 of 2 failed: OutputExistsError") == 1
    assert store_contents(tmp_path / "ranks.h5") == store_contents(tmp_path / "one.h5")
