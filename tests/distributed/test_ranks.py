"""Ranks: every program under ``mpiexec -n 2`` and ``-n 3`` equals one process
(tests/distributed/ranks_check.py runs the cases on every rank), a failing rank ends every rank
with an error naming it, and the partition. Skips without mpi4py or mpiexec."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream.distributed.ranks import partition, world_from_environment
from grstream.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
MPIEXEC = shutil.which("mpiexec", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                        os.environ.get("PATH", "")]))


def have_mpi():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return MPIEXEC is not None


needs_mpi = pytest.mark.skipif(not have_mpi(), reason="mpi4py or mpiexec not installed (grstream[mpi])")


def mpirun(ranks, *args, timeout=240):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if os.geteuid() == 0:   # Open MPI's mpiexec refuses root (GPU machines run tests as root)
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_every_program_equals_one_process(tmp_path, ranks, monkeypatch):
    if ranks == 3:   # the exchange's messages in rounds of pieces (grstream.distributed.messages):
        # at 128 bytes every rounds path that the exchange's calls take at less (all-gather-v,
        # in place too, all-to-all-v, reduce-scatter, all-reduce) still runs, at half the MPI
        # calls of 64; messages_check.py checks the rounds themselves from 1 byte up
        monkeypatch.setenv("GRSTREAM_MPI_LIMIT", "128")
    out = mpirun(ranks, "tests.distributed.ranks_check", str(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"141 runs equal on {ranks} ranks" in out.stdout


@needs_mpi
def test_a_failing_rank_ends_every_rank_naming_it(tmp_path):
    out = mpirun(2, "tests.distributed.ranks_check", str(tmp_path), "fail", timeout=120)
    assert out.returncode != 0
    assert "grstream: rank 1 of 2 failed: RuntimeError: injected failure" in out.stderr


@needs_mpi
def test_lanes_and_push_run_under_ranks(tmp_path):
    from mpi4py import MPI
    gr.build_shards(np.array([[0, 1], [1, 2]]), tmp_path / "g.h5", num_shards=2, progress=False)
    BFS = gr.algorithms.bfs.BFS
    with gr.Session(tmp_path / "g.h5", comm=MPI.COMM_SELF, direction="push") as session:
        assert session.can_run_lanes(BFS)
        lanes = session.run_lanes([BFS(source=0), BFS(source=1)])
        pushed = session.run(BFS(source=0))
    assert [r.value.tolist() for r in lanes] == [[0, 1, 2], [-1, 0, 1]]
    assert pushed.value.tolist() == [0, 1, 2] and pushed.stats[0].plan["direction"] == {"push": 1}


def test_partition_is_contiguous_and_balanced_by_edges(tmp_path):
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 400, (4000, 2))
    gr.build_shards(edges, tmp_path / "g.h5", num_shards=12, progress=False)
    store = gr.open(tmp_path / "g.h5")
    S = store.num_shards
    weight = np.array([store.shard_info(i).num_in_edges + store.shard_info(i).num_out_edges + 1
                       for i in range(S)])
    for size in (1, 2, 3, 5, S + 3):
        cut = partition(store, size)
        assert cut[0] == 0 and cut[-1] == S and np.all(np.diff(cut) >= 0) and len(cut) == size + 1
        if size <= 3:   # each run within one shard's weight of an even share
            share = [weight[a:b].sum() for a, b in zip(cut, cut[1:])]
            assert max(abs(s - weight.sum() / size) for s in share) <= weight.max()
    store.close()


def test_plain_runs_need_no_mpi(monkeypatch):
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(var, raising=False)
    assert world_from_environment() is None
    monkeypatch.setenv("PMI_SIZE", "1")
    assert world_from_environment() is None


@needs_mpi
def test_a_world_of_one_equals_a_plain_run(tmp_path):
    from mpi4py import MPI
    rng = np.random.default_rng(5)
    gr.build_shards(rng.integers(0, 200, (900, 2)), tmp_path / "g.h5", num_shards=4, progress=False)
    store = gr.open(tmp_path / "g.h5")
    program = gr.algorithms.bfs.BFS(source=3)
    plain = gr.run(program, store)
    ranked = gr.run(gr.algorithms.bfs.BFS(source=3), store, comm=MPI.COMM_SELF, device="auto")
    assert np.array_equal(plain.value, ranked.value)
    assert ranked.info["backend"] == "cpu"   # "auto" ranks: the CPU, on a GPU machine too
    assert ranked.info["ranks"] == 1 and ranked.info["rank_stats"][0]["shards"] == [0, store.num_shards]
    store.close()


@needs_mpi
def test_a_declared_start_is_made_whole_on_every_rank(tmp_path, monkeypatch):
    """BFS and SSSP declare their start: a rank runs no init and loads its state without the
    dense exchange of a local init (no span of its own to share)."""
    from mpi4py import MPI
    from grstream.distributed.rank_executor import RankExecutor
    from grstream.distributed.ranks import Ranks
    rng = np.random.default_rng(9)
    edges = rng.integers(0, 150, (700, 2))
    gr.build_shards((edges[:, 0], edges[:, 1], rng.uniform(1, 5, 700)), tmp_path / "g.h5",
                    num_shards=3, progress=False, weighted=True)
    store = gr.open(tmp_path / "g.h5")
    plain = {P: gr.run(P(source=4), store) for P in (gr.algorithms.bfs.BFS, gr.algorithms.sssp.SSSP)}
    spans, real = [], RankExecutor.load_state
    monkeypatch.setattr(Ranks, "initial_state", lambda *a, **k: pytest.fail("init ran on a rank"))
    monkeypatch.setattr(RankExecutor, "load_state",
                        lambda self, *a: spans.append(self.ranks.state_span) or real(self, *a))
    for P, want in plain.items():
        got = gr.run(P(source=4), store, comm=MPI.COMM_SELF, device="cpu")
        assert np.array_equal(got.value, want.value) and got.iterations == want.iterations
    assert spans == [None, None]
    store.close()


@needs_mpi
def test_the_command_line_under_mpiexec(tmp_path):
    rng = np.random.default_rng(11)
    path = tmp_path / "g.h5"
    gr.build_shards(rng.integers(0, 300, (2000, 2)), path, num_shards=5, progress=False)
    one = tmp_path / "one.csv"
    subprocess.run([sys.executable, "-m", "grstream", "run", "pagerank", str(path), "-o", str(one),
                    "--quiet"], cwd=ROOT, check=True, capture_output=True)
    out = mpirun(2, "grstream", "run", "pagerank", str(path), "-o", str(tmp_path / "two.csv"),
                 "--stats-json", str(tmp_path / "s.json"))
    assert out.returncode == 0, out.stderr[-3000:]
    want, got = (np.loadtxt(p, delimiter=",", skiprows=1) for p in (one, tmp_path / "two.csv"))
    assert np.allclose(got, want, rtol=1e-12)
    assert out.stderr.count("pagerank: 300 vertices") == 1 and "2 ranks (read / exchanged" in out.stderr
    assert out.stderr.count("| 0/") == 1   # one progress bar
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["ranks"] == 2
    stats = doc["runs"][0]["info"]["rank_stats"]
    assert [s["rank"] for s in stats] == [0, 1] and all(s["exchange_bytes"] > 0 for s in stats)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_local_init_runs_over_each_ranks_own_vertices(tmp_path, ranks):
    out = mpirun(ranks, "tests.distributed.ranks_check", str(tmp_path), "local")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ranks_check: local init equal" in out.stdout
