"""The memory model: how budgets are spent, the pinned bound, and executors staying inside it."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank
from grstream.engine import memory
from grstream.engine.memory import Footprint, Ledger, plan_memory
from grstream.engine.schedule import needed_arrays
from grstream.errors import MemoryBudgetError

from ..algorithms.conftest import build, random_edges

NAMES = needed_arrays(BFS.spec)


@pytest.fixture
def store(tmp_path):
    src, dst, _ = random_edges(np.random.default_rng(1), 200, 1500)
    return build(tmp_path, 200, src, dst, num_shards=6)


def test_unbounded_and_ample_budgets_keep_everything_resident(store):
    fp = Footprint(static={"state": 1000}, scratch={"tmp": 500}, alignment=64)
    m = plan_memory(store, NAMES, fp, pinned=False)
    assert m.in_memory and m.slots == 0 and m.device_budget is None and m.pinned_bytes == 0
    # a GPU's first load of resident shards still reads through pinned staging buffers
    gpu = plan_memory(store, NAMES, fp, pinned=True)
    assert gpu.in_memory and gpu.staging == 3 and gpu.pinned_bytes == 3 * max(gpu.regions)
    exact = plan_memory(store, NAMES, fp, budget=1500 + sum(m.regions))
    assert exact.in_memory and exact.device_bytes == 1500 + sum(m.regions)


def test_budget_order_static_scratch_slots_then_resident(store):
    fp = Footprint(static={"state": 1000}, scratch={"tmp": 500}, alignment=64)
    regions = plan_memory(store, NAMES, fp).regions
    largest = max(regions)
    with pytest.raises(MemoryBudgetError, match="minimum") as err:
        plan_memory(store, NAMES, fp, budget=1500 + largest - 1)
    assert err.value.minimum == 1500 + largest
    one = plan_memory(store, NAMES, fp, budget=1500 + largest)
    assert one.slots == 1 and one.resident == ()
    some = plan_memory(store, NAMES, fp, budget=1500 + 2 * largest + regions[0])
    assert some.slots == 2 and some.resident == (0,)
    assert some.device_bytes <= some.device_budget


def test_pinned_bound_default_and_explicit(store, monkeypatch):
    fp = Footprint(static={"state": 1000}, alignment=256)
    regions = plan_memory(store, NAMES, fp).regions
    budget = 1000 + 2 * max(regions)
    # default: the device budget (capped), never "half of the host"
    m = plan_memory(store, NAMES, fp, budget=budget, pinned=True)
    assert m.pinned_budget == budget and m.pinned_bytes <= budget
    monkeypatch.setattr(memory, "PINNED_CAP", max(regions))
    capped = plan_memory(store, NAMES, fp, budget=budget, pinned=True)
    assert capped.pinned_budget == max(regions) and capped.pinned == () and capped.staging == 1
    # an explicit bound is kept; below one staging buffer it is an error
    big = plan_memory(store, NAMES, fp, budget=budget, pinned_budget=10 ** 9, pinned=True)
    assert set(big.pinned) == set(range(6)) - set(big.resident) and big.staging == 0
    assert list(big.pinned_offsets.values()) == sorted(big.pinned_offsets.values())
    with pytest.raises(MemoryBudgetError, match="pinned"):
        plan_memory(store, NAMES, fp, budget=budget, pinned_budget=10, pinned=True)


def test_ledger_refuses_to_exceed_the_model(store):
    m = plan_memory(store, NAMES, Footprint(static={"state": 100}, scratch={"t": 50}))
    ledger = Ledger(m)
    ledger.take("device", "state", 100)
    ledger.take("scratch", "t", 50)
    with pytest.raises(MemoryBudgetError):
        ledger.take("scratch", "more", 1)
    ledger.give("scratch", "t", 50)
    ledger.take("scratch", "more", 1)
    assert ledger.peak["scratch"] == 50


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 60), m=st.integers(0, 200), shards=st.integers(1, 5),
       extra=st.integers(0, 3000), seed=st.integers(0, 3))
def test_cpu_executor_stays_inside_the_plan(tmp_path_factory, n, m, shards, extra, seed):
    src, dst, _ = random_edges(np.random.default_rng(seed), n, m)
    store = build(tmp_path_factory.mktemp("mem"), n, src, dst, num_shards=shards)
    for program in (BFS(source=0), PageRank()):
        try:
            gr.run(program, store, memory_budget=1, max_iter=0)
        except MemoryBudgetError as exc:
            low = exc.minimum
        with gr.Session(store, memory_budget=low + extra) as s:
            r = s.run(program)
            (prep,) = s._prepared.values()
            model, ledger = prep.model, prep.ledger
            assert r.info["memory"]["device_bytes"] == model.device_bytes <= low + extra
            # every allocation went through the ledger, and the ledger never passed the model
            assert ledger.peak["device"] + ledger.peak["scratch"] <= model.device_bytes
            assert ledger.held["device"] >= model.static_bytes
            assert all(s.plan["bytes_device"] == model.device_bytes for s in r.stats)
        np.testing.assert_array_equal(r.value, gr.run(program, store).value)


def test_vertex_state_is_staged_only_from_what_shards_leave(store):
    regions = plan_memory(store, NAMES, Footprint(static={"state": 1000}, alignment=256)).regions
    state = 4 * max(regions)
    fp = Footprint(static={"state": 1000}, alignment=256, host_state=state)
    budget = 1000 + 2 * max(regions)
    # ample pinned bound: shards cached first, then the state; the total stays inside the bound
    big = plan_memory(store, NAMES, fp, budget=budget, pinned_budget=10 ** 9, pinned=True)
    assert big.state_pinned == state and big.pinned_bytes <= 10 ** 9
    assert set(big.pinned) == set(range(6)) - set(big.resident)
    # a bound that holds the shards (and the staging buffer they need until cached) but not the
    # state: the state stays pageable
    bound = big.pinned_cache_bytes + 3 * max(regions)   # the 3 staging buffers of the default
    tight = plan_memory(store, NAMES, fp, budget=budget, pinned=True, pinned_budget=bound)
    assert tight.pinned == big.pinned and tight.state_pinned == 0 and tight.pinned_bytes <= bound
    # the CPU executor pins nothing
    assert plan_memory(store, NAMES, fp, budget=budget, pinned=False).state_pinned == 0
