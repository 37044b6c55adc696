"""tools/bench_gpu_ranks.py on a small graph with CPU ranks (``--device cpu``, ``mpiexec -n 2``):
the ranks' values equal one process's, ``--cases`` runs only the cases named, ``--profile``
records every rank's runs with the executor's and the exchange's host steps, and the figure from
the last rank's start is at most rank 0's (rank 0 waits at the start for the others)."""
import json
import os
import subprocess
import sys

from .distributed.test_ranks import ROOT, needs_mpi


@needs_mpi
def test_the_bench_profiles_every_rank(tmp_path):
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if os.geteuid() == 0:   # Open MPI's mpiexec refuses root
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_gpu_ranks.py"), "--device", "cpu",
                          "--scale", "8", "--ranks", "2", "--repeat", "2", "--cases", "bfs", "--profile",
                          "--dir", str(tmp_path), "--json", str(out)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert list(report["one"]) == ["bfs"] and list(report["ranks"]) == ["bfs"]
    ranks = report["ranks"]["bfs"]
    assert ranks["equal"] is True
    assert ranks["ms_ready"] <= ranks["ms"] + 1e-6 and len(ranks["ms_ready_all"]) == 2
    profile = ranks["profile"]   # [rank][run] (the warm run first)
    assert len(profile) == 2 and all(len(runs) == 3 for runs in profile)
    for runs in profile:
        for run_ in runs:
            first, *rest = run_["iterations"]
            assert run_["start_ms"] > 0 and first["mpi.counts"] > 0   # (the start's counts)
            assert len(rest) == ranks["iterations"] - 1 and all(it["ms"] > 0 for it in rest)
    assert len(report["one"]["bfs"]["profile"]) == 3   # (one process: its own runs)


def test_the_profile_counts_a_ranks_init_once(tmp_path):
    """``--profile``'s "init" is a run's start_state, which under ranks calls Ranks.initial_state
    (a host init): timed once, not again inside it (a 0.2 s init reads 0.2 s, not 0.4 s)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys, time\n"
        "from tests._tools import tool_module\n"
        "from grstream.algorithms.cc import ConnectedComponents\n"
        "from grstream.distributed.ranks import Ranks\n"
        "from grstream.engine import session\n"
        "Ranks.initial_state = lambda self, *a, **k: time.sleep(0.2) or ('state', None)\n"
        "bench = tool_module('bench_gpu_ranks')\n"
        "bench.profile_hooks()\n"
        "class Store:\n    num_vertices = 10\n"
        "got = session.start_state(ConnectedComponents(), Store(), ranks=Ranks.__new__(Ranks))\n"
        "print(json.dumps([got[0], bench.PHASES['init']]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    state, init = json.loads(run.stdout.strip().splitlines()[-1])
    assert state == "state" and 0.2 <= init < 0.35
