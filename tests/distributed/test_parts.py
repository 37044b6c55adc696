"""Per-rank part files (grstream/distributed/part_files.py, ``grstream split``): each part opens as the
whole store with only its rank's shards' edges stored, ranks opening theirs through a path
holding {rank} equal one process, and a part that is not the rank's is refused on every rank."""
import subprocess
import sys

import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.distributed.part_files import held, part_of, write_part
from grstream.distributed.ranks import partition
from grstream.errors import UsageError

from .test_ranks import ROOT, mpirun, needs_mpi


def cli(*args):
    return subprocess.run([sys.executable, "-m", "grstream", *args], cwd=ROOT, capture_output=True,
                          text=True)


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(2)
    edges = np.column_stack([rng.integers(0, 400, (3000, 2)), rng.uniform(1, 2, 3000)])
    path = tmp_path / "g.h5"
    gr.build_shards(edges, path, num_shards=7, weighted=True, progress=False, edge_ids=True)
    return path


def test_a_part_opens_as_the_store_holding_only_its_shards(store_path, tmp_path):
    out = cli("split", str(store_path), "--parts", "3")
    assert out.returncode == 0, out.stderr
    with gr.open(store_path) as whole:
        cut = partition(whole, 3)
        for r in range(3):
            path = tmp_path / f"g.part{r}.h5"
            with gr.open(path) as part:
                assert part_of(part)["shards"] == [cut[r], cut[r + 1]] and part_of(part)["parts"] == 3
                assert list(held(part)) == list(range(cut[r], cut[r + 1]))
                assert part.num_edges == whole.num_edges and np.array_equal(part.intervals, whole.intervals)
                assert np.array_equal(part.in_degree(), whole.in_degree())
                for i in range(whole.num_shards):   # every shard's facts, its own shards' data
                    assert part.shard_info(i) == whole.shard_info(i)
                    for name in whole.dataset_names(i) if i in held(part) else ("in/indptr", "out/indptr"):
                        assert np.array_equal(part.read(i, name), whole.read(i, name))
            with h5py.File(path, "r") as f:   # the other shards' edges take no bytes
                sizes = {i: f[f"shards/{i}/in/src"].id.get_storage_size() for i in range(whole.num_shards)}
            assert all((sizes[i] > 0) == (i in held(part) and whole.shard_info(i).num_in_edges > 0)
                       for i in sizes)
            verify = cli("verify", str(path), "--quiet")
            assert verify.returncode == 0, verify.stderr


@pytest.mark.parametrize("verify", ["first", "never"])
def test_a_part_maps_its_own_shards_and_refuses_the_others(store_path, tmp_path, verify):
    """A part file, however opened (by ranks or by ``gr.open`` in one process): ``read``,
    ``mapped`` and ``mapped_or_read`` (the CPU executor's resident shards, SSSP's weight check)
    give its own shards' data and refuse another part's shards, also where a tool that rewrote
    the file gave the undeclared datasets storage (zeros): never those zeros, nor a checksum
    mismatch against them; a run in one process on a part file is refused so too."""
    with gr.open(store_path) as whole:
        write_part(whole, 1, 3, tmp_path / "p1.h5")
        with h5py.File(tmp_path / "p1.h5", "r+") as f:   # another part's shard, given storage
            f["shards/0/in/src"][...] = 0
            f["shards/0/out/dst"][...] = 0
        with gr.open(tmp_path / "p1.h5", verify=verify) as part:
            own, other = list(held(part)), [i for i in range(whole.num_shards) if i not in held(part)]
            for i in own:
                for name in whole.dataset_names(i):
                    mapped = part.mapped(i, name)
                    assert mapped is not None and np.array_equal(mapped, whole.read(i, name))
                    assert np.array_equal(part.mapped_or_read(i, name), whole.read(i, name))
            for i in other:
                assert np.array_equal(part.mapped(i, "out/indptr"), whole.read(i, "out/indptr"))
                for name in ("in/src", "out/weight"):
                    for call in (part.read, part.mapped, part.mapped_or_read):
                        with pytest.raises(UsageError, match=f"shard {i}'s {name} is in another part"):
                            call(i, name)
            with pytest.raises(UsageError, match="is in another part"):
                gr.run(gr.algorithms.bfs.BFS(source=0), part)


def test_split_refuses_bad_arguments(store_path, tmp_path):
    out = cli("split", str(store_path), "--parts", "2", "-o", str(tmp_path / "fixed.h5"))
    assert out.returncode == 2 and "must hold {rank}" in out.stderr
    assert cli("split", str(store_path), "--parts", "0").returncode == 2
    write_part(gr.open(store_path), 0, 2, tmp_path / "p0.h5")
    with gr.open(tmp_path / "p0.h5") as part, pytest.raises(UsageError, match="itself a part"):
        write_part(part, 0, 2, tmp_path / "again.h5")


@needs_mpi
def test_ranks_run_their_part_files(store_path, tmp_path):
    out = mpirun(2, "grstream", "split", str(store_path), "--parts", "2", "-o",
                 str(tmp_path / "local{rank}" / "g.h5"))   # (a folder per rank: node-local disks)
    assert out.returncode != 0 and "local0" in out.stderr   # the folders must exist
    for r in range(2):
        (tmp_path / f"local{r}").mkdir()
    out = mpirun(2, "grstream", "split", str(store_path), "--parts", "2", "-o",
                 str(tmp_path / "local{rank}" / "g.h5"))   # each rank writes its own
    assert out.returncode == 0, out.stderr[-3000:]
    one = tmp_path / "one.csv"
    assert cli("run", "cc", str(store_path), "-o", str(one), "--quiet").returncode == 0
    out = mpirun(2, "grstream", "run", "cc", str(tmp_path / "local{rank}" / "g.h5"),
                 "-o", str(tmp_path / "two.csv"), "--quiet")
    assert out.returncode == 0, out.stderr[-3000:]
    want, got = (np.loadtxt(p, delimiter=",", skiprows=1) for p in (one, tmp_path / "two.csv"))
    assert np.array_equal(got, want)
    # sssp checks every shard's weights first: on parts, a clear refusal on every rank
    out = mpirun(2, "grstream", "run", "sssp", str(tmp_path / "local{rank}" / "g.h5"), "--quiet", timeout=120)
    assert out.returncode == 2 and out.stderr.count("is in another part (this reads every shard") == 2
    # a part that is not the rank's (rank 0 given rank 1's), or a missing one: refused on every
    # rank, none left waiting
    out = mpirun(2, "grstream", "run", "bfs", str(tmp_path / "local1" / "g.h5"), "--quiet", timeout=120)
    assert out.returncode == 2 and out.stderr.count("rank 0: ") == 2 and "is part 1 of 2" in out.stderr
    out = mpirun(3, "grstream", "run", "bfs", str(tmp_path / "local{rank}" / "g.h5"), "--quiet", timeout=120)
    assert out.returncode == 2 and "rank 2 of 3 failed: StoreNotFoundError" in out.stderr


def test_ranks_writing_into_one_folder_remove_dead_temporaries_only_before_any_starts(
        store_path, tmp_path):
    """A process cannot tell whether another host's writer is alive: a temporary whose process
    is not running here may be a live rank's elsewhere. Ranks writing part files into a shared
    folder remove the dead writers' temporaries before any of them starts its own
    (rank_output.py tidy_first), and their writers leave the folder's temporaries alone."""
    from grstream.partition.writer import StoreWriter
    from tests.io.test_atomic import dead_pid
    elsewhere = tmp_path / f"g.part1.h5.tmp-{dead_pid()}"   # (as another host's live writer's)
    elsewhere.write_bytes(b"partial")
    with StoreWriter(tmp_path / "g.part0.h5", tidy=False) as writer:
        writer.abort()
    assert elsewhere.exists()
    write_part(gr.open(store_path), 0, 2, tmp_path / "p0.h5", tidy=False)
    assert elsewhere.exists()
    with StoreWriter(tmp_path / "g.part0.h5") as writer:   # one process: a dead writer's
        writer.abort()
    assert not elsewhere.exists()
