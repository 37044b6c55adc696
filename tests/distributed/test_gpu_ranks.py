"""GPU ranks: the NCCL exchange's logic equals the MPI exchange on host arrays under ``mpiexec``
(tests/distributed/exchange_check.py), a rank's memory model holds only its own shards, and,
on a machine with two GPUs (marker ``cuda``), every program on GPU ranks under ``mpiexec -n 2``
equals one process on one GPU, from Python and from the command line."""
import json
import subprocess
import sys

import numpy as np
import pytest

import grstream as gr
from grstream.distributed.nccl import owned_ids
from grstream.engine.memory import plan_memory

from .test_ranks import ROOT, mpirun, needs_mpi


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_the_device_exchange_equals_the_mpi_exchange(ranks):
    out = mpirun(ranks, "tests.distributed.exchange_check")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"100 checks equal on {ranks} ranks" in out.stdout


def test_owned_ids_are_the_set_bits_of_a_range(rng):
    for n in (0, 1, 32, 33, 95, 1000):
        mask = rng.random(n) < 0.3
        words = np.zeros((n + 31) // 32, dtype=np.uint32)
        ids = np.flatnonzero(mask)
        np.bitwise_or.at(words, ids // 32, np.uint32(1) << (ids % 32).astype(np.uint32))
        for lo, hi in [(0, n), (n // 3, n), (0, n // 2), (n // 3, n // 3 + 40)]:
            hi = min(hi, n)
            got = owned_ids(np, words, lo, hi)
            assert got.dtype == np.int64 and np.array_equal(got, ids[(ids >= lo) & (ids < hi)])


def test_a_rank_plans_memory_for_its_own_shards_only(tmp_path, rng):
    from grstream.backends.cpu.executor import CpuExecutor
    from grstream.engine.direction import memory_arrays
    gr.build_shards(rng.integers(0, 400, (6000, 2)), tmp_path / "g.h5", num_shards=8, progress=False)
    store = gr.open(tmp_path / "g.h5")
    spec = gr.algorithms.pagerank.PageRank.spec
    setup = CpuExecutor.make_setup(store, CpuExecutor.Options.of({}))
    fp = CpuExecutor.footprint(spec, True, setup)
    names = memory_arrays(spec, False)
    whole = plan_memory(store, names, fp, None, pinned=False)
    owned = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    mine = plan_memory(store, names, fp, None, pinned=False, owned=owned)
    assert mine.others == (0, 1, 2, 3) and mine.resident == (4, 5, 6, 7) and mine.in_memory
    assert mine.resident_bytes == sum(whole.regions[4:])
    # a budget that holds half of the graph besides the fixed bytes holds all of a half
    half = fp.static_bytes + fp.scratch_bytes + sum(whole.regions[4:])
    assert plan_memory(store, names, fp, half, pinned=False, owned=owned).in_memory
    assert not plan_memory(store, names, fp, half, pinned=False).in_memory
    assert sum(plan_memory(store, names, fp, half, pinned=False, owned=owned).tiers().values(), []) == [4, 5, 6, 7]
    store.close()


def gpus():
    """The number of usable GPUs, with CuPy's NCCL (0 where any is missing)."""
    from grstream.backends import cuda
    if not cuda.available()[0]:
        return 0
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:
        return 0
    import pycuda.driver as drv
    drv.init()
    return drv.Device.count()


def needs_gpus(k):
    if gpus() < k:
        pytest.skip(f"needs {k} GPUs with PyCUDA, CuPy and NCCL")


@needs_mpi
@pytest.mark.cuda
@pytest.mark.parametrize("case, timeout, line", [
    ((), 600, "gpu_ranks_check: 122 runs equal on 2 cuda ranks"),
    (("lanes",), 300, "gpu_ranks_check: lanes equal in 50 runs on 2 cuda ranks")],
    ids=["programs", "lanes"])
def test_gpu_ranks_equal_one_gpu(tmp_path, case, timeout, line):
    """Every program, and Session.run_lanes, on 2 GPU ranks equal to one GPU."""
    needs_gpus(2)
    out = mpirun(2, "tests.distributed.gpu_ranks_check", str(tmp_path), *case, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    assert line in out.stdout


@needs_mpi
@pytest.mark.cuda
def test_a_failing_gpu_rank_ends_every_rank_naming_it(tmp_path):
    needs_gpus(2)
    out = mpirun(2, "tests.distributed.gpu_ranks_check", str(tmp_path), "fail", timeout=180)
    assert out.returncode != 0
    assert "grstream: rank 1 of 2 failed: RuntimeError: injected failure" in out.stderr


@needs_mpi
@pytest.mark.cuda
def test_the_command_line_on_gpu_ranks(tmp_path):
    needs_gpus(2)
    rng = np.random.default_rng(11)
    path = tmp_path / "g.h5"
    gr.build_shards(rng.integers(0, 3000, (40000, 2)), path, num_shards=6, progress=False)
    for algo in ("pagerank", "bfs", "cc"):
        one = tmp_path / f"{algo}-one.csv"
        extra = ["--source", "0"] if algo == "bfs" else []
        subprocess.run([sys.executable, "-m", "grstream", "run", algo, str(path), *extra, "--device",
                        "cuda", "-o", str(one), "--quiet"], cwd=ROOT, check=True, capture_output=True)
        out = mpirun(2, "grstream", "run", algo, str(path), *extra, "--device", "cuda",
                     "-o", str(tmp_path / f"{algo}-two.csv"), "--stats-json", str(tmp_path / "s.json"))
        assert out.returncode == 0, out.stderr[-3000:]
        want, got = (np.loadtxt(p, delimiter=",", skiprows=1) for p in (one, tmp_path / f"{algo}-two.csv"))
        assert np.allclose(got, want, rtol=1e-9) if algo == "pagerank" else np.array_equal(got, want)
        doc = json.loads((tmp_path / "s.json").read_text())
        assert doc["ranks"] == 2 and doc["runs"][0]["info"]["backend"] == "cuda"
        stats = doc["runs"][0]["info"]["rank_stats"]
        assert [s["rank"] for s in stats] == [0, 1] and all(s["exchange_bytes"] > 0 for s in stats)
        assert all(s["exchange_s"] > 0 for s in stats)


@needs_mpi
@pytest.mark.cuda
@pytest.mark.parametrize("name", ["bfs-predecessors", "sssp-predecessors", "katz", "kcore", "scc", "bfs-to", "bc",
                                  "delta"])
def test_algorithms_on_gpu_ranks_equal_one_gpu(tmp_path, name):
    needs_gpus(2)
    out = mpirun(2, "tests.distributed.gpu_ranks_check", str(tmp_path), "algorithm", name, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{name} equal in 2 runs on 2 cuda ranks" in out.stdout


def test_gpu_ranks_push_synchronously_over_their_span_with_their_shards():
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.distributed.gpu_rank import CudaRankExecutor
    from grstream.distributed.rank_executor import RankExecutor, RankMixin

    class World:   # what the class reads of its Ranks
        size, span, owned = 2, (10, 25), np.array([0, 1, 1])
    cls = type("RankCudaExecutor", (CudaRankExecutor, CudaExecutor), {"ranks": World})
    setup = cls.make_setup(None, CudaExecutor.Options.of({}))
    assert setup.span == (10, 25)
    assert cls.capabilities(setup).push is not None and not cls.capabilities(setup).push.asynchronous
    assert cls.memory_options(gr.algorithms.pagerank.PageRank.spec, setup)["owned"] is World.owned
    # one piece of the rank's setup for CPU and GPU ranks
    assert cls.make_setup.__func__ is RankMixin.make_setup.__func__ is RankExecutor.make_setup.__func__


@needs_mpi
def test_ranks_whose_budgets_differ_agree_on_push(tmp_path):
    out = mpirun(2, "tests.distributed.ranks_check", str(tmp_path), "agree")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ranks_check: push agreed" in out.stdout
