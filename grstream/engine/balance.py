"""Load balance in the plan: what a policy may know of a shard, and the strategies that run.

Which gather strategy each shard of a unit uses is the executor class's policy
(``Executor.policies``, :class:`~grstream.engine.capabilities.Policies` ``balance``): the planner
calls ``policies.balance(facts, actives, spec, caps)`` for every unit, with the unit's shards'
:class:`ShardFacts`, their active vertex counts, the program's ProgramSpec and the executor's
Capabilities (``caps.forced.balance``: the strategy the user forced, or "auto"); it returns one
strategy name per shard (the CPU's in grstream/backends/cpu/balance.py, the GPU's in
grstream/backends/cuda/loadbalance.py). A unit the transfer policy makes zero-copy, and a push
unit, then take :func:`as_run`'s strategies (the executor's own for those; ``"hubs"`` for a push
unit whose iteration's senders carry hub rows, :func:`hub_walk`).
"""
from dataclasses import dataclass
from typing import Tuple

import numpy as np

#: rows per group of :attr:`ShardFacts.group_edges`: the rows a GPU thread block of the CUDA
#: walks takes (skeletons.BLOCK consecutive rows from the shard's first)
GROUP_ROWS = 256


@dataclass(frozen=True)
class ShardFacts:
    """What a policy may know about a shard: its interval and its edges per gather direction."""

    shard: int
    vertices: int
    edges: Tuple[Tuple[str, int], ...] = ()        # (direction, edges) for the gather directions
    max_degree: Tuple[Tuple[str, int], ...] = ()   # (direction, largest degree)
    #: (direction, the most edges of GROUP_ROWS consecutive rows from the shard's first): what
    #: one thread block of a row-per-thread walk holds at most (a vertex order that puts the
    #: largest rows together makes it far larger than the largest degree)
    group_edges: Tuple[Tuple[str, int], ...] = ()

    def edges_of(self, direction):
        return dict(self.edges).get(direction, 0)

    def max_degree_of(self, direction):
        return dict(self.max_degree).get(direction, 0)

    def group_edges_of(self, direction):
        return dict(self.group_edges).get(direction, 0)


def group_max(degrees, rows=GROUP_ROWS):
    """The most edges among ``rows`` consecutive rows (groups from the first row) of one
    interval's degree array (:attr:`ShardFacts.group_edges`); 0 for no rows."""
    d = np.asarray(degrees, dtype=np.int64)
    if d.size == 0:
        return 0
    # (each group's sum at once: no running sum of the whole interval)
    return int(np.add.reduceat(d, np.arange(0, d.size, rows)).max())


#: a push iteration's units walk with the hub path (strategy ``"hubs"``: rows of
#: ``caps.push.hub_edges`` edges or more walked by the whole grid) only when the changed set's
#: mean push degree is at least push_hub_edges / HUB_MEAN_DIV: below that hub rows carry little of
#: the walk and the hub launches per shard cost more than they save
#: (docs/BENCHMARKS.md, "Measured constants")
HUB_MEAN_DIV = 64


def hub_walk(caps, edges, changed):
    """Whether a push from ``changed`` vertices walking ``edges`` edges (-1: unknown) takes the
    executor's hub path (``caps.push.hub_edges`` > 0, HUB_MEAN_DIV)."""
    huge = 0 if caps.push is None else int(caps.push.hub_edges)
    if huge <= 0:
        return False
    return edges < 0 or edges * HUB_MEAN_DIV >= huge * max(int(changed), 1)


#: a push shard of long rows (PushFacts.merge_degree) takes the edge-balanced walk only where the
#: push walks at least this many of its edges: below that any walk of it is short
MERGE_PUSH_MIN = 1 << 16


#: :func:`merge_pushes`' reasons: the shard's walk is dense (not on a zero-copied shard), its
#: rows are long (any transfer)
DENSE_PUSH, LONG_ROWS = 1, 2


def merge_pushes(caps, walk, push_edges, sizes):
    """Per shard (ints), why a push walks it edge-balanced (strategy ``"merge"``), from the
    edges the push walks in each shard (``walk``, the planner's estimate), the shards' push
    edges and vertex counts: :data:`LONG_ROWS` where the shard's rows are long (mean push degree
    at least ``caps.push.merge_degree``: a walk by rows gets few threads for many edges, worst
    where a vertex order puts the largest rows side by side) and the walk holds at least
    :data:`MERGE_PUSH_MIN` edges; else :data:`DENSE_PUSH` where the walk holds at least
    ``caps.push.merge_share`` of the shard's push edges (a dense level: a grid over the edges
    reads every id once, coalesced), whose shard the transfer policy copies and which
    :func:`as_run` gives only to shards not read in place (a forced zero-copy: the edge-balanced
    walk would read every row offset and the ids of every run of 32 edges holding a changed row
    over the link); 0: the walk by rows."""
    walk = np.asarray(walk, dtype=np.float64)
    share = 0.0 if caps.push is None else float(caps.push.merge_share)
    degree = 0.0 if caps.push is None else float(caps.push.merge_degree)
    edges = np.asarray(push_edges, dtype=np.float64)
    out = np.zeros(walk.shape, dtype=np.int64)
    if share > 0:
        out[(walk > 0) & (walk >= share * edges)] = DENSE_PUSH
    if degree > 0:
        out[(edges >= degree * np.maximum(np.asarray(sizes, dtype=np.float64), 1)) & (walk >= MERGE_PUSH_MIN)] = LONG_ROWS
    return out


def as_run(unit, caps, hubs=False, merged=None):
    """The strategies ``unit`` runs with once its transfer and direction are chosen (what the
    plan shows): a push unit walks its edges with the executor's push strategy
    (``caps.push.balance``: its push kernels' walk by rows, whatever the user forced), or
    ``"hubs"`` (that walk with the hub path) where ``hubs`` (:func:`hub_walk`), and
    ``"merge"`` (the edge-balanced walk) for its shards ``merged`` maps to a reason
    (:func:`merge_pushes`: shard -> :data:`LONG_ROWS`, or :data:`DENSE_PUSH` unless the unit is
    zero-copied); a zero-copy pull unit's gathers read mapped host memory with the executor's zero-copy strategy
    (``caps.zerocopy_balance``) unless the user forced one (``caps.forced.balance``); others, and
    executors declaring neither (None), keep the policy's choice."""
    n = len(unit.balance)
    pushed = None if caps.push is None else caps.push.balance
    if unit.direction == "push":
        if pushed is None:
            return tuple(unit.balance)
        merged = merged or {}
        edge_balanced = {i for i in unit.shards
                         if merged.get(i) == LONG_ROWS or (merged.get(i) == DENSE_PUSH and unit.transfer != "zerocopy")}
        return tuple("merge" if i in edge_balanced else "hubs" if hubs else pushed for i in unit.shards)
    fixed, forced = caps.zerocopy_balance, caps.forced.balance
    if unit.transfer != "zerocopy" or fixed is None or forced != "auto":
        return tuple(unit.balance)
    return (fixed,) * n
