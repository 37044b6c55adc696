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
def test_the_build_under_ranks_equals_one_process(tmp_path, ranks, monkeypatch):
    """On 3 ranks every host message goes in rounds of pieces of a few bytes (a limit of 64
    bytes: grstream.distributed.messages), the build's path for messages past 2 GiB."""
    if ranks == 3:
        monkeypatch.setenv("GRSTREAM_MPI_LIMIT", "64")
    out = mpirun(ranks, "tests.distributed.build_check", str(tmp_path),
                 *(["few"] if ranks == 3 else []), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["differ"] == [] and found["cases"] >= (30 if ranks == 2 else 10)


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
    kept = mpirun(2, "grstream", "shard", str(edges), "-o", str(tmp_path / "ranks.h5"),
                  "--no-overwrite", "--quiet", timeout=60)   # refused before any rank reads
    assert kept.returncode == 2 and "MPI_Abort" not in kept.stderr, kept.stderr[-2000:]
    assert kept.stderr.count("rank 0 of 2 failed: OutputExistsError") == 1
    assert store_contents(tmp_path / "ranks.h5") == store_contents(tmp_path / "one.h5")


def test_grstream_shard_writes_part_files_under_mpiexec(tmp_path):
    """-o holding {rank}: each rank writes its own part (the file grstream split writes for it),
    which grstream run reads under as many ranks; refused without ranks, and where any rank's
    part cannot be written (every rank ends with the error, nothing is written)."""
    from tests.distributed.build_check import same_parts
    from .test_parts import cli
    rng = np.random.default_rng(3)
    edges = tmp_path / "e.npy"
    np.save(edges, rng.integers(0, 300, (3000, 2)))
    for r in range(3):
        (tmp_path / f"local{r}").mkdir()
    pattern = str(tmp_path / "local{rank}" / "g.h5")
    options = ["--shards", "6", "--edge-ids", "--reorder", "degree", "--drop-duplicates"]
    out = mpirun(3, "grstream", "shard", str(edges), "-o", pattern, *options, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert cli("shard", str(edges), "-o", str(tmp_path / "whole.h5"), *options).returncode == 0
    assert same_parts(tmp_path / "whole.h5", pattern, 3)
    assert cli("run", "cc", str(tmp_path / "whole.h5"), "-o", str(tmp_path / "one.csv"),
               "--quiet").returncode == 0
    out = mpirun(3, "grstream", "run", "cc", pattern, "-o", str(tmp_path / "three.csv"), "--quiet")
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "three.csv").read_text()
    # without ranks a {rank} path names no file
    out = cli("shard", str(edges), "-o", str(tmp_path / "p{rank}.h5"))
    assert out.returncode == 2 and "names one part file per rank" in out.stderr
    # rank 2's folder missing: every rank stops before reading, no part written
    for r in range(2):
        (tmp_path / f"new{r}").mkdir()
    out = mpirun(3, "grstream", "shard", str(edges), "-o", str(tmp_path / "new{rank}" / "g.h5"),
                 timeout=60)
    assert out.returncode != 0 and "MPI_Abort" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.count("rank 2 of 3 failed: OutputError: cannot write") == 2
    assert not any(list((tmp_path / f"new{r}").iterdir()) for r in range(2))
    # --no-overwrite with rank 1's part there: every rank refuses, the parts stay
    (tmp_path / "local0" / "g.h5").unlink()
    before = (tmp_path / "local1" / "g.h5").read_bytes()
    out = mpirun(3, "grstream", "shard", str(edges), "-o", pattern, "--no-overwrite", timeout=60)
    assert out.returncode == 2 and "rank 1 of 3 failed: OutputExistsError" in out.stderr
    assert not (tmp_path / "local0" / "g.h5").exists()
    assert (tmp_path / "local1" / "g.h5").read_bytes() == before


@pytest.mark.parametrize("kind", ["keys", "records", "weighted"])
def test_each_rank_builds_within_the_memory_limit(tmp_path, kind):
    """--memory-limit under ranks: each rank's external build of its own intervals stays within
    the limit (plus the allocator's and HDF5's slack, as one process's: tests/partition/
    test_memory.py), on key runs, edge records (edge ids) and weighted key runs."""
    from tests.partition.test_memory import SLACK
    rng = np.random.default_rng(0)
    m, n = 1_500_000, 100_000
    edges = tmp_path / "e.npy"
    np.save(edges, rng.integers(0, n, (m, 2)))
    limit = 8 * 2 ** 20   # under a third of the 24 MB input
    out = mpirun(2, "tests.distributed.build_memory_check", str(edges), str(tmp_path / "g.h5"),
                 str(limit), kind, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["mode"] == "external" and report["edges"] == m
    assert max(report["grown"]) <= limit + SLACK, report


def test_bad_input_under_ranks_within_a_memory_limit(tmp_path):
    """Errors of a build within a limit end every rank with the error, naming the rank that
    found it, without a hang or an abort."""
    edges = np.random.default_rng(4).integers(0, 1000, (10000, 2))
    edges[5000] = (-1, 3)   # in the second chunk of 4096 edges: rank 1's
    np.save(tmp_path / "bad.npy", edges)
    out = mpirun(2, "grstream", "shard", str(tmp_path / "bad.npy"), "-o", str(tmp_path / "g.h5"),
                 "--memory-limit", "1M", "--quiet", timeout=60)
    assert out.returncode == 2 and "MPI_Abort" not in out.stderr, out.stderr[-2000:]
    assert "rank 1 of 2 failed: InputFormatError" in out.stderr and "negative vertex id" in out.stderr
    np.save(tmp_path / "good.npy", np.abs(edges))
    out = mpirun(2, "grstream", "shard", str(tmp_path / "good.npy"), "-o", str(tmp_path / "g.h5"),
                 "--memory-limit", "2K", "--quiet", timeout=60)   # below the vertex arrays
    assert out.returncode == 2 and out.stderr.count("MemoryBudgetError") + out.stderr.count(
        "memory limit") >= 2, out.stderr[-2000:]
    # rcm holds the adjacency, beyond this limit: rank 0 finds it choosing the order
    out = mpirun(2, "grstream", "shard", str(tmp_path / "good.npy"), "-o", str(tmp_path / "g.h5"),
                 "--memory-limit", "100K", "--reorder", "rcm", "--quiet", timeout=60)
    assert out.returncode == 2 and "use the degree order" in out.stderr, out.stderr[-2000:]
    assert "rank 0 of 2 failed: MemoryBudgetError" in out.stderr
    assert not (tmp_path / "g.h5").exists()
