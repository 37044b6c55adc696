"""The planner's transfer policy (grstream/engine/transfers.py): which streamed shard is copied,
compacted or zero-copied; plain data, no GPU."""
import numpy as np
import pytest

from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank
from grstream.engine import costs as cm
from grstream.engine.backend import IterationStats
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Forced, PushFacts
from .contract_helpers import policies_for
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.plan import Readback
from grstream.engine.planner import Planner
from grstream.engine.schedule import needed_arrays

from ..algorithms.conftest import build
from .test_scatter import CountedBFS

ALL = ("resident", "load", "copy", "compact", "zerocopy")
#: a slow link and a fast packer, so that every mode has a range of active fractions
SLOW = cm.LinkCosts(bandwidth=1e9, latency=0.0, compact_rate=1e12, zc_efficiency=0.5, zc_row=0.0, zc_shard=0.0, zc_launch=0.0)


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(2)
    n = 4000
    src, dst = rng.integers(0, n, 60_000), rng.integers(0, n, 60_000)
    return build(tmp_path, n, src, dst, num_shards=4)


def streaming(store, program, transfer="auto", transfers=ALL, calibration=lambda: SLOW, pinned=True,
              direction="pull", push=False):
    """A planner streaming every shard (``push``: a memory model and executor that push too;
    a PushFacts: the executor's push facts)."""
    spec = type(program).spec
    fp = Footprint(static={"state": 100}, alignment=64)
    names = needed_arrays(spec, push=push)
    full = plan_memory(store, names, fp)
    budget = 100 + 2 * max(full.regions)              # two slots, nothing resident
    # pinned: three staging buffers and every shard but the last cached in pinned host memory (a
    # cache of every shard would leave no staging buffer to pack into); else staging buffers only
    pinned_budget = sum(full.regions) + 3 * max(full.regions) - 1 if pinned else max(full.regions)
    model = plan_memory(store, names, fp, budget, pinned_budget, pinned=True, slots=2)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE), transfers=transfers,
                        forced=Forced(transfer=transfer),
                        push=PushFacts() if push is True else push or None)
    return Planner(spec, store, model, caps, policies_for(caps, calibration)), model


def test_sparse_shards_are_zero_copied_dense_ones_copied(store):
    p, model = streaming(store, BFS(source=0))
    sizes = np.diff(np.asarray(store.intervals))
    counts = np.array([1, sizes[1] // 3, sizes[2], 0])
    plan = p.plan(1, counts, all_active=False)
    assert [(u.shards, u.transfer) for u in plan.units] == [((0,), "zerocopy"), ((1,), "compact"),
                                                           ((2,), "copy")]
    zc = plan.units[0]
    assert zc.slot is None and zc.source == "pinned" and 0 < zc.nbytes < model.regions[0]
    assert plan.units[1].slot is not None and plan.units[1].nbytes < model.regions[1]
    assert plan.bytes_copy == sum(u.nbytes for u in plan.units)
    assert plan.summary()["shard_modes"] == {"0": "zerocopy", "1": "compact", "2": "copy"}
    assert plan.summary()["transfer"] == {"zerocopy": 1, "compact": 1, "copy": 1}
    assert "zerocopy" in str(plan)


def test_forced_modes_and_what_cannot_take_them(store):
    counts = np.diff(np.asarray(store.intervals))
    counts[3] = 0   # the shard outside the pinned cache: tested below
    for mode in ("copy", "compact", "zerocopy"):
        p, _ = streaming(store, BFS(source=0), transfer=mode)
        plan = p.plan(1, counts, all_active=False)
        assert {u.transfer for u in plan.units} == {mode}
        # the seeding pass reads its seeds' rows in place or copies them; it never compacts
        seeded = p.seed(np.array([1, 0, 0, 0])).units[0].transfer
        assert seeded == ("zerocopy" if mode == "zerocopy" else "copy")
    # an executor without the modes, a program with edge state, shards outside the pinned cache
    p, _ = streaming(store, BFS(source=0), transfers=("resident", "load", "copy"), transfer="zerocopy")
    assert {u.transfer for u in p.plan(1, counts, False).units} == {"copy"}
    p, _ = streaming(store, CountedBFS(source=0), transfer="zerocopy")
    assert {u.transfer for u in p.plan(1, counts, False).units} == {"copy"}
    p, model = streaming(store, BFS(source=0), transfer="zerocopy", pinned=False)
    assert not model.pinned and {u.transfer for u in p.plan(1, counts, False).units} == {"copy"}
    p, model = streaming(store, BFS(source=0), transfer="zerocopy")
    assert 3 not in model.pinned and p.plan(1, np.array([0, 0, 0, 5]), False).units[0].transfer == "copy"
    # every shard cached and none resident: no staging buffer, so nothing can be compacted
    spec = BFS.spec
    fp = Footprint(static={"state": 100}, alignment=64)
    full = plan_memory(store, needed_arrays(spec), fp)
    model = plan_memory(store, needed_arrays(spec), fp, 100 + 2 * max(full.regions),
                        10 * sum(full.regions), slots=2)
    assert model.staging == 0 and len(model.pinned) == 4
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE), transfers=ALL, forced=Forced(transfer="compact"))
    assert {u.transfer for u in Planner(spec, store, model, caps, policies_for(caps)).plan(1, counts, False).units} == {"copy"}


def test_the_seed_row_is_read_in_place_not_its_shard_copied(store):
    # a source's shard copied whole for one row cost 0.7 ms of BFS's start on the H100
    p, _ = streaming(store, BFS(source=0), calibration=lambda: cm.LinkCosts())
    plan = p.seed(np.array([1, 0, 0, 0]))
    assert [(u.shards, u.transfer) for u in plan.units] == [((0,), "zerocopy")]
    assert plan.units[0].slot is None and plan.bytes_copy < plan.units[0].nbytes + 1
    # on a link where reads in place are slow, the seed's shard is copied
    p, _ = streaming(store, BFS(source=0), calibration=lambda: cm.LinkCosts(zc_shard=1.0))
    assert p.seed(np.array([1, 0, 0, 0])).units[0].transfer == "copy"


def test_grouped_copies_stay_copies(tmp_path):
    src = np.arange(79)
    chain = build(tmp_path, 80, src, src + 1, num_shards=8)
    spec = PageRank.spec
    fp = Footprint(static={"state": 100}, alignment=64)
    region = max(plan_memory(chain, needed_arrays(spec), fp).regions)
    model = plan_memory(chain, needed_arrays(spec), fp, 100 + 8 * region - 1, 10_000,
                        slots=2, slot_bytes=10_000)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE), transfers=ALL, forced=Forced(transfer="zerocopy"))
    plan = Planner(spec, chain, model, caps, policies_for(caps)).plan(1, np.zeros(8, np.int64), all_active=True)
    moved = [u for u in plan.units if u.transfer not in ("resident", "load")]
    assert any(len(u.shards) > 1 for u in moved)
    assert all((u.transfer == "copy") == (len(u.shards) > 1) for u in moved)


def test_push_units_are_never_compacted_and_zero_copied_when_forced(store):
    from dataclasses import replace
    p, _ = streaming(store, BFS(source=0), transfer="compact")
    unit = p.plan(1, np.array([5, 5, 5, 5]), False).units[0]
    # a push unit is never compacted (its changed set is known only on the device)
    assert "compact" not in p.transfers.allowed(replace(unit, transfer="copy", direction="push"))
    # a forced zero-copy reaches push units too
    p, _ = streaming(store, BFS(source=0), transfer="zerocopy", push=True)
    assert p.transfers.allowed(replace(unit, transfer="copy", direction="push")) == ("copy", "zerocopy")
    plan = p.push(1, np.array([5, 5, 5, 0]))
    assert plan.direction == "push" and {u.transfer for u in plan.units} == {"zerocopy"}


def test_push_units_take_modes_from_the_policy(store):
    """A push plan's streamed units are zero-copied when the changed vertices' push edges are
    few, copied when they hold most of the shards' out-edges: the estimate is made on the push
    arrays (the CSR of a BFS) with the walked edges per shard, not the pull frontier's skew."""
    p, model = streaming(store, BFS(source=0), push=True)
    counts = np.array([3, 3, 3, 0])          # shard 3 lies outside the pinned cache
    pushed = p.transfers.push_shapes
    for i in range(3):   # BFS pushes over out-edges only: the CSR, a part of the region
        assert 0 < pushed[i].region < model.regions[i]
        assert pushed[i].edges == store.shard_info(i).num_out_edges == p.push_edges[i]
    few = p.push(1, counts, edges=30)
    assert [(u.shards, u.direction, u.transfer) for u in few.units] == \
        [((i,), "push", "zerocopy") for i in range(3)]
    for u in few.units:
        assert u.slot is None and u.source == "pinned" and 0 < u.nbytes < pushed[u.shards[0]].region / 10
    assert few.direction == "push" and few.bytes_copy == sum(u.nbytes for u in few.units)
    assert few.summary()["shard_modes"] == {"0": "zerocopy", "1": "zerocopy", "2": "zerocopy"}
    # the same nine vertices as hubs holding most of their shards' out-edges: copies
    hubs = p.push(2, counts, edges=int(0.95 * p.push_edges[:3].sum()))
    assert {u.transfer for u in hubs.units} == {"copy"}
    # per shard: the walked edges are spread by each shard's mean push degree, summing to the total
    est = p.push_shard_edges(counts, 90)
    assert est.sum() == pytest.approx(90) and est[3] == 0
    assert np.allclose(est[:3] / est[:3].sum(), p.push_edges[:3] / p.push_edges[:3].sum(), rtol=0.2)
    # a pull frontier of hubs (skew 1000) keeps pull units off zero-copy; the push estimate ignores it
    p.transfers.skew = 1000.0
    assert "zerocopy" not in {u.transfer for u in p.plan(3, counts, False).units}
    assert {u.transfer for u in p.push(3, counts, edges=30).units} == {"zerocopy"}
    # unknown walked edges: each shard's mean degree (still a sparse estimate)
    assert {u.transfer for u in p.push(4, counts).units} == {"zerocopy"}
    # through the direction rule: the read back's changed set and edges
    p.transfers.skew = 1.0
    p.seed(np.array([1, 0, 0, 0]))
    plan = p.iteration(1, Readback(shard_active=counts, shard_changed=counts, changed_edges=30), False)
    assert plan.direction == "push" and {u.transfer for u in plan.units} == {"zerocopy"}


@pytest.mark.parametrize("mode, expected", [("copy", "copy"), ("compact", "copy"),
                                            ("zerocopy", "zerocopy")])
def test_forced_modes_of_push_units(store, mode, expected):
    p, _ = streaming(store, BFS(source=0), transfer=mode, push=True)
    edges = int(p.push_edges.sum())   # every edge: the cost model would copy
    plan = p.push(1, np.array([50, 50, 50, 50]), edges=edges)
    assert [u.transfer for u in plan.units[:3]] == [expected] * 3
    assert plan.units[3].transfer == "copy"    # outside the pinned cache


def test_dense_push_walks_are_copied_for_their_edge_balanced_walk(store):
    """A push unit whose walk holds at least the executor's merge share of its shard's push
    edges is copied, where it walks edge-balanced, even when the model prices its read in place
    lower (read in place it would be walked by rows); without the dense rule (merge_share 0, a
    plain store's executor), and where a mode is forced, the model and the forced mode decide."""
    fast_zc = lambda: cm.replace(SLOW, zc_efficiency=cm.ZC_MAX)   # noqa: E731
    counts = np.array([200, 200, 200, 0])
    for share, expected in ((0.25, "copy"), (0.0, "zerocopy")):
        p, _ = streaming(store, BFS(source=0), calibration=fast_zc, push=PushFacts(balance="twc", merge_share=share))
        edges = int(0.4 * p.push_edges[:3].sum())    # 40% of each shard's push edges
        plan = p.push(1, counts, edges=edges)
        assert [(u.shards, u.transfer) for u in plan.units[:3]] == [((i,), expected) for i in range(3)]
        assert {b for u in plan.units[:3] for b in u.balance} == ({"merge"} if share else {"twc"})
        # the model alone prices the read in place lower
        est = cm.estimate(p.transfers.push_shapes[0], 200, fast_zc(), 1.0, 0.4)
        assert cm.cheapest(est, ("copy", "zerocopy")) == "zerocopy"
    p, _ = streaming(store, BFS(source=0), transfer="zerocopy", calibration=fast_zc,
                     push=PushFacts(balance="twc", merge_share=0.25))
    plan = p.push(1, counts, edges=int(0.4 * p.push_edges[:3].sum()))
    assert {u.transfer for u in plan.units[:3]} == {"zerocopy"}
    assert {b for u in plan.units[:3] for b in u.balance} == {"twc"}   # read in place: by rows


def test_push_choices_do_not_drift_with_the_measurements(store):
    """Push units are estimated on the calibrated figures: zero-copy reads measured far slower
    than predicted (on earlier levels and runs) change the pull units' choice, not the push
    units' (the same level is planned alike in every run of a session)."""
    p, _ = streaming(store, BFS(source=0), push=True)
    counts = np.array([200, 200, 200, 0])
    edges = int(0.3 * p.push_edges[:3].sum())
    first = [u.transfer for u in p.push(1, counts, edges=edges).units]
    assert first[:3] == ["zerocopy"] * 3
    pull = np.diff(np.asarray(store.intervals)) // 12
    pull[3] = 0
    assert {u.transfer for u in p.plan(2, pull, False).units} == {"zerocopy"}
    for run in range(3):
        p.seed(np.array([1, 0, 0, 0]))
        for it in range(1, 10):
            plan = p.push(it, counts, edges=edges)
            assert [u.transfer for u in plan.units] == first
            predicted, _ = p.transfers._predict(p.transfers.predicted[it], p.transfers.skew)
            b, secs = predicted["zerocopy"]
            p.observe(plan, IterationStats(iteration=it, transfer_bytes={"zerocopy": b},
                                           transfer_seconds={"zerocopy": 1000 * secs}))
    assert p.transfers.costs.zc_efficiency < SLOW.zc_efficiency
    assert p.transfers.base == SLOW
    assert "zerocopy" not in {u.transfer for u in p.plan(2, pull, False).units}


def test_push_units_without_the_modes_stay_copies(store):
    p, _ = streaming(store, BFS(source=0), transfers=("resident", "load", "copy"), push=True)
    assert {u.transfer for u in p.push(1, np.array([1, 1, 1, 1]), edges=4).units} == {"copy"}


def test_calibrated_once_and_refined_by_measurements(store):
    calls = []

    def calibrate():
        calls.append(1)
        return SLOW
    p, _ = streaming(store, BFS(source=0), calibration=calibrate)
    counts = np.diff(np.asarray(store.intervals)) // 12
    counts[3] = 0   # outside the pinned cache
    plan = p.plan(1, counts, all_active=False)
    assert {u.transfer for u in plan.units} == {"zerocopy"}
    for it in range(1, 30):
        plan = p.plan(it, counts, all_active=False)
        # zero-copy reads measured 1000x slower than predicted: the efficiency drops to its bound
        predicted, _ = p.transfers._predict(p.transfers.predicted[it], p.transfers.skew)
        bytes_, secs = predicted.get("zerocopy", (0, 0.0))
        st = IterationStats(iteration=it, transfer_bytes={"zerocopy": bytes_},
                            transfer_seconds={"zerocopy": 1000 * secs})
        p.observe(plan, st)
    assert len(calls) == 1
    assert SLOW.zc_efficiency / cm.CLAMP <= p.transfers.costs.zc_efficiency < SLOW.zc_efficiency
    assert p.transfers.costs.zc_row == SLOW.zc_row   # bound by the reads: the rest stays
    # the last plans no longer zero-copy the shards: compaction is cheaper now
    assert {u.transfer for u in plan.units} == {"compact"}


def test_without_calibration_the_defaults_are_used(store):
    p, _ = streaming(store, BFS(source=0), calibration=None)
    p.plan(1, np.array([1, 1, 1, 1]), all_active=False)
    assert p.transfers.costs == cm.LinkCosts()


def test_the_frontier_skew_is_learnt_from_the_statistics(store):
    p, _ = streaming(store, BFS(source=0))
    counts = np.diff(np.asarray(store.intervals)) // 50
    counts[3] = 0
    assert {u.transfer for u in p.plan(1, counts, False).units} == {"zerocopy"}
    # the frontier held hubs: 30 times the mean degree, so the same counts now hold most edges
    active = int(counts.sum())
    st = IterationStats(iteration=1, active_vertices=active,
                        active_edges=int(30 * active * p.transfers.mean_degree))
    p.observe(p.plan(1, counts, False), st)
    assert p.transfers.skew == pytest.approx(30, rel=1e-6)
    assert {u.transfer for u in p.plan(2, counts, False).units} == {"compact"}
    assert p.transfers.mean_degree == pytest.approx(60_000 / store.num_vertices)


def test_a_run_starts_from_the_last_runs_skews(store):
    p, _ = streaming(store, BFS(source=0))
    counts = np.diff(np.asarray(store.intervals)) // 50
    counts[3] = 0
    active = int(counts.sum())
    seed = np.array([1, 0, 0, 0])
    p.seed(seed)
    assert p.transfers.skew == 1.0
    for it, skew in ((1, 30.0), (2, 0.5)):
        plan = p.plan(it, counts, False)
        p.observe(plan, IterationStats(iteration=it, active_vertices=active,
                                       active_edges=int(skew * active * p.transfers.mean_degree)))
    assert p.transfers.skew == pytest.approx(0.5, rel=1e-3)     # the last iteration's
    p.seed(seed)                                                # the next run
    assert p.transfers.skew == pytest.approx(30, rel=1e-3)      # the last run's first iteration
    assert {u.transfer for u in p.plan(1, counts, False).units} == {"compact"}
    p.observe(p.plan(1, counts, False), IterationStats(iteration=1))   # nothing measured
    assert p.transfers.skew == pytest.approx(0.5, rel=1e-3)     # the last run's second iteration
