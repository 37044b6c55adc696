"""engine/balance.py: the hub path of push units is the planner's per-iteration choice."""
import numpy as np

from grstream.engine.balance import HUB_MEAN_DIV, as_run, hub_walk
from grstream.engine.capabilities import Capabilities, PushFacts
from grstream.engine.plan import Unit


def caps(hub_edges):
    return Capabilities("cuda", push=PushFacts(balance="twc", hub_edges=hub_edges))


def test_hub_walks_are_those_whose_changed_set_has_a_high_mean_degree():
    gpu = caps(8192)
    assert not hub_walk(caps(0), 10**9, 1)                 # the hub path off
    assert not hub_walk(Capabilities("cpu"), 10**9, 1)     # an executor without one
    assert hub_walk(gpu, -1, 10)                           # the walk unknown
    assert hub_walk(gpu, 1_400_000, 1)                     # a hub alone (BFS level 1 on RMAT)
    assert hub_walk(gpu, 160_000_000, 238_693)             # mean ~670: hubs carry the walk
    assert not hub_walk(gpu, 100_000_000, 5_964_564)       # mean ~17: a wide, light wavefront
    lim = 8192 // HUB_MEAN_DIV
    assert hub_walk(gpu, lim * 1000, 1000) and not hub_walk(gpu, lim * 1000 - 1, 1000)
    assert not hub_walk(caps(1), 0, 0) and hub_walk(caps(1), 1, 64)   # tests' tiny thresholds


def test_push_units_show_hubs_only_when_asked():
    gpu = caps(8192)
    push = Unit((2, 3), "copy", ("merge", "twc"), direction="push")
    assert as_run(push, gpu) == ("twc", "twc")
    assert as_run(push, gpu, hubs=True) == ("hubs", "hubs")
    pull = Unit((2,), "copy", ("merge",))
    assert as_run(pull, gpu, hubs=True) == ("merge",)     # pull units never take it


def test_group_max_takes_each_groups_sum_without_a_running_sum():
    """The shard facts' group maxima (every shard's interval at a session's first run) make no
    running sum of the interval: only one sum per group of GROUP_ROWS rows."""
    import tracemalloc
    from grstream.engine.balance import GROUP_ROWS, group_max
    rng = np.random.default_rng(2)
    for size in (1, GROUP_ROWS - 1, GROUP_ROWS, 5 * GROUP_ROWS + 3):
        d = rng.integers(0, 50, size)
        want = max(int(d[k:k + GROUP_ROWS].sum()) for k in range(0, size, GROUP_ROWS))
        assert group_max(d) == want
    assert group_max(np.zeros(0, dtype=np.int64)) == 0
    d = rng.integers(0, 50, 1 << 20)
    tracemalloc.start()
    try:
        group_max(d)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 8 * (1 << 20) // GROUP_ROWS + 4096
