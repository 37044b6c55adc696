"""Checkpoints from the command line, in one process and under ``mpiexec -n 2``, and faults: a
run stopped by SIGTERM at an iteration (tests/distributed/fault_cli.py sends it) exits with
status 144 after its checkpoint, and its resume writes what the uninterrupted run writes; a
rank killed by SIGKILL or raising ends every rank in bounded time with a non-zero status."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import declaration

from .test_ranks import MPIEXEC, ROOT, needs_mpi

#: algorithm -> options of its runs here
ALGORITHMS = {"pagerank": {"tol": 1e-10}, "bfs": {"source": 3}, "cc": {}, "sssp": {"source": 3},
              "scc": {}}   # (scc: several runs, grstream/engine/journal.py)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A weighted random graph of 6 shards and each algorithm's values in this process."""
    rng = np.random.default_rng(11)
    n, m = 500, 2000
    edges = np.column_stack([rng.integers(0, n, m), rng.integers(0, n, m), rng.uniform(1, 5, m)])
    path = tmp_path_factory.mktemp("faults") / "g.h5"
    gr.build_shards(edges, path, num_shards=6, weighted=True, progress=False)
    with gr.open(path) as store:
        values = {name: declaration(name).entry(store, **opts)[0] for name, opts in ALGORITHMS.items()}
    return path, values


def grstream_run(name, path, *options, ranks=None, fault=None, timeout=120):
    """``grstream run NAME PATH ...`` (with a fault: (kind, iteration, rank)), under mpiexec when
    ``ranks``; returns (completed process, seconds)."""
    flags = [x for k, v in ALGORITHMS[name].items() for x in (f"--{k}", str(v))]
    command = ["run", name, str(path), "--quiet", *flags, *options]
    command = ([sys.executable, "-m", "tests.distributed.fault_cli", *map(str, fault), *command]
               if fault else [sys.executable, "-m", "grstream", *command])
    if ranks is not None:
        command = [MPIEXEC, "-n", str(ranks), *command]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    t0 = time.monotonic()
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return out, time.monotonic() - t0


def stop_and_resume(graph, tmp_path, name, ranks):
    path, values = graph
    ck, out = tmp_path / "ck", tmp_path / "out.npy"
    stopped, _ = grstream_run(name, path, "--checkpoint", str(ck), "--checkpoint-every", "0",
                              "-o", str(out), ranks=ranks, fault=("term", 2, 1 if ranks else 0))
    assert stopped.returncode == 144, stopped.stderr[-2000:]
    assert stopped.stderr.count(f"continue with --resume {ck}") == 1   # said once, by rank 0
    assert not out.exists()
    resumed, _ = grstream_run(name, path, "--resume", str(ck), "-o", str(out), ranks=ranks)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert np.array_equal(np.load(out), values[name])
    return ck


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_the_command_resumes_a_run_stopped_by_sigterm(graph, tmp_path, name):
    stop_and_resume(graph, tmp_path, name, None)


@needs_mpi
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_ranks_resume_a_run_stopped_by_sigterm_on_one_rank(graph, tmp_path, name):
    ck = stop_and_resume(graph, tmp_path, name, 2)
    assert len(list(ck.rglob("state-*-of-00002.npz"))) == 2   # (scc: in its run's folder)
    other, _ = grstream_run(name, graph[0], "--resume", str(ck))   # one process: refused
    assert other.returncode == 2 and "another world size: 2, not 1" in other.stderr


@needs_mpi
def test_a_killed_rank_ends_every_rank_in_bounded_time(graph):
    out, seconds = grstream_run("pagerank", graph[0], ranks=2, fault=("kill", 2, 1), timeout=60)
    assert out.returncode != 0 and seconds < 30
    assert "BAD TERMINATION" in out.stdout + out.stderr and "signal 9" in out.stdout + out.stderr


@needs_mpi
def test_a_raising_rank_ends_every_rank_naming_it(graph):
    out, seconds = grstream_run("bfs", graph[0], ranks=2, fault=("raise", 2, 1), timeout=60)
    assert out.returncode != 0 and seconds < 30
    assert "grstream: rank 1 of 2 failed: RuntimeError: injected failure at iteration 2" in out.stderr


def test_a_failing_rank_aborts_only_after_its_message_is_read():
    """Under mpiexec a rank's standard error is a pipe to the launcher: the abort waits until
    the launcher has read the line naming the rank (else the abort can end the launcher before
    it forwards the line, and the user sees a failed run that says nothing)."""
    import fcntl
    import select
    import termios
    import threading
    from array import array
    from grstream.distributed.ranks import abort

    read_end, write_end = os.pipe()
    seen = []

    class World:
        def Get_size(self):
            return 2

        def Get_rank(self):
            return 1

        def Abort(self, code):
            unread = array("i", [0])
            fcntl.ioctl(2, termios.FIONREAD, unread, True)
            seen.append(("abort", code, unread[0]))

    def launcher():
        time.sleep(0.3)             # a launcher slow to read (a loaded machine)
        if select.select([read_end], [], [], 5)[0]:
            seen.append(("read", os.read(read_end, 4096)))

    saved = os.dup(2)
    reader = threading.Thread(target=launcher)
    try:
        os.dup2(write_end, 2)
        reader.start()
        abort(World(), RuntimeError("injected failure"))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        reader.join()
        os.close(read_end)
        os.close(write_end)
    assert seen == [("read", b"grstream: rank 1 of 2 failed: RuntimeError: injected failure\n"),
                    ("abort", 1, 0)]


def test_checkpoint_options_from_the_command_line_are_checked(graph, tmp_path, capsys):
    from grstream import cli
    for options, message in ((["--checkpoint", str(tmp_path), "--checkpoint-every", "soon"],
                              "--checkpoint-every must be a number, not 'soon'"),
                             (["--checkpoint", str(tmp_path), "--checkpoint-every", "-5"],
                              "--checkpoint-every must be a number of seconds >= 0"),
                             (["--resume", str(tmp_path / "none")], "no such folder")):
        assert cli.main(["run", "bfs", str(graph[0]), "--quiet", *options]) == 2
        assert message in capsys.readouterr().err


@needs_mpi
def test_betweenness_spread_over_ranks_resumes_each_ranks_journal(graph, tmp_path):
    from .test_ranks import mpirun
    out = mpirun(2, "tests.distributed.journal_check", str(graph[0]), str(tmp_path / "ck"),
                 timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    rank0, rank1 = json.loads(out.stdout.splitlines()[-1])
    assert rank1["stopped"].startswith("Checkpointed: ") and "rank 1 of 2 failed" in rank0["stopped"]
    assert f"continue with --resume {tmp_path / 'ck'}" in rank1["stopped"]
    assert "rank00000-of-00002/run-000002.npz" in rank0["saved"]   # rank 0 finished its share
    assert rank0["equal"] and rank1["equal"]
