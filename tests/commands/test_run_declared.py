"""``grstream run`` derives everything algorithm-specific from the algorithms' declarations:
a new algorithm is its module plus one registration line, each default has one source, and the
command line imports only what it needs."""
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream import algorithms
from grstream.algorithms import ALGORITHMS, declaration
from grstream.algorithms.params import Param, Real, declare
from grstream.cli import main

from ..algorithms.conftest import build, random_edges

ROOT = Path(__file__).resolve().parents[2]


class InDegree(gr.GASProgram):
    """Each vertex's number of in-edges, times ``scale``, in one iteration."""

    vertex = {"deg": "float64"}
    gather_reduce = gr.monoid.sum
    gather_dtype = "float64"
    activate = "all"
    params = {"scale": 1.0}

    def init(self, v):
        v.deg = 0.0

    def gather_map(self, src, dst, edge):
        return self.scale + 0.0 * src.deg

    def apply(self, v, acc):
        v.deg = acc
        return v.deg > 1e300


@declare("indegree", Param("scale", Real(0.0), 1.0, "multiply every count by this, >= 0"),
         summary=lambda store, values, results: f"largest {values.max():g}")
def indegree(store, scale, **run_options):
    """In-degree of every vertex, scaled."""
    result = gr.run(InDegree(scale=scale), store, max_iter=1, **run_options)
    return result.values["deg"], result


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(4)
    src, dst, w = random_edges(rng, 40, 160, weighted=True)
    store = build(tmp_path, 40, src, dst, w, num_shards=3)
    store.close()
    return str(store.path)


def test_a_new_algorithm_is_one_registration_line(monkeypatch, store_path, tmp_path, capsys):
    monkeypatch.setitem(ALGORITHMS, "indegree", indegree)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "one of: " + ", ".join(ALGORITHMS) in help_text and ", indegree" in help_text
    assert "--scale X indegree: multiply every count by this, >= 0 (default: 1.0)" in help_text
    out = tmp_path / "deg.npy"
    assert main(["run", "indegree", store_path, "--scale", "2", "-o", str(out), "--quiet"]) == 0
    with gr.open(store_path) as store:
        np.testing.assert_array_equal(np.load(out), 2.0 * store.in_degree())
        assert capsys.readouterr().err.strip().endswith(f"largest {2 * store.in_degree().max():g}")
    # its options are refused by the others, the others' by it, its checks name the flag
    assert main(["run", "bfs", store_path, "--scale", "2", "--quiet"]) == 2
    assert "bfs does not take --scale (its options: --source, --max-iter)" in capsys.readouterr().err
    assert main(["run", "indegree", store_path, "--max-iter", "2", "--quiet"]) == 2
    assert "indegree does not take --max-iter (its options: --scale)" in capsys.readouterr().err
    assert main(["run", "indegree", store_path, "--scale", "-1", "--quiet"]) == 2
    assert "--scale must be a finite number and >= 0, not -1.0" in capsys.readouterr().err
    # and from Python, the declaration gives the signature and the checks
    assert str(inspect.signature(indegree)) == "(store: 'ShardStore', scale: float = 1.0, **run_options: Any)"
    with pytest.raises(gr.errors.UsageError, match="scale must be a number, not 'x'"):
        indegree(store_path, scale="x")


def _help_text():
    done = subprocess.run([sys.executable, "-m", "grstream", "run", "--help"], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


def test_each_default_has_one_source():
    """The help, the function signatures and the declarations agree on every default."""
    help_text = _help_text()
    checked = 0
    for name in ALGORITHMS:
        algo = declaration(name)
        sig = inspect.signature(algo.entry)
        assert list(sig.parameters)[1:-1] == [p.name for p in algo.params]
        for p in algo.params:
            assert sig.parameters[p.name].default == p.default, (name, p.name)
            if p.flag:
                entry = f"{name}: " if name in help_text else ""
                assert f"(default: {p.default_text()})" in help_text, (name, p.name)
                assert p.flag in help_text and entry
                checked += 1
    assert checked >= 9
    # the numbers the issue named, in every place
    pr = declaration("pagerank")
    assert (pr.param("damping").default, pr.param("tol").default, pr.param("max_iter").default) \
        == (0.85, 1e-6, 100)
    assert "pagerank: probability of following an edge (NetworkX's alpha), in [0, 1] (default: 0.85)" \
        in help_text
    assert algorithms.PageRank.params == {"damping": 0.85, "tol": 1e-6}
    assert algorithms.pagerank_delta.DeltaPageRank.params["damping"] == 0.85
    assert "(default: 100)" in help_text and "(default: 1e-06)" in help_text


def test_run_command_has_no_per_algorithm_code():
    source = (ROOT / "grstream" / "commands" / "run.py").read_text()
    for name in ALGORITHMS:
        assert f'"{name}"' not in source, name
    for word in ("TAKES", "SPECIFIC", "from_args", "default_source", "damping", "max_iter"):
        assert word not in source, word


def test_algorithms_read_no_namespace():
    for path in (ROOT / "grstream" / "algorithms").glob("*.py"):
        text = path.read_text()
        assert "from_args" not in text and "Namespace" not in text, path.name
        assert not re.search(r"\bargs\.\w", text), path.name


@pytest.mark.parametrize("argv", [
    ["run", "bfs", "--source", "3", "{store}"],
    ["run", "bfs", "{store}", "--source", "3"],
    ["run", "--source", "3", "bfs", "{store}"],
    ["run", "--quiet", "bfs", "--source=3", "{store}", "-o", "{out}"],
    ["run", "bfs", "-o", "{out}", "{store}", "--source", "3"],
    ["run", "--source", "3", "--quiet", "bfs", "{store}"],
])
def test_options_anywhere(store_path, tmp_path, capsys, argv):
    # "grstream run bfs --source 3 s.h5" said "unrecognized arguments: s.h5"
    out = tmp_path / "lv.npy"
    argv = [a.format(store=store_path, out=out) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(out)]
    assert main(argv + ["--quiet"] if "--quiet" not in argv else argv) == 0
    with gr.open(store_path) as store:
        np.testing.assert_array_equal(np.load(out), gr.algorithms.bfs.bfs(store, 3)[0])


def test_options_anywhere_for_every_algorithm(store_path, tmp_path):
    out = tmp_path / "pr.npy"
    assert main(["run", "pagerank", "--damping", "0.5", store_path, "--max-iter", "7", "-o",
                 str(out), "--quiet"]) == 0
    with gr.open(store_path) as store:
        want, _ = gr.algorithms.pagerank.pagerank(store, damping=0.5, max_iter=7)
    np.testing.assert_array_equal(np.load(out), want)


HEAVY = ("numpy", "h5py", "scipy", "matplotlib", "tqdm")


def _imported(code):
    probe = (code + "\nimport sys, json\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_cli_and_help_pull_no_heavy_module():
    assert _imported("import grstream.cli") == set()
    assert _imported("import grstream") == set()
    assert _imported("from grstream.cli import main\n"
                     "try:\n    main(['--help'])\nexcept SystemExit:\n    pass") == set()
    # the run command's help reads the algorithm declarations (numpy) and the thresholds the
    # executors declare (scipy on the CPU); no store or plotting library
    assert {m.split(".")[0] for m in _imported(
        "from grstream.cli import main\n"
        "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass")} <= {"numpy", "scipy"}


def test_run_imports_the_engine_before_its_seconds_start(store_path):
    # the run's seconds (--stats-json) start as the store opens: the CPU executor's modules
    # are loaded by then, as start-up
    probe = ("import sys\nfrom grstream import cli, store\nopen_store = store.open\n"
             "def opened(*a, **k):\n"
             "    print('loaded' if 'grstream.backends.cpu.executor' in sys.modules else 'lazy')\n"
             "    return open_store(*a, **k)\n"
             f"store.open = opened\ncli.main(['run', 'bfs', {store_path!r}, '--quiet'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["loaded"]


def test_lazy_package_keeps_its_names():
    from grstream.algorithms import BFS, betweenness, bfs_predecessors  # noqa: F401
    assert gr.GASProgram is gr.program.GASProgram and gr.monoid.sum is not None
    assert set(algorithms.__all__) <= set(dir(algorithms))
    with pytest.raises(AttributeError):
        algorithms.nosuch
