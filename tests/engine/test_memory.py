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
    # where the host does not say what it has free: the device budget (capped)
    monkeypatch.setattr(memory, "MEMINFO", "/nonexistent/meminfo")
    m = plan_memory(store, NAMES, fp, budget=budget, pinned=True)
    assert m.pinned_budget == budget and m.pinned_bytes <= budget and m.pinned_rule == "device"
    monkeypatch.setattr(memory, "PINNED_CAP", max(regions))
    capped = plan_memory(store, NAMES, fp, budget=budget, pinned=True)
    assert capped.pinned_budget == max(regions) and capped.pinned == () and capped.staging == 1
    # an explicit bound is kept; below one staging buffer it is an error
    big = plan_memory(store, NAMES, fp, budget=budget, pinned_budget=10 ** 9, pinned=True)
    assert set(big.pinned) == set(range(6)) - set(big.resident) and big.staging == 0
    assert big.pinned_rule == "given"
    assert list(big.pinned_offsets.values()) == sorted(big.pinned_offsets.values())
    with pytest.raises(MemoryBudgetError, match="pinned"):
        plan_memory(store, NAMES, fp, budget=budget, pinned_budget=10, pinned=True)


def _meminfo(tmp_path, available_kb):
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       {4 * available_kb} kB\nMemFree:        1000 kB\n"
                    f"MemAvailable:   {available_kb} kB\nBuffers:        10 kB\n")
    return str(path)


def test_host_available_reads_memavailable(tmp_path):
    assert memory.host_available(_meminfo(tmp_path, 123456)) == 123456 * 1024
    bad = tmp_path / "bad"
    bad.write_text("MemTotal: 10 kB\n")
    assert memory.host_available(str(bad)) is None
    assert memory.host_available(str(tmp_path / "missing")) is None
    # the reserve: a quarter of what is available, at least HOST_RESERVE_MIN
    gib = 1 << 30
    assert memory.host_pinned_limit(120 * gib) == 90 * gib
    assert memory.host_pinned_limit(4 * gib) == 2 * gib
    assert memory.host_pinned_limit(gib) == 0


def test_default_pinned_tier_follows_the_host_not_the_device(store, tmp_path, monkeypatch):
    fp = Footprint(static={"state": 1000}, alignment=256)
    regions = plan_memory(store, NAMES, fp).regions
    largest = max(regions)
    budget = 1000 + 2 * largest   # the device holds two slots: every shard streams
    # a host with plenty free: every streamed shard cached, whatever the device budget, and the
    # budget is what the store needs, not what the host has
    monkeypatch.setattr(memory, "MEMINFO", _meminfo(tmp_path, 64 << 20))   # 64 GiB
    host = plan_memory(store, NAMES, fp, budget=budget, pinned=True)
    assert host.pinned_rule == "host" and host.resident == ()
    assert host.pinned == tuple(range(6)) and host.staging == 0
    assert host.pinned_budget == sum(regions) + 3 * largest   # streamed shards + staging wanted
    assert host.pinned_bytes == sum(regions) <= host.pinned_budget
    assert set(host.tiers()["pinned"]) == set(range(6)) and host.to_dict()["tier_shards"] == {
        "resident": 0, "pinned": 6, "store": 0}
    # the device budget's rule cached none of it
    device = plan_memory(store, NAMES, fp, budget=budget, pinned=True, host=None,
                         pinned_budget=budget)
    assert len(device.pinned) < len(host.pinned)
    # a host whose available memory, less the reserve, holds two shards (and a staging buffer)
    avail = memory.HOST_RESERVE_MIN + 4 * largest
    small = plan_memory(store, NAMES, fp, budget=budget, pinned=True, host=avail)
    assert small.pinned_budget == 4 * largest and small.pinned_bytes <= 4 * largest
    assert 0 < len(small.pinned) < 6 and small.staging >= 1
    assert small.tiers()["store"] == [i for i in range(6) if i not in small.pinned]
    # a host with nothing to spare keeps one staging buffer
    none = plan_memory(store, NAMES, fp, budget=budget, pinned=True, host=1 << 20)
    assert none.pinned_budget == largest and none.pinned == () and none.staging == 1
    # an explicit bound wins over the host; the CPU path pins nothing whatever the host has
    given = plan_memory(store, NAMES, fp, budget=budget, pinned=True, pinned_budget=2 * largest)
    assert given.pinned_rule == "given" and given.pinned_bytes <= 2 * largest
    cpu = plan_memory(store, NAMES, fp, budget=budget, pinned=False)
    assert cpu.pinned_budget == 0 and cpu.pinned == () and cpu.tiers()["store"] == list(range(6))


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


def test_stats_count_bytes_per_tier(store, tmp_path, capsys):
    """Per iteration and in the totals: what came from executor memory and what from the store
    (the CPU executor has no pinned tier); --stats-json carries the same."""
    import json

    from grstream.cli import main
    try:
        gr.run(PageRank(), store, memory_budget=1, max_iter=0)
    except MemoryBudgetError as exc:
        low = exc.minimum
    with gr.Session(store, memory_budget=low) as s:
        r = s.run(PageRank(), max_iter=3)
        (prep,) = s._prepared.values()
        model = prep.model
    regions = model.regions
    streamed = [i for i in range(6) if i not in model.resident]
    assert streamed
    for st_ in r.stats:
        assert st_.tier_shards.get("pinned", 0) == 0 and st_.tier_bytes.get("pinned", 0) == 0
        assert st_.tier_bytes["store"] >= sum(regions[i] for i in streamed)
        assert sum(st_.tier_shards.values()) == st_.shards_processed == 6
        assert st_.plan["tiers"]["store"]["bytes"] == st_.tier_bytes["store"]
        # and shard by shard: the resident ones from executor memory, the others from the file
        assert st_.plan["shard_tiers"] == {str(i): "resident" if i in model.resident else "store"
                                           for i in range(6)}
    later = r.stats[-1]
    assert later.tier_bytes == {"resident": sum(regions[i] for i in model.resident), "pinned": 0,
                                "store": sum(regions[i] for i in streamed)}
    assert r.totals()["tier_bytes"]["store"] == sum(s_.tier_bytes["store"] for s_ in r.stats)
    out = tmp_path / "stats.json"
    assert main(["run", "pagerank", str(store.path), "--max-iter", "2", "--memory-budget", str(low),
                 "--stats-json", str(out)]) == 0
    doc = json.loads(out.read_text())["runs"][0]
    assert doc["per_iteration"][-1]["tier_bytes"] == later.tier_bytes
    assert doc["totals"]["tier_bytes"]["store"] == 2 * later.tier_bytes["store"]
    assert doc["info"]["memory"]["tier_shards"] == {"resident": len(model.resident), "pinned": 0,
                                                    "store": len(streamed)}
