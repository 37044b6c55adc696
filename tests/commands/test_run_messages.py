"""``grstream run``: messages that say what is true, and exact betweenness that would take too
long refused before it runs."""
import json

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import bc
from grstream.cli import main
from grstream.errors import UsageError

from ..algorithms.conftest import build, random_edges


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(8)
    src, dst, _ = random_edges(rng, 60, 240)
    store = build(tmp_path, 60, src, dst, num_shards=2)
    store.close()
    return str(store.path)


def test_push_threshold_help_states_what_the_cpu_uses(store_path, capsys):
    # the help said 0.05 for the CPU, which declares 1.0
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert main(["run", "bfs", store_path, "--stats-json", "-", "--quiet"]) == 0
    used = json.loads(capsys.readouterr().out)["runs"][0]["info"]["direction"]["threshold"]
    assert f"(default: the executor's, {float(used)!r} on the CPU" in help_text
    assert "0.05" not in help_text
    try:   # the GPU's, read from the module that declares it, where the GPU path is installed
        import grstream.backends.cuda  # noqa: F401
    except ImportError:
        return
    assert " on the GPU)" in help_text


def test_sssp_without_weights_says_what_is_needed(store_path, capsys):
    # it said "build it with --weighted", which fails on an input without weights
    assert main(["run", "sssp", store_path, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "from an input that has a weight per edge" in err and "bfs gives hop counts" in err


def test_long_exact_bc_is_refused_with_the_k_that_fits(store_path, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bc, "MAX_LANES", 4)          # batches of 4 sources: 15 batches
    monkeypatch.setattr(bc, "EXACT_SECONDS", 1e-9)  # any exact run "takes too long"
    out = tmp_path / "bc.npy"
    assert main(["run", "bc", store_path, "--quiet", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("grstream run: error: exact betweenness would take about ")
    assert "(60 sources; the first 4 took" in err
    assert "--sources K" in err and "--sources all" in err and len(err.splitlines()) == 1
    assert not out.exists()
    with gr.open(store_path) as store:
        with pytest.raises(UsageError, match="exact betweenness would take"):
            bc.betweenness(store)
        want, _ = bc.betweenness(store, k="all")
    # --sources all runs every source whatever the estimate; so does a sample
    assert main(["run", "bc", store_path, "--quiet", "--sources", "all", "-o", str(out)]) == 0
    np.testing.assert_allclose(np.load(out), want)
    assert capsys.readouterr().err.strip().endswith("60 sources (exact: every vertex)")
    assert main(["run", "bc", store_path, "--quiet", "--sources", "10"]) == 0


def test_small_exact_bc_runs_without_flags(store_path, capsys):
    # one batch holds every source of a small graph: nothing to estimate, nothing refused
    assert main(["run", "bc", store_path, "--quiet"]) == 0
    assert capsys.readouterr().err.strip().endswith("60 sources (exact: every vertex)")


def test_check_estimate():
    bc.check_estimate(1.0, 10, 100, limit=10.0)       # 10 s: within
    with pytest.raises(UsageError, match=r"about 2 days \(1,000,000 sources; the first 1 took "
                                         r"0.2 s\).*about 3,000 sources fit in 10 minutes"):
        bc.check_estimate(0.2, 1, 1_000_000, limit=600.0)


def test_without_a_source_the_run_starts_where_it_reaches_something(tmp_path, capsys):
    # vertex 0 has no out-edge: a BFS from it reached 1 vertex in 0 iterations
    store = build(tmp_path, 5, np.array([2, 3, 4]), np.array([3, 4, 1]), num_shards=2)
    store.close()
    out = tmp_path / "lv.npy"
    assert main(["run", "bfs", str(store.path), "-o", str(out), "--quiet"]) == 0
    np.testing.assert_array_equal(np.load(out), [-1, 3, 0, 1, 2])
    assert capsys.readouterr().err.strip().endswith("reached 4")
    with gr.open(store.path) as s:
        np.testing.assert_array_equal(gr.algorithms.bfs.bfs(s)[0], np.load(out))
