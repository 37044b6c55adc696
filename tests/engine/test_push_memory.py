"""Push-only memory models (direction.push_only, Capabilities.push_memory): where every plan of a
run pushes, the budget's resident shards and slots hold the push arrays alone, so more shards stay
resident; a run whose seed is not silent (it must pull) gets a model with the pull arrays first.

The CPU executor runs push plans and the activation of the seed over the same out-edges, so it
stands in for the GPU here with the capability switched on (the GPU runs the same plans in
tests/backends/cuda/test_push_memory.py)."""
from dataclasses import replace

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS, UNREACHED
from grstream.algorithms.cc import ConnectedComponents
from grstream.backends.cpu.executor import CpuExecutor
from grstream.engine.direction import DirectionRule, memory_arrays, push_only
from grstream.engine.capabilities import Capabilities, PushFacts

from ..algorithms.conftest import build


class OtherZero(BFS):
    """Two vertices start at level 0 but only the source is seeded: the other one's messages
    would lower its neighbours, so a run of it cannot push (program/push.py seed_is_silent)."""

    def init(self, v):
        v.level = np.where((v.id == self.source) | (v.id == 5), 0, UNREACHED)
        return v.id == self.source


@pytest.fixture
def offered(monkeypatch):
    real = CpuExecutor.capabilities.__func__

    def caps(cls, setup):
        c = real(cls, setup)
        return replace(c, push=replace(c.push, memory=True))
    monkeypatch.setattr(CpuExecutor, "capabilities", classmethod(caps))


@pytest.fixture
def graph(tmp_path):
    rng = np.random.default_rng(5)
    n = 400
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    return n, src, dst, build(tmp_path, n, src, dst, num_shards=8)


def test_push_only_needs_every_plan_to_push():
    gpu = Capabilities("cuda", push=PushFacts(threshold=1.0, memory=True))
    auto = DirectionRule()
    assert push_only(BFS.spec, gpu, auto)
    assert memory_arrays(BFS.spec, "only") == ["out/indptr", "out/dst"]
    assert set(memory_arrays(BFS.spec, "push")) == {"in/indptr", "in/src", "out/indptr", "out/dst"}
    assert not push_only(BFS.spec, gpu, DirectionRule(mode="pull"))
    assert not push_only(BFS.spec, gpu, DirectionRule(push_threshold=0.5))   # some plans pull
    assert push_only(BFS.spec, gpu, DirectionRule(mode="push", push_threshold=0.5))
    assert not push_only(BFS.spec, Capabilities("cuda", push=PushFacts(threshold=1.0)), auto)
    assert not push_only(BFS.spec, gpu, auto, lanes=True)


def test_push_only_memory_keeps_more_shards_resident_with_equal_results(graph, offered):
    n, src, dst, store = graph
    ref = gr.run(BFS(source=0), store, direction="pull").values["level"]
    runs = {}
    for offer in (True, False):
        budget = _quarter(store)
        with gr.Session(store, memory_budget=budget) as s:
            if not offer:
                s.cls = _without_push_memory()
            r = s.run(BFS(source=0))
        np.testing.assert_array_equal(r.values["level"], ref)
        assert {st.plan["plan_direction"] for st in r.stats} == {"push"}
        runs[offer] = r
    assert runs[True].info["arrays"] == ["out/indptr", "out/dst"]
    assert "in/src" in runs[False].info["arrays"]
    kept = {k: r.info["memory"]["resident_shards"] for k, r in runs.items()}
    assert kept[True] > kept[False], kept


def test_a_run_that_must_pull_gets_the_pull_arrays(graph, offered):
    n, src, dst, store = graph
    with gr.Session(store, memory_budget=_quarter(store)) as s:
        first = s.run(BFS(source=0))
        assert first.info["arrays"] == ["out/indptr", "out/dst"]
        other = s.run(OtherZero(source=0))
        assert "in/src" in other.info["arrays"]
        assert {st.plan["plan_direction"] for st in other.stats} == {"pull"}
        again = s.run(BFS(source=0))
    expect = gr.run(OtherZero(source=0), store, direction="pull").values["level"]
    np.testing.assert_array_equal(other.values["level"], expect)
    np.testing.assert_array_equal(again.values["level"], first.values["level"])


def test_cc_keeps_the_pull_arrays(graph, offered):
    """CC pushes over both directions: its push arrays are the pull arrays."""
    n, src, dst, store = graph
    r = gr.run(ConnectedComponents(), store, memory_budget=_quarter(store))
    assert set(r.info["arrays"]) == {"in/indptr", "in/src", "out/indptr", "out/dst"}


def _quarter(store):
    """The least budget of BFS with the pull and push arrays (vertex state, scratch and one
    region) plus a quarter of those regions: room for some resident shards, not all."""
    from grstream.engine.memory import plan_memory
    from grstream.errors import MemoryBudgetError
    with pytest.raises(MemoryBudgetError) as err:
        with gr.Session(store, memory_budget=1) as s:
            s.cls = _without_push_memory()
            s.run(BFS(source=0))
    regions = plan_memory(store, memory_arrays(BFS.spec, "push"), CpuExecutor.footprint(
        BFS.spec, False, CpuExecutor.make_setup(store, push=True)), pinned=False).regions
    return err.value.minimum + sum(regions) // 4


def _without_push_memory():
    class Plain(CpuExecutor):
        @classmethod
        def capabilities(cls, setup):
            c = CpuExecutor.capabilities(setup)
            return replace(c, push=replace(c.push, memory=False))
    return Plain
