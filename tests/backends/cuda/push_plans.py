"""Forced direction sequences (issue 8): push plans built from the pull planner's plans by the
contract of grstream/engine/plan.py, and a run loop that takes the direction of each iteration
from a list (or a rule). The engine's own choice is Planner.iteration (grstream/engine/direction.py,
tested end to end in test_push.py); this driver runs the sequences that rule would not produce
(push, pull, push, ... switching every iteration) on the executor, as it did while the planner
side was being built.

The contract, as this driver follows it:

- a push plan's units cover the shards holding changed vertices of the previous iteration (the
  seed before iteration 1), every unit with direction "push"; phases ("gather",), apply_scope
  "all" (one apply over the touched vertices), publish "copy"; the next frontier it publishes
  is the changed set, so its ``Readback.shard_active`` equals ``shard_changed``;
- a pull iteration after a push is preceded by an activation-only plan (``activation ==
  "changed"``) that turns the changed set into the pull frontier.
"""
import dataclasses

import numpy as np

from grstream.engine.backend import IterationStats
from grstream.engine.state import initial_edge_state, initial_state, seed_ids


def as_push(plan, frontier_format="bitmap"):
    """The push plan over ``plan``'s units (built by the planner from the changed counts)."""
    units = tuple(dataclasses.replace(u, direction="push") for u in plan.units)
    return dataclasses.replace(plan, units=units, direction="push", phases=("gather",), apply_scope="all",
                               dense=False, hoist=False, all_active=False, frontier_format=frontier_format,
                               publish="copy" if units else "none")


def activation_plan(planner, changed):
    """The activation-only plan over the previous iteration's changed set (``changed`` per shard)."""
    plan = planner.seed(changed, True)
    return dataclasses.replace(plan, seed=False, activation="changed")


def ligra(threshold, queue_below=1 / 64):
    """A direction rule for :func:`run_directions`: push while the changed set's walked edges
    (``Readback.changed_edges``) are at most ``threshold`` of all edges; a queue while the
    changed set holds fewer than ``queue_below`` of the vertices."""
    def choose(it, rb, m, n):
        d = "push" if rb.changed_edges <= threshold * m else "pull"
        fmt = "queue" if int(rb.shard_changed.sum()) < queue_below * n else "bitmap"
        return d, fmt
    return choose


def run_directions(session, program, directions, frontier_format="bitmap", max_iter=None):
    """Run ``program`` on ``session``'s executor with iteration k taking ``directions[k % len]``
    (or ``directions(it, last readback, edges, vertices) -> (direction, frontier format)``).

    Returns (state dict, list of (direction, Readback, IterationStats), number of iterations);
    ``run_directions.last`` holds the wall-clock seconds from the state upload to the last read
    back (host init excluded, as the engine's start() and iterations).
    """
    import time
    cls = type(program)
    spec = cls.spec
    prep = session._prepare(cls, pull=True)   # sequences with pull plans: the pull arrays held
    ex, planner, store = prep.executor, prep.planner, session.store
    n = int(store.num_vertices)
    program.num_vertices, program.num_edges, program.iteration = n, int(store.num_edges), 0
    state, seed = initial_state(program, store, alloc=ex.host_state)
    ex.bind(program)
    t0 = time.perf_counter()
    ex.load_state(state, initial_edge_state(store, spec))
    seeded = seed is not None and spec.activate != "all"
    sizes = np.diff(np.asarray(store.intervals, dtype=np.int64))
    counts = sizes
    if seeded:
        idx = seed_ids(np.broadcast_to(seed, (n,)))
        counts = np.diff(np.searchsorted(idx, np.asarray(store.intervals, dtype=np.int64)))
        ex.set_frontier(seed, ids=idx)
    else:
        ex.set_frontier(None)
    rb = session._execute(ex, planner.seed(counts, seeded), IterationStats())
    front, changed, all_active = rb.shard_active, rb.shard_changed, not seeded
    log, prev, it = [], "pull", 0
    limit = max_iter if max_iter is not None else 4 * n + 8
    while it < limit and int(changed.sum()) > 0 and (all_active or int(front.sum()) > 0 or prev == "push"):
        fmt = frontier_format
        if callable(directions):
            d, fmt = directions(it, rb, int(store.num_edges), n)
        else:
            d = directions[it % len(directions)]
        it += 1
        program.iteration = it
        if d == "push":
            plan = as_push(planner.plan(it, changed, False), fmt)
        else:
            if prev == "push":
                rb = session._execute(ex, activation_plan(planner, changed), IterationStats())
                front = rb.shard_active
                if int(front.sum()) == 0:
                    break
            plan = planner.plan(it, front, all_active)
        st = IterationStats(iteration=it)
        t1 = time.perf_counter()
        rb = session._execute(ex, plan, st)
        st.time_total = time.perf_counter() - t1
        log.append((d, rb, st))
        front, changed, all_active, prev = rb.shard_active, rb.shard_changed, False, d
    run_directions.last = time.perf_counter() - t0
    return ex.state(), log, it
