"""Errors before a run on one rank only (a store or part file missing, an argument or option
that rank refuses): every rank exits in bounded time with the error, naming the rank, never a
hang; through the Python entry points (tests/distributed/prerun_check.py, one launch for every
case) and the command line."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import grstream as gr

from .test_ranks import MPIEXEC, ROOT, mpirun, needs_mpi

pytestmark = needs_mpi


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prerun")
    rng = np.random.default_rng(5)
    path = folder / "g.h5"
    gr.build_shards(rng.integers(0, 200, (1500, 2)), path, num_shards=5, progress=False)
    return path


def test_an_argument_one_rank_refuses_raises_on_every_rank(store, tmp_path):
    from grstream.distributed.part_files import write_part
    with gr.open(store) as s:
        write_part(s, 0, 2, tmp_path / "part0.h5")   # part 1 is missing
    out = mpirun(2, "tests.distributed.prerun_check", str(store), str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    rank0, rank1 = json.loads(out.stdout.splitlines()[-1])
    assert rank0.pop("in step") and rank1.pop("in step")
    assert len(rank0) == 10
    for case, mine in rank1.items():
        assert mine is not None and "rank 1" not in mine, case   # rank 1's own error
        theirs = rank0[case]   # rank 0 names rank 1 and says its error
        assert theirs is not None and "rank 1" in theirs and mine.split(": ", 1)[1] in theirs, case


def _run(arguments, timeout=60):
    """``mpiexec -n 2 bash -c ARGUMENTS`` with $PMI_RANK telling each rank's; (status, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PY=sys.executable)
    out = subprocess.run([MPIEXEC, "-n", "2", "bash", "-c", arguments], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=timeout)
    return out.returncode, out.stderr


@pytest.mark.parametrize("case", ["store", "checkpoint", "output"])
def test_the_command_line_ends_every_rank_naming_the_one_that_refused(store, tmp_path, case):
    missing = tmp_path / "missing"
    rank1 = '"$PMI_RANK" = 1'
    pick = {   # rank 1's store, rank 1's checkpoint folder, rank 0's output (it writes them)
        "store": f'S={store}; if [ {rank1} ]; then S={missing}/g.h5; fi; '
                 f'exec $PY -m grstream run pagerank $S --quiet',
        "checkpoint": f'C={tmp_path}/ck; if [ {rank1} ]; then C={missing}/ck; fi; '
                      f'exec $PY -m grstream run bfs {store} --source 0 --quiet --checkpoint $C',
        "output": f'exec $PY -m grstream run cc {store} --quiet -o {missing}/cc.csv',
    }[case]
    status, err = _run(pick)
    assert status in (2, 3), err[-2000:]   # (UsageError; OutputError on the rank that writes)
    failed = 0 if case == "output" else 1
    # each rank's one line (the ranks' lines may interleave in the launcher's stream)
    assert err.count("grstream run: error:") == 2, err[-2000:]
    assert err.count(f"rank {failed} of 2 failed") == 1, err[-2000:]
    assert err.count(str(missing)) >= 2, err[-2000:]


def test_one_progress_bar_and_each_ranks_vertices(store, tmp_path):
    """``progress=True`` on every rank shows one bar (rank 0's); each rank's stats name the
    vertices it owns, which together cover the graph."""
    script = ("from mpi4py import MPI; import json, grstream as gr; "
              "from grstream.algorithms.pagerank import PageRank; "
              f"r = gr.run(PageRank(), {str(store)!r}, comm=MPI.COMM_WORLD, progress=True, "
              "max_iter=3); print(json.dumps(r.info['rank_stats']))")
    status, err = _run(f'exec $PY -c "{script}" > {tmp_path}/out$PMI_RANK 2> {tmp_path}/err$PMI_RANK')
    assert status == 0, err[-2000:]
    bars = [(tmp_path / f"err{r}").read_text() for r in (0, 1)]
    assert "PageRank" in bars[0] and "PageRank" not in bars[1], bars
    stats = json.loads((tmp_path / "out1").read_text())
    with gr.open(store) as s:
        n = s.num_vertices
    assert [st["vertices"] for st in stats] == [[0, stats[0]["vertices"][1]],
                                                [stats[0]["vertices"][1], n]]
