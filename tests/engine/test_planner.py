"""Per-iteration plans as plain data: built and compared without running anything."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.engine import direction as direction_mod
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Feature, Policies, PushFacts
from .contract_helpers import policies_for
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.planner import Planner, shard_facts
from grstream.engine.schedule import needed_arrays

from ..algorithms.conftest import build


@pytest.fixture
def chain(tmp_path):
    """A path 0 -> 1 -> ... -> 39 in 4 shards of 10 vertices."""
    src = np.arange(39)
    return build(tmp_path, 40, src, src + 1, num_shards=4)


def planner(store, program, budget=None, caps=None, pinned_budget=None, **mem):
    spec = type(program).spec
    fp = Footprint(static={"state": 100}, alignment=64)
    model = plan_memory(store, needed_arrays(spec), fp, budget, pinned_budget,
                        pinned=caps is not None and caps.kind == "cuda", **mem)
    caps = caps or Capabilities("cpu")
    return Planner(spec, store, model, caps, policies_for(caps)), model


def test_frontier_plan_touches_only_active_shards_and_loads_once(chain):
    p, _ = planner(chain, BFS(source=0))
    counts = np.array([1, 0, 0, 0])
    seed = p.seed(counts)
    assert seed.seed and seed.phases == ("activate",) and seed.publish == "none"
    assert [u.shards for u in seed.units] == [(0,)] and seed.units[0].transfer == "load"
    assert seed.skipped == (1, 2, 3)
    first = p.plan(1, np.array([1, 0, 0, 0]), all_active=False)
    # BFS: gather over in-edges, apply, activation; shard 0 was loaded by the seeding pass
    assert first.phases == ("gather", "apply", "activate")
    assert first.units[0].transfer == "resident" and first.units[0].balance == ("select",)
    assert first.publish == "copy" and first.publish_fields == ("level",)
    assert not first.dense and first.apply_scope == "unit" and first.frontier
    later = p.plan(2, np.array([1, 1, 0, 0]), all_active=False)
    assert [(u.shards, u.transfer) for u in later.units] == [((0,), "resident"), ((1,), "load")]
    # equal inputs give equal plans; plans print
    again = Planner(p.spec, chain, p.memory, p.caps, p.policies)
    assert again.seed(counts) == seed
    assert "iteration 2" in str(later) and "[1] pull load" in str(later)


def test_dense_plan_swaps_and_applies_once(chain):
    p, model = planner(chain, PageRank())
    assert model.in_memory
    plan = p.plan(1, np.zeros(4, np.int64), all_active=False)   # counts ignored: every vertex
    assert plan.dense and plan.apply_scope == "all" and plan.all_active
    assert plan.phases == ("gather",) and plan.publish == "swap" and plan.hoist
    assert plan.reduce == ("dangling", "err") and not plan.frontier
    assert plan.shards == (0, 1, 2, 3) and all(u.transfer == "load" for u in plan.units)
    # once loaded, consecutive resident shards form one unit swept in full
    second = p.plan(2, np.zeros(4, np.int64), all_active=True)
    assert [(u.shards, u.transfer, u.balance[0]) for u in second.units] == [
        ((0, 1, 2, 3), "resident", "full")]
    assert second.summary()["transfer"] == {"resident": 4}


def test_budget_streams_through_slots_in_turn(chain):
    spec = type(BFS()).spec
    region = max(plan_memory(chain, needed_arrays(spec), Footprint({"state": 100}, alignment=64))
                 .regions)
    p, model = planner(chain, BFS(source=0), budget=100 + 2 * region)
    assert model.slots == 2 and model.resident == ()
    plan = p.plan(1, np.array([1, 1, 1, 0]), all_active=False)
    assert [(u.shards, u.transfer, u.slot, u.source) for u in plan.units] == [
        ((0,), "copy", 0, "store"), ((1,), "copy", 1, "store"), ((2,), "copy", 0, "store")]
    assert plan.bytes_copy == plan.bytes_store == sum(model.regions[:3])
    assert plan.bytes_device == model.device_bytes <= 100 + 2 * region


def test_gpu_caps_group_adjacent_pinned_copies(tmp_path):
    src = np.arange(79)
    chain = build(tmp_path, 80, src, src + 1, num_shards=8)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE))
    region = max(plan_memory(chain, needed_arrays(PageRank.spec), Footprint({"state": 100},
                                                                            alignment=64)).regions)
    # just short of in-memory: slots grow towards slot_bytes, the rest is cached pinned
    p, model = planner(chain, PageRank(), budget=100 + 8 * region - 1, caps=caps,
                       slot_bytes=10_000, pinned_budget=10_000)
    assert model.slots == 2 and model.slot_bytes > region and model.resident
    assert set(model.pinned) == set(range(8)) - set(model.resident)
    assert model.pinned_bytes <= 10_000 and model.device_bytes <= 100 + 8 * region - 1
    streamed = [i for i in range(8) if i not in model.resident]
    first = p.plan(1, np.zeros(8, np.int64), all_active=True)
    copies = [u for u in first.units if u.transfer == "copy"]
    assert [i for u in copies for i in u.shards] == streamed
    assert all(u.source == "pinned" for u in copies)
    assert len(copies) < len(streamed)   # adjacent in the pinned cache and within a slot: one copy
    second = p.plan(2, np.zeros(8, np.int64), all_active=True)
    assert second.bytes_store == 0 and first.bytes_store > 0   # the cache was filled once
    # the executor class's policy chose every shard's strategy: none is left to the executor
    assert {b for u in first.units for b in u.balance} <= {"twc", "merge"}


def test_workers_split_large_resident_runs(tmp_path):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 3000, 80_000), rng.integers(0, 3000, 80_000)
    store = build(tmp_path, 3000, src, dst, num_shards=8)
    p, _ = planner(store, PageRank(), caps=Capabilities("cpu", workers=2))
    p.plan(1, np.zeros(8, np.int64), all_active=True)
    plan = p.plan(2, np.zeros(8, np.int64), all_active=True)
    assert plan.workers == 2 and len(plan.units) == 2
    assert plan.units[0].shards + plan.units[1].shards == tuple(range(8))


def test_plan_is_recorded_in_the_stats(chain, monkeypatch):
    monkeypatch.setattr(direction_mod, "ASYNC_SHARD_EDGES", 0)   # (a small graph)
    r = gr.run(BFS(source=0), chain, direction="pull")
    assert r.stats[0].plan["phases"] == ["gather", "apply", "activate"]
    assert r.stats[-1].plan["transfer"] == {"resident": 1}
    assert sum(s.plan["shards"] + s.plan["skipped"] == 4 for s in r.stats) == len(r.stats)
    # a path's changed set is one vertex: auto pushes every iteration, and says so
    pushed = gr.run(BFS(source=0), chain)
    assert {s.plan["plan_direction"] for s in pushed.stats} == {"push"}
    assert pushed.stats[0].plan["phases"] == ["gather"]
    assert pushed.info["direction"]["push_ok"] and pushed.iterations == r.iterations
    # a BFS wavefront changes each vertex once: it never pushes asynchronously; CC's unseeded
    # start counts every vertex as changed, so its push plans are asynchronous from the first
    assert not any(s.plan["push_async"] for s in pushed.stats)
    cc_pull = gr.run(ConnectedComponents(), chain, direction="pull")
    cc = gr.run(ConnectedComponents(), chain)
    assert all(s.plan["phases"] == ["gather", "apply"] and s.plan["push_async"]
               and s.plan["workers"] == 1 for s in cc.stats)
    np.testing.assert_array_equal(cc.value, cc_pull.value)
    assert cc.iterations < cc_pull.iterations
    sync = gr.run(ConnectedComponents(), chain, backend_options={"push_async": False})
    assert not any(s.plan["push_async"] for s in sync.stats)
    assert sync.iterations == cc_pull.iterations


def test_asynchronous_push_plans(chain, monkeypatch):
    rule = direction_mod.asynchronous_push
    assert rule(True, 100, 100, 4 * 2**14, 4) and not rule(False, 100, 100, 4 * 2**14, 4)
    assert not rule(True, 99, 100, 4 * 2**14, 4)       # every vertex changed once at most
    assert not rule(True, 100, 100, 4 * 2**14 - 1, 4)  # too few edges a shard
    assert rule(True, 0, 100, 4 * 2**14, 4, relaxes=True)   # a message that reads the edge
    assert not rule(True, 0, 100, 4 * 2**14 - 1, 4, relaxes=True)
    monkeypatch.setattr(direction_mod, "ASYNC_SHARD_EDGES", 0)   # (a small graph)
    caps = Capabilities("cpu", workers=2, push=PushFacts(asynchronous=True))
    p, _ = planner(chain, ConnectedComponents(), caps=caps)
    p.seed(np.array([10, 10, 10, 10]), seeded=False)
    first = p.push(1, np.array([10, 10, 10, 10]))
    assert not first.push_async and first.phases == ("gather",)   # nothing counted yet
    p.changed_sum = chain.num_vertices                              # (an unseeded start's)
    plan = p.push(2, np.array([0, 3, 0, 1]))
    # one unit per shard, in order on one thread, each applying at once; the resident shards
    # after the first changed one are visited even without a changed vertex of their own
    assert plan.push_async and plan.workers == 1 and plan.apply_scope == "unit"
    assert plan.phases == ("gather", "apply") and plan.skipped == (0,)
    assert [u.shards for u in plan.units] == [(1,), (2,), (3,)]
    assert "push async" in str(plan) and plan.summary()["push_async"]
    # programs that do not declare asynchronous = True, executors without it: synchronous
    for program, c in ((PageRank(), caps), (ConnectedComponents(), Capabilities("cpu", push=PushFacts()))):
        q, _ = planner(chain, program, caps=c)
        assert not q.push_async


def test_hoisting_follows_the_frontier_where_the_executor_allows(chain):
    fixed, _ = planner(chain, BFS(source=0))
    adaptive, _ = planner(chain, BFS(source=0), caps=Capabilities("cpu", features={Feature.ADAPTIVE_HOIST}))
    one, every = np.array([1, 0, 0, 0]), np.array([10, 10, 10, 10])
    assert fixed.plan(1, one, all_active=False).hoist        # GPU-like: kernels are hoisted
    assert not adaptive.plan(1, one, all_active=False).hoist  # one vertex: per-edge messages
    assert adaptive.plan(2, every, all_active=True).hoist


def test_plans_name_the_tier_each_shard_comes_from(tmp_path):
    """Resident shards: from the store when loaded, then executor memory; cached shards: from
    the store on their first read, then the pinned cache; the others from the store each time."""
    src = np.arange(79)
    chain = build(tmp_path, 80, src, src + 1, num_shards=8)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE))
    fp = Footprint({"state": 100}, alignment=64)
    regions = plan_memory(chain, needed_arrays(PageRank.spec), fp).regions
    region = max(regions)
    # two resident shards, two slots; the pinned cache holds three staging buffers and two shards
    p, model = planner(chain, PageRank(), budget=100 + 4 * region, caps=caps, pinned_budget=5 * region)
    assert len(model.resident) == 2 and len(model.pinned) == 2
    rest = [i for i in range(8) if i not in model.resident and i not in model.pinned]
    size = (lambda shards: sum(regions[i] for i in shards))
    first = p.plan(1, np.zeros(8, np.int64), all_active=True)
    assert first.tiers == (("resident", 0, 0), ("pinned", 0, 0), ("store", 8, size(range(8))))
    assert first.bytes_store == size(range(8))
    second = p.plan(2, np.zeros(8, np.int64), all_active=True)
    assert second.tiers == (("resident", 2, size(model.resident)), ("pinned", 2, size(model.pinned)),
                            ("store", 4, size(rest)))
    assert second.bytes_store == size(rest)
    assert second.summary()["tiers"] == {"resident": {"shards": 2, "bytes": size(model.resident)},
                                         "pinned": {"shards": 2, "bytes": size(model.pinned)},
                                         "store": {"shards": 4, "bytes": size(rest)}}
    assert (f"tiers resident 2 ({size(model.resident)}B), pinned 2 ({size(model.pinned)}B), "
            f"store 4 ({size(rest)}B)") in str(second)
    # the CPU executor has no pinned tier: its streamed shards come from the store every time
    cpu, cpu_model = planner(chain, PageRank(), budget=100 + 4 * region)
    cpu.plan(1, np.zeros(8, np.int64), all_active=True)
    again = dict((t, k) for t, k, _ in cpu.plan(2, np.zeros(8, np.int64), all_active=True).tiers)
    assert again == {"resident": len(cpu_model.resident), "pinned": 0,
                     "store": 8 - len(cpu_model.resident)}


def test_push_units_do_not_ask_the_pull_policy(chain):
    """A push unit walks with the executor's push strategy (balance.as_run), so building it asks
    the pull load-balance policy nothing; pull units still take the policy's choice."""
    asked = []

    def policy(facts, actives, spec, caps):
        asked.append(len(facts))
        return ("twc",) * len(facts)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE_PUSH), push=PushFacts(balance="twc"))
    spec = BFS.spec
    model = plan_memory(chain, needed_arrays(spec), Footprint(static={"state": 100}, alignment=64), None)
    p = Planner(spec, chain, model, caps, Policies(balance=policy))
    plan = p.push(1, np.array([1, 1, 0, 1]))
    assert plan.direction == "push" and plan.units and asked == []
    assert all(u.direction == "push" and u.balance == ("twc",) * len(u.shards) for u in plan.units)
    pulled = p.plan(2, np.array([1, 0, 0, 0]), all_active=False)
    assert asked and all(u.direction == "pull" for u in pulled.units)


def test_cuda_policy_finds_the_kernels_merge_split_once(tmp_path, monkeypatch):
    """The CUDA executor's balance policy looks the generated kernels up once per program, not
    per unit and iteration (the planner asks it for every unit of every plan)."""
    from grstream.backends.cuda import facts
    from grstream.backends.cuda.executor import CudaExecutor
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, num_shards=4)
    looked = []
    real = facts.kernel_source
    monkeypatch.setattr(facts, "kernel_source", lambda st, spec: looked.append(spec) or real(st, spec))
    policy = CudaExecutor.policies(CudaExecutor.make_setup(store)).balance
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(store))
    first = [policy([f], [1], PageRank.spec, caps) for f in shard_facts(store, PageRank.spec)]
    again = [policy([f], [1], PageRank.spec, caps) for f in shard_facts(store, PageRank.spec)]
    assert first == again and len(looked) == 1
