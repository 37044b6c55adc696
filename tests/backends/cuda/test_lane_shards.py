"""The lanes' choice of which lanes run a unit's phases (lane_runs.LaneRuns.running), on the
host (no GPU): the lanes alive with an active vertex (a seed vertex, for a seeding plan) in the
unit's shards, from a table made once per frontier."""
from types import SimpleNamespace

import numpy as np

from grstream.backends.cuda.lane_runs import LaneRuns


def lanes_of(intervals, alive):
    runs = LaneRuns.__new__(LaneRuns)   # the host side only: no device arrays
    runs.dev = SimpleNamespace(intervals=np.asarray(intervals, dtype=np.int64))
    runs.n = int(intervals[-1])
    runs.alive = np.asarray(alive, dtype=bool)
    runs.mask = runs.seed = None
    runs._shards = (None, None)
    return runs


def test_the_lanes_with_work_in_a_unit_are_those_with_a_vertex_in_its_shards():
    rng = np.random.default_rng(5)
    intervals = [0, 7, 7, 20, 21, 40, 40]   # empty shards among them
    count, n = 6, intervals[-1]
    runs = lanes_of(intervals, rng.random(count) < 0.8)
    pull = SimpleNamespace(seed=False, all_active=False)
    seeding = SimpleNamespace(seed=True, all_active=False)
    for density in (0.0, 0.02, 0.1, 0.5):
        runs.mask = rng.random((count, n)) < density
        runs.seed = rng.random((count, n)) < density
        for plan, mask in ((pull, runs.mask), (seeding, runs.seed)):
            for shards in ([0], [1], [2, 3], [1, 5], [4], list(range(6))):
                want = [k for k in np.flatnonzero(runs.alive)
                        if any(mask[k, intervals[i]:intervals[i + 1]].any() for i in shards)]
                assert runs.running(plan, shards) == want
        table = runs._shard_table(runs.mask)
        assert runs._shard_table(runs.mask) is table   # one table per frontier
    every = SimpleNamespace(seed=False, all_active=True)
    assert runs.running(every, [0]) == np.flatnonzero(runs.alive).tolist()
    runs.mask = None
    assert runs.running(pull, [1]) == np.flatnonzero(runs.alive).tolist()
