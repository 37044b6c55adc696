"""Push or pull, bitmap or queue: the per-iteration choices of the engine, as small pure functions.

The rule (Ligra's, tunable through Session / ``grstream run`` options)::

    push  when the program is push-valid (ProgramSpec.push_ok, grstream/program/push.py), the
          executor runs push plans (Capabilities.push), the run is not in lanes, and
              edges a push walks from the changed set  <=  |E| * push_threshold
          ("auto"; push_threshold: the user's, else the executor's Capabilities.push.threshold,
          else Ligra's 1/20); ``direction="push"`` pushes whenever push is valid, ``"pull"`` never does;
    pull  otherwise: every vertex of the frontier gathers over its own edges.

    queue   when the plan's active vertices (the changed set for push, the frontier for pull)
            <= n * queue_fraction (1/64) and the executor lists "queue"; else "bitmap".

Pushing walks the out-edges (for ``gather_edges = "in"``) of the vertices that changed in the
previous iteration; pulling walks the in-edges of their out-neighbours. On a sparse frontier both
touch few edges, but pull also needs the frontier itself (an activation pass over the same
out-edges) and reads every in-edge of each frontier vertex, changed or not; on a dense frontier
pull wins because it writes each vertex once without combining messages. 1/20 is where Ligra
measured the switch to pay, for a dense pull that stops scanning a vertex's in-edges once it is
reached. An executor whose pull has no such exit declares its own measured threshold: the CPU
executor's pull walks the changed set's out-edges to activate and then every in-edge of the
frontier, so pushing is never slower there (docs/BENCHMARKS.md, "Measured constants") and it
declares 1.0. tools/bench_cpu.py measures the directions against scipy in one run.

Gauss-Seidel pulls: where a push walks every array a pull reads (connected components walks both
directions, so it saves no bytes) and the executor publishes per unit (``Feature.PUBLISH_UNIT``, plan.py)
for an asynchronous program, "auto" pulls: later units then gather the labels earlier units just
wrote, and a run needs fewer iterations (connected components: docs/BENCHMARKS.md, "GPU targets").
"""
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..errors import UsageError
from .capabilities import Feature
from .schedule import activation_arrays, hoistable, needed_arrays, push_arrays

DIRECTION_MODES = ("auto", "push", "pull")
#: push while the changed set's edges are at most this fraction of all edges (Ligra: 1/20)
PUSH_THRESHOLD = 1 / 20
#: a compacted vertex queue while the active vertices are at most this fraction of all vertices
QUEUE_FRACTION = 1 / 64
#: a queue plan's next frontier stays a list of ids while a unit activates fewer than
#: n / NEXT_QUEUE_DIV vertices, and goes into the bitmap beyond (IterationPlan.next_queue): marking
#: and one scan of n flags then beat sorting and merging that many ids
NEXT_QUEUE_DIV = 16


@dataclass(frozen=True)
class DirectionRule:
    """The user's direction options: ``mode`` ("auto" | "push" | "pull"), ``push_threshold`` and
    ``queue_fraction`` (fractions of |E| and n, see the module docstring)."""

    mode: str = "auto"
    push_threshold: Optional[float] = None   # None: the executor's, else PUSH_THRESHOLD
    queue_fraction: float = QUEUE_FRACTION

    def __post_init__(self):
        if self.mode not in DIRECTION_MODES:
            raise UsageError(f"direction must be one of {DIRECTION_MODES}, not {self.mode!r}")
        for name in ("push_threshold", "queue_fraction"):
            value = getattr(self, name)
            if value is None and name == "push_threshold":
                continue
            if not isinstance(value, (int, float)) or not 0 <= float(value) <= 1:
                raise UsageError(f"{name} must be a fraction in [0, 1], not {value!r}")

    @classmethod
    def of(cls, direction=None, push_threshold=None, queue_fraction=None):
        """A rule from optional option values (None: the default)."""
        return cls(mode="auto" if direction is None else direction,
                   push_threshold=push_threshold,
                   queue_fraction=QUEUE_FRACTION if queue_fraction is None else queue_fraction)


    def info(self, push_ok, reason, limit=None):
        """The rule and the program's push verdict, for Result.info["direction"]
        (``threshold``: the push threshold in force, see :func:`threshold`)."""
        return {"mode": self.mode, "push_ok": bool(push_ok), "reason": reason,
                "push_threshold": self.push_threshold, "threshold": limit,
                "queue_fraction": self.queue_fraction}


#: push plans turn asynchronous once the run's changed sets add up to this many times n
ASYNC_AFTER = 1.0
#: and while the plan's push walks at least this many edges per shard: an asynchronous plan runs
#: one unit per shard, each with fixed costs (Python calls, a scan of its span) of about this
#: many edges (docs/BENCHMARKS.md, "Measured constants")
ASYNC_SHARD_EDGES = 1 << 14


def asynchronous_push(allowed, changed_sum, n, edges, shards, relaxes=False):
    """Whether a push plan runs asynchronously (IterationPlan.push_async), where ``allowed``
    (the program and executor allow it: :func:`asynchronous`): once the run's changed sets so
    far (``changed_sum``; an unseeded start counts n) reach ASYNC_AFTER * n, its vertices change
    more than once (label propagation), which Gauss-Seidel saves (it walks about a third of
    the edge ends). So from the start where the message reads the edge (``relaxes``: SSSP's
    ``src.dist + edge.weight``), whose first message to a vertex is often not its last (a
    quarter fewer edges walked on RMAT). A wavefront (BFS: each vertex changes once) walks the
    same edges either way and would only pay the per-unit applies on one thread, so it stays
    synchronous (docs/BENCHMARKS.md, "CPU push and pull"); so does a push of fewer than
    ASYNC_SHARD_EDGES per shard (``edges``: the plan's estimated walk over ``shards`` shards)."""
    return (bool(allowed) and (relaxes or changed_sum >= ASYNC_AFTER * max(n, 1))
            and edges >= ASYNC_SHARD_EDGES * shards)


def executor_rule(rule, caps, threshold_given, fraction_given=False):
    """``rule`` with the executor's own push threshold and queue fraction
    (``Capabilities.push.threshold`` / ``queue_fraction``, e.g. the GPU's) where the user gave
    none and the executor has one."""
    own = {"push_threshold": caps.push_threshold, "queue_fraction": caps.queue_fraction}
    given = {"push_threshold": threshold_given, "queue_fraction": fraction_given}
    changes = {k: float(v) for k, v in own.items() if v is not None and not given[k]}
    return replace(rule, **changes) if changes else rule


def next_active(plan, rb):
    """Active vertices after ``plan``: the next frontier, or after a push the changed set, which
    counts as empty when it has no edge to send along (the pull frontier would be empty too, so
    both directions stop after the same iteration)."""
    if plan.direction == "push" and rb.changed_edges == 0:
        return 0
    return rb.total_active if rb.total_active >= 0 else int(rb.shard_active.sum())


def push_allowed(spec, caps, rule, lanes=False):
    """``(allowed, reason)``: whether the planner may plan push for ``spec`` at all."""
    if rule.mode == "pull":
        return False, "direction = 'pull' was asked for"
    if not spec.push_ok:
        return False, spec.push_reason
    if caps.push is None:
        return False, f"the {caps.kind} executor runs pull plans only"
    if lanes:
        # each lane has its own changed set; lanes keep one union frontier, so they pull
        return False, "runs in lanes pull (one frontier for every lane)"
    if rule.mode == "auto" and gauss_seidel(spec, caps) and set(push_arrays(spec)) >= set(needed_arrays(spec)):
        return False, ("a push moves every array a pull reads, and pull iterations publish per "
                       "unit (Gauss-Seidel, fewer iterations): the run pulls")
    return True, spec.push_reason


def push_only(spec, caps, rule, lanes=False):
    """Whether every plan of a run pushes (or activates over arrays a push reads): the executor
    holds push-only memory models (``Capabilities.push.memory``), push is allowed, the threshold
    in force takes every changed set (1: a GPU's own), and activation reads only push arrays.
    The session then plans memory over :func:`memory_arrays` ``"only"``: the budget's resident
    shards and slots hold the push arrays alone (BFS: the CSR, half of a pull region), so twice as
    many shards stay resident; a run that must pull (its seed is not silent) gets a model with
    the pull arrays first."""
    if not (caps.push is not None and caps.push.memory and push_allowed(spec, caps, rule, lanes)[0]):
        return False
    if rule.mode == "auto" and threshold(rule, caps) < 1.0:
        return False
    return not spec.has_scatter and set(activation_arrays(spec)) <= set(push_arrays(spec))


def memory_arrays(spec, mode):
    """The shard datasets a memory model holds: ``"only"`` the push and activation arrays
    (:func:`push_only`), ``"push"`` the pull and push arrays, ``""`` the pull arrays."""
    if mode == "only":
        keep = set(push_arrays(spec)) | set(activation_arrays(spec))
        return [n for n in needed_arrays(spec, push=True) if n in keep]
    return needed_arrays(spec, push=mode == "push")


def asynchronous(spec):
    """The program promises its result whatever order its updates land in (``asynchronous``)
    and its state is the vertex fields alone: it may gather values written earlier in the same
    iteration (local rounds, publish "unit")."""
    return bool(spec.asynchronous and spec.has_gather and spec.activate == "frontier"
                and spec.gather_from == "all" and not spec.has_scatter and not spec.edge_state
                and not spec.aggregates)


def gauss_seidel(spec, caps):
    """Whether the executor's pull plans of ``spec`` may publish per unit (publish "unit"): an
    asynchronous program whose messages are computed per edge (hoisted ones are computed from
    ``cur`` before the units, so a later unit would not see what an earlier one wrote)."""
    return bool(caps.has(Feature.PUBLISH_UNIT) and asynchronous(spec) and not hoistable(spec))


def threshold(rule, caps):
    """The push threshold in force: the user's, the executor's, or PUSH_THRESHOLD."""
    if rule.push_threshold is not None:
        return float(rule.push_threshold)
    own = caps.push_threshold
    return PUSH_THRESHOLD if own is None else float(own)


def choose_direction(rule, allowed, push_edges, num_edges, limit=None):
    """"push" or "pull" for one iteration: ``push_edges`` are the edges a push from the changed
    set walks (Readback.changed_edges, or :func:`estimate_edges`); ``limit``: the threshold
    (:func:`threshold`; default the rule's, else PUSH_THRESHOLD)."""
    if not allowed or rule.mode == "pull":
        return "pull"
    if rule.mode == "push":
        return "push"
    if limit is None:
        limit = PUSH_THRESHOLD if rule.push_threshold is None else rule.push_threshold
    return "push" if push_edges <= num_edges * limit else "pull"


def choose_format(rule, caps, active, n):
    """"queue" for a frontier of at most ``n * queue_fraction`` vertices where the executor
    lists it, else "bitmap"."""
    if "queue" in caps.frontier_formats and active <= n * rule.queue_fraction:
        return "queue"
    return "bitmap" if "bitmap" in caps.frontier_formats else caps.frontier_formats[0]


def next_queue(fmt, n):
    """IterationPlan.next_queue of a plan with frontier format ``fmt`` over ``n`` vertices: the
    most ids a unit's next frontier keeps as a list (fewer than n / NEXT_QUEUE_DIV); 0 for
    bitmap plans (every activation marks the bitmap)."""
    return (int(n) - 1) // NEXT_QUEUE_DIV if fmt == "queue" and n > 0 else 0


def shard_edges(counts, edges, sizes):
    """Edges a push from ``counts`` changed vertices per shard walks in each shard (float64),
    when the executor did not count them: each shard's share of its ``edges`` (per shard, of
    ``sizes`` vertices)."""
    return np.asarray(counts, dtype=np.float64) * np.asarray(edges) / np.maximum(sizes, 1)


def estimate_edges(counts, edges, sizes):
    """The total of :func:`shard_edges`."""
    return int(shard_edges(counts, edges, sizes).sum())
