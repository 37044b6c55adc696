"""The GPU's batch_resident "dense_push": the loaded resident shards of a push plan are one unit
(one launch over a table of them), cut into chunks queued right before the plan's copies (each
chunk's kernels run while the copy after it moves), and the push units read in place (zerocopy)
are one unit too; pull plans and the "dense" executors keep one unit per shard."""
import numpy as np

from grstream.algorithms.bfs import BFS
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, PushFacts
from .contract_helpers import policies_for

from ..algorithms.conftest import build
from .test_planner import chain, planner  # noqa: F401  (chain is a fixture)


def caps(batch):
    return Capabilities("cuda", batching=Batching(BatchResident(batch)), push=PushFacts(threshold=1.0))


def test_push_plans_of_loaded_resident_shards_are_one_unit(chain):  # noqa: F811
    counts = np.array([1, 1, 0, 1])
    p, model = planner(chain, BFS(source=0), caps=caps("dense_push"))
    assert model.in_memory
    first = p.push(1, counts)   # loads: one unit per shard
    assert [u.transfer for u in first.units] == ["load"] * 3
    again = p.push(2, counts)
    assert [(u.shards, u.transfer) for u in again.units] == [((0, 1, 3), "resident")]
    assert again.units[0].direction == "push" and again.direction == "push"
    # pull frontier plans and the "dense" executors keep one unit per resident shard
    assert len(p.plan(3, counts, all_active=False).units) == 3
    q, _ = planner(chain, BFS(source=0), caps=caps("dense"))
    q.push(1, counts)
    assert len(q.push(2, counts).units) == 3


def test_push_plans_with_moved_shards_batch_the_resident_ones_before_the_copies(tmp_path):
    src = np.arange(79)
    store = build(tmp_path, 80, src, src + 1, num_shards=8)
    p, model = planner(store, BFS(source=0), caps=caps("dense_push"), budget=_resident(store, 3, slots=2),
                       slots=2)
    resident = sorted(model.resident)
    assert len(resident) >= 2 and model.slots == 2 and len(resident) < 8
    counts = np.ones(8, np.int64)
    p.push(1, counts)   # loads the resident shards
    plan = p.push(2, counts)
    kinds = [(u.transfer, u.shards) for u in plan.units]
    moved = [u for u in plan.units if u.transfer == "copy"]
    assert len(moved) == 8 - len(resident) and all(len(u.shards) == 1 for u in moved)
    # the table of every resident shard (not adjacent ones only) cut into chunks, each right
    # before a copy (its kernels run while that copy moves), the first before the first copy
    assert [k for k, _ in kinds[:2]] == ["resident", "copy"]
    chunks = [s for k, s in kinds if k == "resident"]
    assert [i for c in chunks for i in c] == resident
    assert len(chunks) == min(len(moved), len(resident)) >= 2
    assert all(kinds[j + 1][0] == "copy" for j in range(len(kinds)) if kinds[j][0] == "resident")
    assert kinds[-1][0] == "copy"
    assert sorted(i for u in plan.units for i in u.shards) == list(range(8))
    # the "dense" executors: one unit per resident shard
    q, _ = planner(store, BFS(source=0), caps=caps("dense"), budget=_resident(store, 3, slots=2), slots=2)
    q.push(1, counts)
    assert all(len(u.shards) == 1 for u in q.push(2, counts).units)


def test_push_units_read_in_place_are_one_unit(tmp_path):
    from grstream.engine import costs as cm
    from grstream.engine.memory import Footprint, plan_memory
    from grstream.engine.planner import Planner
    from grstream.engine.schedule import needed_arrays
    rng = np.random.default_rng(2)
    store = build(tmp_path, 4000, rng.integers(0, 4000, 60_000), rng.integers(0, 4000, 60_000), num_shards=4)
    slow = cm.LinkCosts(bandwidth=1e9, latency=0.0, compact_rate=1e12, zc_efficiency=0.5, zc_row=0.0, zc_shard=0.0, zc_launch=0.0)
    names = needed_arrays(BFS.spec, push=True)
    fp = Footprint(static={"state": 100}, alignment=64)
    full = plan_memory(store, names, fp)
    model = plan_memory(store, names, fp, 100 + 2 * max(full.regions), sum(full.regions) + 3 * max(full.regions) - 1,
                        pinned=True, slots=2)
    for batch, units in (("dense_push", 1), ("dense", 3)):
        c = Capabilities("cuda", batching=Batching(BatchResident(batch)),
                         transfers=("resident", "load", "copy", "zerocopy"), push=PushFacts(threshold=1.0))
        p = Planner(BFS.spec, store, model, c, policies_for(c, lambda: slow))
        plan = p.push(1, np.array([3, 3, 3, 0]), edges=30)   # shard 3 lies outside the pinned cache
        assert [u.transfer for u in plan.units] == ["zerocopy"] * units
        assert sorted(i for u in plan.units for i in u.shards) == [0, 1, 2]
        assert sum(u.active for u in plan.units) == 9 and all(u.slot is None for u in plan.units)
        assert plan.summary()["shard_modes"] == {"0": "zerocopy", "1": "zerocopy", "2": "zerocopy"}
        assert plan.bytes_copy == sum(u.nbytes for u in plan.units) > 0


def test_a_table_without_copies_after_it_stays_one_unit(chain):  # noqa: F811
    """Chunks go right before copies: a plan without copies (units read in place or held, or
    no other unit) leaves the table whole where it is; a table of one shard moves whole before
    the first copy; a held unit stays right before the copy refilling its slot."""
    from grstream.engine.plan import Unit
    p, _ = planner(chain, BFS(source=0), caps=caps("dense_push"))
    counts = np.array([5, 6, 7, 8])
    table = Unit((0, 1, 3), "resident", ("merge", "twc", "hubs"), direction="push", active=19)
    copy = Unit((2,), "copy", ("twc",), direction="push", slot=0, active=7, nbytes=10)
    held = Unit((2,), "held", ("twc",), direction="push", slot=0, active=7)
    zc = Unit((2,), "zerocopy", ("twc",), direction="push", active=7, nbytes=10)
    for units in ([held, table], [table, zc], [table]):
        assert p._spread_table(units, counts) == units
    one = Unit((1,), "resident", ("twc",), direction="push", active=6)
    assert p._spread_table([one, copy], counts) == [one, copy]
    assert p._spread_table([copy, one], counts) == [one, copy]
    assert p._spread_table([held, copy, table], counts) == [held, table, copy]
    copy2 = Unit((4,), "copy", ("twc",), direction="push", slot=1, active=9, nbytes=10)
    out = p._spread_table([held, copy, table, copy2], counts)
    assert [(u.shards, u.transfer, u.balance, u.active) for u in out] == [
        ((2,), "held", ("twc",), 7), ((0, 1), "resident", ("merge", "twc"), 11), ((2,), "copy", ("twc",), 7),
        ((3,), "resident", ("hubs",), 8), ((4,), "copy", ("twc",), 9)]
    # every held unit first (the copy into its slot waits for its kernels only), then the
    # chunks, each right before a copy
    held1 = Unit((5,), "held", ("twc",), direction="push", slot=1, active=3)
    out = p._spread_table([held, copy, held1, table, copy2], counts)
    assert [(u.shards, u.transfer) for u in out] == [
        ((2,), "held"), ((5,), "held"), ((0, 1), "resident"), ((2,), "copy"), ((3,), "resident"), ((4,), "copy")]


def _resident(store, k, slots=1):
    """A budget holding ``slots`` slots and the ``k`` smallest shards resident."""
    from grstream.engine.memory import Footprint, plan_memory
    from grstream.engine.schedule import needed_arrays
    model = plan_memory(store, needed_arrays(BFS.spec), Footprint(static={"state": 100}, alignment=64))
    regions = sorted(model.regions)
    return 100 + slots * regions[-1] + sum(regions[:k])
