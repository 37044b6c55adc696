"""The library stays quiet and leaves the caller's environment alone (issue 10, item 5)."""
import logging
import os
import subprocess
import sys
from importlib.resources import files

import numpy as np

import grstream as gr
from grstream.algorithms import BFS


def test_build_and_run_print_nothing_by_default(tmp_path, capfd, caplog):
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    with caplog.at_level(logging.INFO, logger="grstream.partition"):
        path = gr.build_shards(edges, tmp_path / "tri.h5", num_shards=2)
    result = gr.run(BFS(source=0), gr.open(path), progress=False)
    assert result.value.tolist() == [0, 1, 2]
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    # the build summary goes to logging instead
    assert any("tri.h5" in r.getMessage() for r in caplog.records
               if r.name == "grstream.partition")


def test_build_progress_true_still_reports_on_stderr(tmp_path, capfd):
    gr.build_shards(np.array([[0, 1]]), tmp_path / "one.h5", progress=True)
    assert "one.h5" in capfd.readouterr().err


def test_plot_keeps_the_callers_matplotlib_backend(tmp_path):
    code = ("import matplotlib; from grstream.engine.plot import plot_stats; "
            "from grstream.engine import IterationStats; "
            f"plot_stats([], {str(tmp_path / 'p.png')!r}); print(matplotlib.get_backend())")
    env = dict(os.environ, MPLBACKEND="svg")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().lower() == "svg"
    assert (tmp_path / "p.png").stat().st_size > 0


def test_package_is_marked_typed():
    assert files("grstream").joinpath("py.typed").is_file()
