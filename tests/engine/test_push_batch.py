"""The GPU's batch_resident "dense_push": a push plan whose shards are all resident and loaded is
one unit (one unit's launches, no per-unit events); with a shard to move, the resident shards
stay one unit each, alternating with the moved ones so that copies overlap their kernels."""
import numpy as np

from grstream.algorithms.bfs import BFS
from grstream.engine.executor import Capabilities

from .test_planner import chain, planner  # noqa: F401  (chain is a fixture)


def caps(batch):
    return Capabilities("cuda", batch_resident=batch, push=True, push_threshold=1.0)


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


def test_push_plans_with_a_moved_shard_keep_one_unit_per_resident_shard(chain):  # noqa: F811
    p, model = planner(chain, BFS(source=0), caps=caps("dense_push"), budget=_two_resident(chain))
    assert 0 < len(model.resident) < 4
    counts = np.array([1, 1, 1, 1])
    p.push(1, counts)
    plan = p.push(2, counts)
    kinds = [u.transfer for u in plan.units]
    assert "copy" in kinds and all(len(u.shards) == 1 for u in plan.units)


def _two_resident(store):
    from grstream.engine.memory import Footprint, plan_memory
    from grstream.engine.schedule import needed_arrays
    model = plan_memory(store, needed_arrays(BFS.spec), Footprint(static={"state": 100}, alignment=64))
    regions = sorted(model.regions)
    return 100 + regions[-1] + regions[0] + regions[1]   # one slot and two resident shards
