"""``grstream run``: the CLI over the engine, its outputs and its errors."""
import json

import numpy as np
import pytest

import grstream as gr
from grstream.cli import main

from ..algorithms.conftest import build, random_edges


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(3)
    src, dst, w = random_edges(rng, 80, 400, weighted=True)
    store = build(tmp_path, 80, src, dst, w, num_shards=4)
    store.close()
    return str(store.path)


def test_run_writes_values_stats_and_plot(store_path, tmp_path, capsys):
    out, stats, plot = tmp_path / "lv.npy", tmp_path / "s.json", tmp_path / "p.png"
    rc = main(["run", "bfs", store_path, "--source", "3", "-o", str(out), "--stats-json", str(stats),
               "--plot", str(plot), "--quiet"])
    assert rc == 0
    levels = np.load(out)
    with gr.open(store_path) as store:
        want, _ = gr.algorithms.bfs.bfs(store, 3)
    np.testing.assert_array_equal(levels, want)
    doc = json.loads(stats.read_text())
    run = doc["runs"][0]
    assert doc["algorithm"] == "bfs" and run["iterations"] == len(run["per_iteration"])
    assert {"active_vertices", "shards_skipped", "bytes_read", "time_gather"} <= set(run["per_iteration"][0])
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("bfs: 80 vertices") and "iterations" in line


@pytest.mark.parametrize("algo", ["sssp", "pagerank", "cc", "bc"])
def test_every_algorithm_runs_from_the_cli(store_path, tmp_path, algo):
    out = tmp_path / f"{algo}.npy"
    extra = ["--sources", "5"] if algo == "bc" else []
    assert main(["run", algo, store_path, "-o", str(out), "--quiet"] + extra) == 0
    assert np.load(out).shape == (80,)


def test_stats_json_to_stdout(store_path, capsys):
    assert main(["run", "cc", store_path, "--stats-json", "-", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["info"]["num_shards"] == 4


@pytest.mark.parametrize("args, message", [
    (["run", "nosuch"], "unknown algorithm"),
    (["run", "bfs", "{store}", "--source", "999"], "out of range"),
    (["run", "pagerank", "{store}", "--memory-budget", "10"], "minimum"),
    (["run", "pagerank", "{store}", "--memory-budget", "lots"], "byte size"),
    (["run", "pagerank", "{store}", "--pinned-budget", "lots"], "byte size"),
    (["run", "bfs", "{missing}"], "missing.h5"),
])
def test_errors_are_one_line_and_nonzero(store_path, tmp_path, capsys, args, message):
    args = [a.format(store=store_path, missing=tmp_path / "missing.h5") for a in args]
    assert main(args + ["--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_sssp_without_weights_is_refused(tmp_path, capsys):
    store = build(tmp_path, 3, np.array([0]), np.array([1]))
    store.close()
    assert main(["run", "sssp", str(store.path), "--quiet"]) == 2
    assert "weights" in capsys.readouterr().err


def test_failed_run_writes_no_output(store_path, tmp_path):
    out = tmp_path / "never.npy"
    assert main(["run", "bfs", store_path, "--source", "1000", "-o", str(out), "--quiet"]) == 2
    assert not out.exists()
    assert list(tmp_path.glob("*.tmp-*")) == []


def test_renumbered_store_writes_original_ids(tmp_path):
    src = np.array([10, 20, 30]) * 1000
    dst = np.array([20, 30, 10]) * 1000
    path = tmp_path / "r.h5"
    gr.build_shards(np.stack([src, dst], axis=1), path, renumber=True, progress=False)
    out = tmp_path / "cc.npy"
    assert main(["run", "cc", str(path), "-o", str(out), "--quiet"]) == 0
    rec = np.load(out)
    np.testing.assert_array_equal(rec["id"], [10000, 20000, 30000])
    np.testing.assert_array_equal(rec["value"], [10000, 10000, 10000])
    out = tmp_path / "bfs.npy"
    assert main(["run", "bfs", str(path), "--source", "20000", "-o", str(out), "--quiet"]) == 0
    np.testing.assert_array_equal(np.load(out)["value"], [2, 0, 1])


@pytest.mark.parametrize("algorithm,args", [("bfs", ["--source", "0"]), ("bfs", [])])
def test_source_on_a_graph_without_vertices_says_so(tmp_path, capsys, algorithm, args):
    # it said "out of range ... (0..-1)"
    path = gr.build_shards(np.empty((0, 2), dtype=np.int64), tmp_path / "empty.h5",
                           progress=False)
    assert gr.open(path).num_vertices == 0
    assert main(["run", algorithm, str(path), "--quiet"] + args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the graph has no vertices" in err, err
    assert "0..-1" not in err


def test_bc_says_how_many_sources(store_path, capsys):
    assert main(["run", "bc", store_path, "--sources", "5", "--quiet"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(", 5 sources")
    assert main(["run", "bc", store_path]) == 0
    err = capsys.readouterr().err
    # the exact run is announced, shows a bar over sources, and its summary counts them
    assert "every one of the 80 vertices a source" in err and "bc (exact: every vertex a source)" in err
    assert err.strip().splitlines()[-1].endswith(", 80 sources (exact: every vertex)")


def test_direction_flags_choose_push_or_pull(store_path, tmp_path, capsys):
    from grstream.engine.plot import push_iterations
    got = {}
    for mode in ("pull", "push", "auto"):
        out, plot = tmp_path / f"{mode}.npy", tmp_path / f"{mode}.png"
        extra = ["--push-threshold", "0.5"] if mode == "auto" else []
        assert main(["run", "bfs", store_path, "--source", "3", "--direction", mode, "-o", str(out),
                     "--stats-json", "-", "--plot", str(plot), "--quiet"] + extra) == 0
        doc = json.loads(capsys.readouterr().out)["runs"][0]
        got[mode] = np.load(out)
        dirs = {it["plan"]["plan_direction"] for it in doc["per_iteration"]}
        assert dirs == {"pull" if mode == "pull" else "push"} or mode == "auto"
        assert doc["info"]["direction"]["mode"] == mode
        assert doc["info"]["direction"]["push_ok"] == (mode != "pull")
        if mode == "auto":
            assert doc["info"]["direction"]["push_threshold"] == 0.5
            assert doc["info"]["direction"]["threshold"] == 0.5
        else:
            assert doc["info"]["direction"]["threshold"] == 1.0   # the CPU's measured one
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(got["push"], got["pull"])
    np.testing.assert_array_equal(got["auto"], got["pull"])
    with gr.open(store_path) as store:
        r = gr.run(gr.algorithms.bfs.BFS(source=3), store, direction="push")
    assert push_iterations(r.stats) == [s.iteration for s in r.stats]
    assert main(["run", "bfs", store_path, "--push-threshold", "2", "--quiet"]) == 2
    assert "--push-threshold must be between 0 and 1, not 2.0" in capsys.readouterr().err
