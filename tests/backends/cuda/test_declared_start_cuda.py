"""A declared start made on the GPU (fill kernels, no host array, no upload): every run equal to
the CPU's and to the same program started by a host ``init``; skipped without a GPU."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.predecessors import BFSTree
from grstream.algorithms.sssp import SSSP
from grstream.backends.cuda.device import DeviceState

from ...algorithms.conftest import build, random_edges
from ...engine.test_declared_start import Loud, Pair, _twin
from .test_cuda_backend import gpu_minimum

pytestmark = pytest.mark.cuda

CASES = [(BFS, {"source": 4}), (SSSP, {"source": 9}), (BFSTree, {"source": 0}),
         (Pair, {"a": 3, "b": 70}), (Pair, {"a": 5, "b": 5}), (Loud, {"source": 2})]


@pytest.fixture
def store(tmp_path):
    src, dst, w = random_edges(np.random.default_rng(11), 300, 1500, weighted=True)
    return build(tmp_path, 300, src, dst, w, num_shards=6)


@pytest.mark.parametrize("budget", ["all", "minimum"])
@pytest.mark.parametrize("cls, params", CASES, ids=lambda c: getattr(c, "__name__", None) or "-".join(f"{k}{v}" for k, v in c.items()))
def test_declared_start_on_the_gpu(gpu, store, cls, params, budget, monkeypatch):
    """In GPU memory and streamed at the minimum budget: values equal the CPU's and the
    host-init twin's on the GPU (iterations and changed sets too, where the program is not
    asynchronous: the GPU may push those Gauss-Seidel); the declared run uploads no state."""
    kw = {} if budget == "all" else {"memory_budget": gpu_minimum(cls(**params), store)}
    cpu = gr.run(cls(**params), store)
    host = gr.run(_twin(cls)(**params), store, device="cuda", **kw)
    real = DeviceState.load_state
    monkeypatch.setattr(DeviceState, "load_state", lambda *a, **k: pytest.fail("state uploaded"))
    got = gr.run(cls(**params), store, device="cuda", **kw)
    monkeypatch.setattr(DeviceState, "load_state", real)
    for f in cpu.values:
        np.testing.assert_array_equal(got.values[f], cpu.values[f])
        np.testing.assert_array_equal(host.values[f], cpu.values[f])
    if not cls.spec.asynchronous:
        assert got.iterations == cpu.iterations == host.iterations
        assert [s.changed_vertices for s in got.stats] == [s.changed_vertices for s in cpu.stats] \
            == [s.changed_vertices for s in host.stats]


def test_filled_state_before_any_iteration(gpu, store):
    """The state as the fill kernels leave it (no iteration): every width's bits, the seeds'
    entries, a field the seeds leave at its initial value; runs after one another reuse the
    executor and fill again over the last run's values."""
    with gr.Session(store, device="cuda") as s:
        for a, b in ((3, 70), (70, 70), (0, 299)):
            got = s.run(Pair(a=a, b=b), max_iter=0).values
            want = gr.run(Pair(a=a, b=b), store, max_iter=0).values
            for f in want:
                assert got[f].dtype == want[f].dtype
                np.testing.assert_array_equal(got[f], want[f])
            s.run(Pair(a=a, b=b))   # (leaves other values in the arrays)


def test_lanes_of_a_declared_program_on_the_gpu(gpu, store):
    """Lanes start through the host (the declaration's init, one seed per lane)."""
    with gr.Session(store, device="cuda") as s:
        lanes = s.run_lanes([BFS(source=k) for k in (0, 7, 33)])
    for k, r in zip((0, 7, 33), lanes):
        np.testing.assert_array_equal(r.values["level"], gr.run(BFS(source=k), store).values["level"])
