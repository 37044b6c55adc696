"""The memory budget holds on the CPU: a run's peak resident memory is at most the budget plus
the baseline of a process that imported the same libraries (the interpreter, numpy, scipy,
h5py, grstream, and the program's compiled kernels where numba is installed) plus 10% of the
budget (README "Memory budget")."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream.io.generate import rmat

from ...algorithms.conftest import minimum_budget

ROOT = Path(__file__).resolve().parents[3]

#: run in a fresh process: the baseline (peak resident bytes after the imports), then the run
SCRIPT = """
import sys
import h5py, numpy, scipy.sparse
import grstream as gr
from grstream.backends.cpu import CpuExecutor

def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

name, path, budget, source = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
program = {"pagerank": gr.algorithms.PageRank(), "cc": gr.algorithms.ConnectedComponents(),
           "bfs": gr.algorithms.BFS(source=source)}[name]
# the compiled kernels of the program (numba and its code, where installed) are libraries too:
# a run on a tiny graph loads them before the baseline
import os, tempfile
tiny = os.path.join(tempfile.mkdtemp(), "tiny.h5")
gr.build_shards(numpy.array([[0, 1], [1, 2], [2, 0]]), tiny, progress=False)
gr.run(type(program)(), tiny)
base = peak()
result = gr.run(program, path, memory_budget=budget)
print(base, peak(), result.info["memory"]["residency"], result.iterations)
"""

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="peak resident memory read from /proc (Linux)")


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    # RMAT-17 (2M edges, a 17 MiB store) in 8 shards: big enough that the passes' temporaries
    # matter against the budget, a few seconds to build and run
    src, dst = rmat(17, edge_factor=16, seed=5)
    path = tmp_path_factory.mktemp("rss") / "rmat17.h5"
    gr.build_shards(np.stack([src, dst], axis=1), path, num_shards=8, progress=False)
    return path


@pytest.mark.parametrize("name", ["pagerank", "cc", "bfs"])
def test_peak_memory_within_the_budget(store_path, name):
    with gr.open(store_path) as store:
        source = int(np.argmax(store.out_degree()))
        program = {"pagerank": gr.algorithms.PageRank(), "cc": gr.algorithms.ConnectedComponents(),
                   "bfs": gr.algorithms.BFS(source=source)}[name]
        # room for a quarter of the shards besides the minimum: some resident, the rest streamed
        budget = minimum_budget(program, store) + store.nbytes() // 4
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, str(store_path), str(budget),
                          str(source)], capture_output=True, text=True, env=env, check=True)
    base, peak, residency, iterations = out.stdout.split()
    assert residency in ("partial", "streaming") and int(iterations) > 1   # shards streamed
    used = int(peak) - int(base)
    assert used <= 1.1 * budget, f"{name}: {used:,} B above the baseline, budget {budget:,} B"
