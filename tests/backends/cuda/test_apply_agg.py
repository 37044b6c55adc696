"""The dense apply that reduces the aggregates as it applies (``apply_agg``): which plans take it
(a stand-in device, CI), its grid, and on a GPU its results against the CPU's and against the
separate pass over the published state it replaces."""
from types import SimpleNamespace

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import eigenvector, kcore, pagerank
from grstream.backends.cuda.device import resident_blocks
from grstream.backends.cuda.phases import VertexPhases


def test_resident_blocks_follow_the_register_file():
    # 256-thread blocks on an H100-like device (132 SMs, 64Ki registers, 2048 threads an SM)
    assert resident_blocks(32, 132) == 8 * 132          # the thread limit
    assert resident_blocks(33, 132) == 6 * 132          # 40 registers a thread: 51 warps
    assert resident_blocks(50, 132) == 4 * 132          # 56 a thread: 36 warps
    assert resident_blocks(255, 132) == 132             # at least one block an SM
    assert resident_blocks(16, 2, threads_per_sm=1024) == 2 * 4
    assert resident_blocks(16, 10, blocks_per_sm=3) == 30


class StandInDevice:
    """Records the launches of the dense apply and of the aggregates' pass."""

    def __init__(self, n, fused=True):
        self.n, self.rb_dev, self.calls = n, 0, []
        self.fn = {"apply": None, **({"apply_agg": None} if fused else {})}

    def launch(self, phase, count, *args):
        self.calls.append((phase, count))

    def apply_aggregates(self, lo, count, acc):
        self.calls.append(("apply_agg", lo, count))

    def reduce_aggregates(self):
        self.calls.append(("aggregates",))


class StandIn(VertexPhases):
    def __init__(self, n, span=None, lanes=None, fused=True):
        self.dev = StandInDevice(n, fused)
        self.span, self.setup_span, self.lane_runs = span or (0, n), span, lanes

    def _acc_at(self, v):
        return 1000 + 8 * v


def dense(reduce=("err",)):
    return SimpleNamespace(reduce=reduce)


def test_a_dense_apply_reduces_the_aggregates_once():
    ex = StandIn(100)
    plan = dense()
    ex._apply_all(plan)
    ex.reduce(plan)
    assert ex.dev.calls == [("apply_agg", 0, 100)]
    # a plan without an apply (the seeding plan) takes the pass over the published state
    seed = dense()
    ex.dev.calls.clear()
    ex.reduce(seed)
    assert ex.dev.calls == [("aggregates",)]
    # a dense plan after one whose reduce never ran is not taken for it
    ex.dev.calls.clear()
    ex._apply_all(plan)
    other = dense()
    ex._apply_all(other)
    ex.reduce(other)
    ex.reduce(plan)
    assert ex.dev.calls == [("apply_agg", 0, 100), ("apply_agg", 0, 100), ("aggregates",)]


@pytest.mark.parametrize("case", ["no aggregates", "rank span", "lanes", "kernels without it"])
def test_other_dense_applies_leave_the_aggregates_to_their_pass(case):
    ex = StandIn(100, span=(20, 60) if case == "rank span" else None, lanes=object() if case == "lanes" else None,
                 fused=case != "kernels without it")
    plan = dense(() if case == "no aggregates" else ("err",))
    ex._apply_all(plan)
    ex.reduce(plan)
    lo, hi = ex.span
    assert ex.dev.calls == [("apply", hi - lo)] + ([] if case == "no aggregates" else [("aggregates",)])


# ---------------------------------------------------------------- on a GPU
PROGRAMS = {"pagerank": (pagerank.PageRank, 1e-12), "kcore": (kcore.CoreNumber, 0),
            "eigenvector": (eigenvector.EigenvectorCentrality, 1e-12)}


@pytest.mark.cuda
@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_aggregates_equal_the_cpu_and_the_separate_pass(gpu, tmp_path, rng, monkeypatch, name, compress):
    from grstream.backends.cuda.device import DeviceState
    from .test_cuda_backend import build, executor_of, gpu_minimum, skewed_graph
    cls, rtol = PROGRAMS[name]
    n, src, dst, _ = skewed_graph(rng, n=2500, m=25000, hub_edges=2000)
    store = build(tmp_path, n, src, dst, num_shards=5, compress=compress)
    fused = []
    real = DeviceState.apply_aggregates
    monkeypatch.setattr(DeviceState, "apply_aggregates",
                        lambda self, *a: (fused.append(a), real(self, *a))[1])
    cpu = gr.run(cls(), store, max_iter=12)
    for budget in (None, gpu_minimum(cls(), store)):
        fused.clear()
        with gr.Session(store, device="cuda", memory_budget=budget) as session:
            res = session.run(cls(), max_iter=12)
            dev = executor_of(session, cls).dev
            last = dict(dev.aggregates)   # the last plan's, from its fused apply
            dev.reduce_aggregates()       # the pass over the published state it replaced
            dev.readback()
            again = dict(dev.aggregates)
        assert len(fused) == res.iterations and all(a[:2] == (0, n) for a in fused)
        assert res.iterations == cpu.iterations
        for a in cls.spec.aggregates:
            np.testing.assert_allclose(last[a], again[a], rtol=rtol, err_msg=a)
            np.testing.assert_allclose(res.stats[-1].aggregates[a], cpu.stats[-1].aggregates[a], rtol=1e-9,
                                       err_msg=a)
        for f, values in cpu.values.items():
            if values.dtype.kind == "f":
                np.testing.assert_allclose(res.values[f], values, rtol=1e-9, atol=1e-15, err_msg=f)
            else:
                np.testing.assert_array_equal(res.values[f], values, err_msg=f)
