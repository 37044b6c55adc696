"""``grstream run``: options an algorithm does not take, and bad numbers, are refused up front."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grstream.cli import main

from ..algorithms.conftest import build, random_edges

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    rng = np.random.default_rng(5)
    src, dst, w = random_edges(rng, 30, 120, weighted=True)
    store = build(tmp_path_factory.mktemp("opts"), 30, src, dst, w, num_shards=2)
    store.close()
    return str(store.path)


@pytest.mark.parametrize("algo, extra, refused", [
    ("pagerank", ["--source", "3"], "--source"),
    ("cc", ["--sources", "3"], "--sources"),
    ("cc", ["--seed", "1"], "--seed"),
    ("bfs", ["--damping", "0.5"], "--damping"),
    ("sssp", ["--tol", "1e-3"], "--tol"),
    ("bfs", ["--sources", "2", "--seed", "4"], "--sources, --seed"),
    ("bc", ["--sources", "2", "--max-iter", "3"], "--max-iter"),  # it would cut the BFS short
])
def test_options_an_algorithm_does_not_take_are_refused(store_path, tmp_path, capsys, algo, extra,
                                                         refused):
    out = tmp_path / "out.npy"
    assert main(["run", algo, store_path, "--quiet", "-o", str(out)] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"{algo} does not take {refused} (its options: " in err
    assert not out.exists()


def test_bc_seed_needs_sources(store_path, capsys):
    assert main(["run", "bc", store_path, "--quiet", "--seed", "3"]) == 2
    assert "--seed picks the sample that --sources asks for" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value, message", [
    ("--damping", "7", "must be between 0 and 1, not 7.0"),
    ("--damping", "-1", "must be between 0 and 1, not -1.0"),
    ("--damping", "nan", "must be a number, not NaN"),
    ("--damping", "x", "must be a number, not 'x'"),
    # the message states the rule it checks: 0 is refused as -1 is (it said ">= 0")
    ("--tol", "-1", "must be a positive finite number, not -1.0"),
    ("--tol", "0", "must be a positive finite number, not 0.0"),
    ("--tol", "inf", "must be a positive finite number, not inf"),
    ("--tol", "nan", "must be a number, not NaN"),
    ("--max-iter", "2.5", "must be an integer, not '2.5'"),
    ("--max-iter", "-1", "must be >= 0, not -1"),
    ("--method", "fast", "must be one of 'power', 'delta', not 'fast'"),
])
def test_bad_algorithm_options_are_usage_errors(store_path, capsys, flag, value, message):
    assert main(["run", "pagerank", store_path, "--quiet", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"grstream run: error: {flag} {message}"


@pytest.mark.parametrize("args, message", [
    # it said "k must be at least 1": the flag is --sources
    (["--sources", "0"], "--sources must be 'all' or an integer at least 1, not 0"),
    (["--sources", "31"], "--sources must be at least 1 and at most 30, not 31"),
    (["--sources", "some"], "--sources must be an integer, not 'some'"),
    (["--sources", "2", "--seed", "x"], "--seed must be an integer, not 'x'"),
])
def test_bc_messages_name_the_flags(store_path, capsys, args, message):
    assert main(["run", "bc", store_path, "--quiet"] + args) == 2
    assert capsys.readouterr().err.strip() == f"grstream run: error: {message}"


def test_defaults_of_the_options_an_algorithm_takes(store_path, tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert main(["run", "pagerank", store_path, "--quiet", "-o", str(a)]) == 0
    assert main(["run", "pagerank", store_path, "--quiet", "-o", str(b), "--damping", "0.85",
                 "--tol", "1e-6"]) == 0
    np.testing.assert_array_equal(np.load(a), np.load(b))
    assert main(["run", "bfs", store_path, "--quiet", "-o", str(a)]) == 0
    assert np.load(a)[0] == 0  # --source 0
    assert main(["run", "bc", store_path, "--quiet", "-o", str(a), "--sources", "4"]) == 0
    assert main(["run", "bc", store_path, "--quiet", "-o", str(b), "--sources", "4",
                 "--seed", "0"]) == 0
    np.testing.assert_array_equal(np.load(a), np.load(b))


def test_refused_through_the_installed_entry_point(store_path):
    done = subprocess.run([sys.executable, "-m", "grstream", "run", "pagerank", store_path,
                           "--source", "3"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2
    assert done.stderr.strip() == ("grstream run: error: pagerank does not take --source "
                                   "(its options: --damping, --max-iter, --tol, --method)")
