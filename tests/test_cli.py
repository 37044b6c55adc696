"""The ``grstream`` entry point: exit statuses, SIGTERM, the help text."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream.cli import build_parser, main
from grstream import errors
from grstream.errors import EXIT_CODES

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_exit_status_and_the_size_units(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {' '.join(meaning.split())}" in out
    assert "K = KB = KiB = 1024" in out


def test_readme_table_matches_the_exit_codes():
    readme = (ROOT / "README.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in readme


def test_sigterm_during_bc_removes_its_temporary_store(tmp_path):
    # parallel edges make bc copy the graph to a temporary store beside it; exact bc over 3000
    # sources runs long enough to be stopped in the middle
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 3000, 20000), rng.integers(0, 3000, 20000)
    store = gr.build_shards(np.stack([np.r_[src, src[:50]], np.r_[dst, dst[:50]]], axis=1),
                            tmp_path / "g.h5", num_shards=2, progress=False)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-m", "grstream", "run", "bc", str(store), "--quiet"],
                             env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not list(tmp_path.glob("grstream-bc-*")) and time.time() < deadline:
        assert child.poll() is None, child.stderr.read()
        time.sleep(0.05)
    assert list(tmp_path.glob("grstream-bc-*")), "bc never made its temporary store"
    time.sleep(1.0)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 143, err
    assert err.strip().splitlines()[-1] == "grstream run: terminated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.h5"]


def test_sigterm_handler_is_restored_after_main(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    np.save(tmp_path / "e.npy", np.array([[0, 1]]))
    assert main(["shard", str(tmp_path / "e.npy"), "-o", str(tmp_path / "e.h5"), "--quiet"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("error, status", [
    (errors.UsageError("bad option"), 2), (errors.InputFormatError("bad line", "e.txt", 3), 2),
    (errors.ProgramError("bad program"), 2), (errors.MemoryBudgetError("too small"), 2),
    (errors.StoreNotFoundError("no such store file", path="g.h5"), 2),
    (errors.ChecksumError("checksum mismatch", path="g.h5", shard=1, dataset="in/src"), 3),
    (errors.FormatVersionError("version 9", path="g.h5"), 3),
    (errors.ShardStoreError("truncated", path="g.h5"), 3),
    (errors.OutputError("cannot write g.npy: no space left on device"), 1),
    (errors.DeviceError("no GPU"), 1), (OSError(5, "Input/output error"), 1), (MemoryError(), 1),
    (KeyboardInterrupt(), 130),
])
def test_each_error_class_has_its_exit_status(monkeypatch, capsys, error, status):
    from grstream.commands import info

    def fail(args):
        raise error

    monkeypatch.setattr(info, "main", fail)
    assert main(["info", "g.h5"]) == status
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("grstream info: ")
    assert status in EXIT_CODES


def test_multi_line_system_errors_print_their_first_line(monkeypatch, capsys):
    from grstream.commands import info

    def fail(args):
        raise OSError(5, "Can't read data (file read failed: time = Mon\n, filename = 'g.h5')")

    monkeypatch.setattr(info, "main", fail)
    assert main(["info", "g.h5"]) == 1
    assert capsys.readouterr().err == \
        "grstream info: error: [Errno 5] Can't read data (file read failed: time = Mon\n"


def test_a_budget_too_small_for_the_graph_is_usage_and_running_out_of_memory_is_system(
        tmp_path, monkeypatch, capsys):
    np.save(tmp_path / "e.npy", np.stack([np.arange(200), np.arange(1, 201)], axis=1))
    store = tmp_path / "e.h5"
    assert main(["shard", str(tmp_path / "e.npy"), "-o", str(store), "--quiet"]) == 0
    capsys.readouterr()
    # found before any work, the user's input: 2, as the table's row 2 says
    assert main(["run", "bfs", str(store), "--memory-budget", "1K", "--quiet"]) == 2
    assert "below the minimum" in capsys.readouterr().err
    assert main(["shard", str(tmp_path / "e.npy"), "-o", str(tmp_path / "f.h5"), "--quiet",
                 "--memory-limit", "64"]) == 2
    assert "memory limit" in capsys.readouterr().err
    assert "memory budget or limit too small" in EXIT_CODES[2]
    # the machine running out during the work: 1
    def exhausted(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(gr.Session, "run", exhausted)
    assert main(["run", "bfs", str(store), "--quiet"]) == 1
    assert "ran out of memory while working" in EXIT_CODES[1]
