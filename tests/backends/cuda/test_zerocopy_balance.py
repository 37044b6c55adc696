"""The load balance of zero-copied pull units and push units is the plan's (issue 8: the engine
decides): the planner gives them the executor's zero-copy strategy (Capabilities.zerocopy_balance)
unless the user forced one, and push units the push kernels' (PushFacts.balance); the CUDA
executor runs the units it is handed as they are (no GPU)."""
from dataclasses import replace

import numpy as np
import pytest

from grstream.algorithms.bfs import BFS
from grstream.backends.cuda.executor import CudaExecutor
from grstream.backends.cuda.facts import PUSH_BALANCE, ZEROCOPY_BALANCE
from grstream.engine import balance
from grstream.engine.planner import Planner
from grstream.engine.schedule import needed_arrays

from .test_movement import make_store, model_for


def skewed_store(tmp_path):
    return make_store(tmp_path, n=2000)    # about 330 vertices per shard


def skewed_facts(store):
    """ShardFacts on which the CUDA policy takes the merge split for a fully active shard: a hub
    holding most of the shard's in-edges (the degrees are made up; only the policy reads them)."""
    sizes = np.diff(np.asarray(store.intervals))
    return [balance.ShardFacts(i, int(nv), (("in", 300_000),), (("in", 200_000),))
            for i, nv in enumerate(sizes)]


def planned(store, options, transfer):
    spec = BFS.spec
    model = model_for(store, needed_arrays(spec), "partial", "all")   # half streamed, all cached
    setup = CudaExecutor.make_setup(store, {**options, "transfer": transfer})
    caps = CudaExecutor.capabilities(setup)
    planner = Planner(spec, store, model, caps, CudaExecutor.policies(setup), facts=skewed_facts(store))
    counts = np.diff(np.asarray(store.intervals))                      # every vertex active
    return planner.plan(1, counts, all_active=False)


@pytest.mark.parametrize("options, zero_copied, resident", [
    ({}, ZEROCOPY_BALANCE, "merge"),                       # auto: the zero-copy kernels' strategy
    ({"load_balance": "twc"}, "twc", "twc"),
    ({"load_balance": "merge"}, "merge", "merge"),         # forced: kept, zero-copied or not
    ({"deterministic": True}, "twc", "twc"),
])
def test_zero_copied_pull_units_take_the_zero_copy_strategy(tmp_path, options, zero_copied, resident):
    store = skewed_store(tmp_path)
    plan = planned(store, options, "zerocopy")
    by_transfer = {}
    for u in plan.units:
        by_transfer.setdefault(u.transfer, set()).update(u.balance)
    assert set(by_transfer) == {"load", "zerocopy"}       # the first iteration loads the resident
    assert by_transfer["zerocopy"] == {zero_copied}
    # the shards moved otherwise keep the policy's choice
    assert by_transfer["load"] == {resident}
    # the same shards copied keep the policy's choice too: only the zero-copy read changes it
    copied = planned(store, options, "copy")
    assert {b for u in copied.units if u.transfer == "copy" for b in u.balance} == {resident}
    # what the plan prints and summarises is the strategy that runs
    assert f"zerocopy<pinned {zero_copied} " in str(plan)
    zc_shards = sum(len(u.shards) for u in plan.units if u.transfer == "zerocopy")
    assert plan.summary()["balance"].get(zero_copied, 0) >= zc_shards


def test_push_units_take_the_push_kernels_walk(tmp_path):
    """Push units show the strategy the GPU's push kernels walk with (their one walk, TWC),
    whatever the policy would choose for a gather or the user forced; zero-copied or copied."""
    store = skewed_store(tmp_path)
    sizes = np.diff(np.asarray(store.intervals))
    spec = BFS.spec
    model = model_for(store, needed_arrays(spec, push=True), "partial", "all")
    for options in ({}, {"load_balance": "merge"}):
        for transfer in ("zerocopy", "copy"):
            setup = CudaExecutor.make_setup(store, {**options, "transfer": transfer})
            caps = CudaExecutor.capabilities(setup)
            planner = Planner(spec, store, model, caps, CudaExecutor.policies(setup), facts=skewed_facts(store))
            pull = planner.plan(1, sizes, all_active=False)
            assert "merge" in {b for u in pull.units for b in u.balance}   # the policy's pick
            # a light wavefront (mean push degree 1): the plain walk
            plan = planner.push(2, sizes, edges=int(sizes.sum()))
            assert plan.direction == "push" and plan.units
            assert {b for u in plan.units for b in u.balance} == {PUSH_BALANCE}
            assert transfer in {u.transfer for u in plan.units}
            # senders of hub rows (the walk unknown, or mean degree >= push_hub_edges / 64): the
            # same walk with the hub path, shown as "hubs"
            for edges in (-1, int(sizes.sum()) * caps.push.hub_edges):
                hub = planner.push(2, sizes, edges=edges)
                assert {b for u in hub.units for b in u.balance} == {"hubs"}
                assert hub.summary()["balance"] == {"hubs": len(hub.shards)}


def test_executors_declaring_no_strategy_keep_the_policy_choice():
    from grstream.engine.capabilities import Capabilities, PushFacts
    from grstream.engine.plan import Unit
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(options={}))
    assert caps.zerocopy_balance == ZEROCOPY_BALANCE and caps.push.balance == PUSH_BALANCE
    assert caps.forced.balance == "auto"
    zc = Unit((3,), "zerocopy", ("merge",))
    assert balance.as_run(zc, caps) == (ZEROCOPY_BALANCE,)
    assert balance.as_run(Unit((3, 4), "copy", ("merge", "twc")), caps) == ("merge", "twc")
    plain = Capabilities("cpu", transfers=("resident", "load", "copy", "zerocopy"))
    assert plain.zerocopy_balance is None and plain.push is None
    assert balance.as_run(Unit((3,), "zerocopy", ("sweep",)), plain) == ("sweep",)
    assert balance.as_run(Unit((3,), "copy", ("select",), direction="push"), plain) == ("select",)


class _Dev:
    fn = "main kernels"


class _Zc:
    def enter(self):
        return "zero-copy kernels"


class _Mover:
    def deliver(self, plan, stats):
        for u in plan.units:
            yield u, [u.shards]


def test_the_executor_runs_the_units_it_is_given(tmp_path):
    """CudaExecutor.load hands every unit on unchanged, a zero-copied one with the zero-copy
    kernels swapped in for its phases: a merge split the plan asks for is run as a merge split."""
    store = skewed_store(tmp_path)
    plan = planned(store, {}, "zerocopy")
    zc = next(u for u in plan.units if u.transfer == "zerocopy")
    forced = replace(plan, units=tuple(replace(u, balance=("merge",) * len(u.balance))
                                       if u is zc else u for u in plan.units))
    ex = object.__new__(CudaExecutor)
    ex.dev, ex.zc, ex.mover, ex._mstats = _Dev(), _Zc(), _Mover(), {}
    for p in (plan, forced):
        seen = []
        for unit, data in ex.load(p):
            seen.append(unit)
            assert ex.dev.fn == ("zero-copy kernels" if unit.transfer == "zerocopy" else "main kernels")
        assert tuple(seen) == p.units
        assert ex.dev.fn == "main kernels"
