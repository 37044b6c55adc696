"""Publish "unit" (Gauss-Seidel pull iterations, plan.py): which plans the planner gives it.

The executors' side (each unit's interval published after its apply, results equal to the
Jacobi plans and scipy) runs on the device: tests/backends/cuda/test_publish_unit.py."""
import numpy as np
import pytest

from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Feature, PushFacts
from grstream.engine.direction import DirectionRule
from grstream.engine.plan import Readback
from grstream.engine.planner import Planner

from .test_planner import chain, planner  # noqa: F401  (chain is a fixture)

GPU_LIKE = dict(batching=Batching(BatchResident.DENSE), push=PushFacts(threshold=1.0),
                features={Feature.PUBLISH_UNIT})


def caps(**kw):
    return Capabilities("cuda", **dict(GPU_LIKE, **kw))


def test_asynchronous_pull_plans_of_several_units_publish_per_unit(chain):  # noqa: F811
    p, model = planner(chain, ConnectedComponents(), caps=caps())
    assert model.in_memory
    p.seed(np.array([10, 10, 10, 10]), seeded=False)
    plan = p.plan(1, np.array([10, 10, 10, 10]), all_active=True)
    assert len(plan.units) == 4 and plan.publish == "unit" and plan.publish_fields == ("label",)
    assert "publish unit label" in str(plan) and plan.summary()["publish"] == "unit"
    # one unit: nothing runs after it, so the ordinary publish
    one = p.plan(2, np.array([0, 3, 0, 0]), all_active=False)
    assert len(one.units) == 1 and one.publish == "copy"


def test_push_activation_seed_and_executors_without_it_keep_their_publish(chain):  # noqa: F811
    counts = np.array([10, 10, 10, 10])
    q, _ = planner(chain, ConnectedComponents(), caps=caps())
    p = Planner(q.spec, chain, q.memory, q.caps, q.policies, rule=DirectionRule(mode="push"))
    p.seed(counts, seeded=False)
    pushed = p.iteration(1, Readback(shard_active=counts, shard_changed=counts, changed_edges=10), False)
    assert pushed.direction == "push" and pushed.publish == "copy"
    back = p.activation(2, counts)
    assert back.publish == "none"
    assert p.seed(counts).publish == "none"
    for off in (caps(features=()), Capabilities("cpu")):
        q, _ = planner(chain, ConnectedComponents(), caps=off)
        assert q.plan(1, counts, all_active=True).publish == "copy"


@pytest.mark.parametrize("program, expect", [
    (SSSP(source=0), "unit"),       # asynchronous, messages read the edge weight: per edge
    (BFS(source=0), "copy"),        # hoisted messages are computed from cur before the units
    (PageRank(), "swap"),           # dense: not asynchronous, every vertex applied at once
])
def test_only_asynchronous_unhoisted_frontier_programs_take_it(tmp_path, program, expect):
    from ..algorithms.conftest import build
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, np.ones(39) if isinstance(program, SSSP) else None,
                  num_shards=4)
    p, _ = planner(store, program, caps=caps())
    assert p.plan(1, np.array([10, 10, 10, 10]), all_active=True).publish == expect


def test_auto_pulls_where_a_push_saves_no_bytes_and_pulls_publish_per_unit(chain):  # noqa: F811
    """CC pushes over both directions, moving what a pull moves: with publish "unit" offered,
    "auto" pulls (fewer iterations); without it, the executor's threshold decides as before."""
    counts = np.array([10, 10, 10, 10])
    rb = Readback(shard_active=counts, shard_changed=counts, changed_edges=10)
    p, _ = planner(chain, ConnectedComponents(), caps=caps())
    assert not p.push_ok and "Gauss-Seidel" in p.push_reason
    p.seed(counts, seeded=False)
    assert p.iteration(1, rb, True).direction == "pull"
    q, _ = planner(chain, ConnectedComponents(), caps=caps(features=()))
    q.seed(counts, seeded=False)
    assert q.push_ok and q.iteration(1, rb, True).direction == "push"
    # BFS pushes over the CSR only (half of pull's bytes): publish "unit" leaves it pushing
    b, _ = planner(chain, BFS(source=0), caps=caps())
    assert b.push_ok
