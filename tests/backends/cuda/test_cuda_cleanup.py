"""PyCUDA objects of closed sessions are destroyed on the thread that owns the context, when the
session closes (tests/backends/cuda/cleanup_check.py, in a process of its own): none is left to
the cyclic collector, which may run on a worker thread where PyCUDA cannot make the context
current and leaves the stream, event or page-locked memory to the process's exit."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.cuda


def test_closed_sessions_leave_no_cuda_object_to_a_worker_thread(gpu, tmp_path):
    out = subprocess.run([sys.executable, "-m", "tests.backends.cuda.cleanup_check", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "could not be cleaned up" not in out.stderr, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["alive"] and not any(report["alive"].values()), report["alive"]
    # the device memory a pass of the scenarios takes it gives back (the first pass compiled).
    # Free memory is the device's, which other processes on the GPU move both ways (pytest -n):
    # a leak can only lower it, so only a fall counts
    _, second, third = report["free"]
    assert second - third <= 2 << 20, report["free"]
