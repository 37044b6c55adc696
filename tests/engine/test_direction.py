"""Push / pull and bitmap / queue per iteration (grstream/engine/direction.py and
Planner.iteration), planned for stand-in executor capabilities without running anything."""
import numpy as np
import pytest

from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.engine.direction import (DirectionRule, choose_direction, choose_format,
                                       estimate_edges, next_active, push_allowed, threshold)
from grstream.engine.capabilities import Capabilities, PushFacts
from .contract_helpers import policies_for
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.plan import Readback
from grstream.engine.planner import Planner
from grstream.engine.schedule import needed_arrays
from grstream.errors import UsageError

from ..algorithms.conftest import build

PUSHER = Capabilities("cpu", push=PushFacts(), frontier_formats=("bitmap", "queue"))
PULLER = Capabilities("cpu")


@pytest.fixture
def chain(tmp_path):
    """A path 0 -> 1 -> ... -> 39 in 4 shards of 10 vertices."""
    src = np.arange(39)
    return build(tmp_path, 40, src, src + 1, num_shards=4)


def planner(store, program, caps=PUSHER, rule=None, lanes=False, budget=None):
    spec = type(program).spec
    fp = Footprint(static={"state": 100}, alignment=64)
    model = plan_memory(store, needed_arrays(spec, push=True), fp, budget, None, pinned=False)
    return Planner(spec, store, model, caps, policies_for(caps), rule=rule, lanes=lanes)


def rb(active, changed, edges=-1):
    return Readback(shard_active=np.asarray(active, dtype=np.int64),
                    shard_changed=None if changed is None else np.asarray(changed, dtype=np.int64),
                    changed_edges=edges)


def test_rule_defaults_and_validation():
    rule = DirectionRule.of()
    assert (rule.mode, rule.push_threshold, rule.queue_fraction) == ("auto", None, 1 / 64)
    assert DirectionRule.of("pull", 0.1).push_threshold == 0.1
    # the threshold in force: the user's, else the executor's measured one, else Ligra's 1/20
    measured = Capabilities("cpu", push=PushFacts(threshold=1.0))
    assert threshold(rule, PUSHER) == 1 / 20 and threshold(rule, measured) == 1.0
    assert threshold(DirectionRule.of(push_threshold=0.3), measured) == 0.3
    for bad in ({"direction": "sideways"}, {"push_threshold": 2}, {"queue_fraction": -0.5},
                {"push_threshold": "x"}):
        with pytest.raises(UsageError):
            DirectionRule.of(**bad)


def test_ligra_threshold_and_forced_modes():
    auto = DirectionRule()
    assert choose_direction(auto, True, 50, 1000) == "push"     # 50 <= 1000 / 20
    assert choose_direction(auto, True, 51, 1000) == "pull"
    assert choose_direction(DirectionRule(push_threshold=0.5), True, 400, 1000) == "push"
    assert choose_direction(auto, True, 400, 1000, limit=0.5) == "push"
    assert choose_direction(DirectionRule("push"), True, 1000, 1000) == "push"
    assert choose_direction(DirectionRule("pull"), True, 0, 1000) == "pull"
    assert choose_direction(DirectionRule("push"), False, 0, 1000) == "pull"   # not allowed


def test_queue_only_where_listed_and_sparse():
    rule = DirectionRule()
    assert choose_format(rule, PUSHER, 1, 6400) == "queue"
    assert choose_format(rule, PUSHER, 100, 6400) == "queue"     # = n / 64
    assert choose_format(rule, PUSHER, 101, 6400) == "bitmap"
    assert choose_format(rule, PULLER, 1, 6400) == "bitmap"      # the executor has no queue


def test_push_allowed_needs_program_executor_and_no_lanes():
    rule = DirectionRule()
    assert push_allowed(BFS.spec, PUSHER, rule)[0]
    assert not push_allowed(BFS.spec, PULLER, rule)[0]
    assert "lanes" in push_allowed(BFS.spec, PUSHER, rule, lanes=True)[1]
    assert not push_allowed(BFS.spec, PUSHER, DirectionRule("pull"))[0]
    ok, why = push_allowed(PageRank.spec, PUSHER, DirectionRule("push"))
    assert not ok and why == PageRank.spec.push_reason


def test_estimate_edges_from_shard_shares():
    assert estimate_edges([0, 5, 10], [100, 100, 40], [10, 10, 10]) == 50 + 40


def test_sparse_changed_set_pushes_over_its_shards(chain):
    p = planner(chain, BFS(source=0), rule=DirectionRule(queue_fraction=0.25))
    seed = p.seed(np.array([1, 0, 0, 0]))
    assert seed.activation == "seed"
    plan = p.iteration(1, rb([1, 0, 0, 0], [1, 0, 0, 0], edges=1), all_active=False)
    assert plan.direction == "push" and plan.phases == ("gather",)
    assert plan.apply_scope == "all" and not plan.dense and not plan.hoist
    assert plan.frontier and plan.publish == "copy" and plan.publish_fields == ("level",)
    assert [u.shards for u in plan.units] == [(0,)]
    assert all(u.direction == "push" for u in plan.units)
    assert plan.frontier_format == "queue"
    s = plan.summary()
    assert s["plan_direction"] == "push" and s["direction"] == {"push": 1}
    assert "push" in str(plan)


def test_push_then_pull_activates_the_changed_set_first(chain):
    p = planner(chain, BFS(source=0), rule=DirectionRule(push_threshold=0.1))
    p.seed(np.array([1, 0, 0, 0]))
    assert p.iteration(1, rb([1, 0, 0, 0], [1, 0, 0, 0], 1), False).direction == "push"
    # the push left the changed set as the executor's record; now it is too large to push
    act = p.iteration(2, rb([10, 2, 0, 0], [10, 2, 0, 0], 12), False)
    assert act.activation == "changed" and act.phases == ("activate",)
    assert act.publish == "none" and act.frontier and act.direction == "pull"
    assert act.shards == (0, 1) and act.reduce == ()
    # the activation's read back gives the pull frontier; the plan is pull whatever it says
    pull = p.iteration(2, rb([0, 10, 3, 0], [10, 2, 0, 0], 12), False)
    assert pull.direction == "pull" and not pull.activation
    assert pull.phases == ("gather", "apply", "activate") and pull.shards == (1, 2)
    assert pull.frontier_format == "bitmap"   # 13 > 40 / 64
    # pull to push needs no activation: the executor knows the changed set of the pull
    again = p.iteration(3, rb([0, 0, 1, 0], [0, 0, 1, 0], 1), False)
    assert again.direction == "push" and again.shards == (2,)


def test_forced_push_and_pull_ignore_the_threshold(chain):
    dense = rb([10, 10, 10, 10], [10, 10, 10, 10], 39)
    pushed = planner(chain, BFS(source=0), rule=DirectionRule("push"))
    pushed.seed(np.array([1, 0, 0, 0]))
    assert pushed.iteration(1, dense, False).direction == "push"
    pulled = planner(chain, BFS(source=0), rule=DirectionRule("pull"))
    pulled.seed(np.array([1, 0, 0, 0]))
    assert pulled.iteration(1, rb([1, 0, 0, 0], [1, 0, 0, 0], 1), False).direction == "pull"


@pytest.mark.parametrize("program,caps,lanes", [
    (BFS(source=0), PULLER, False),            # the executor cannot push
    (BFS(source=0), PUSHER, True),             # lanes pull
    (PageRank(), PUSHER, False)])              # not push-valid
def test_pull_where_push_is_not_allowed(chain, program, caps, lanes):
    p = planner(chain, program, caps=caps, rule=DirectionRule("push"), lanes=lanes)
    p.seed(np.array([1, 0, 0, 0]))
    plan = p.iteration(1, rb([1, 0, 0, 0], [1, 0, 0, 0], 1), False)
    assert plan.direction == "pull" and not plan.activation


def test_unknown_changed_counts_pull_and_missing_edges_are_estimated(chain):
    p = planner(chain, BFS(source=0))
    p.seed(np.array([1, 0, 0, 0]))
    assert p.iteration(1, rb([1, 0, 0, 0], None), False).direction == "pull"
    # no changed_edges: 1 changed vertex of 10 in a shard of 10 out-edges -> 1 edge <= 39 / 20
    assert p.iteration(2, rb([1, 0, 0, 0], [1, 0, 0, 0]), False).direction == "push"


def test_connected_components_push_both_ways(tmp_path):
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, num_shards=4)
    p = planner(store, ConnectedComponents())
    assert p.push_ok and p.push_total == 2 * 39       # pushes over in- and out-edges
    p.seed(np.full(4, 10), seeded=False)
    # everyone changed at the start: far above the threshold
    first = p.iteration(1, rb([10] * 4, [10] * 4, 78), all_active=True)
    assert first.direction == "pull" and first.all_active and first.frontier_format == "bitmap"


def test_next_active_stops_a_push_with_nowhere_to_send():
    push = type("P", (), {"direction": "push"})()
    pull = type("P", (), {"direction": "pull"})()
    assert next_active(push, rb([2, 0], [2, 0], 0)) == 0
    assert next_active(push, rb([2, 0], [2, 0], 3)) == 2
    assert next_active(pull, rb([2, 1], [2, 0], 0)) == 3
