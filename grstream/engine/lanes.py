"""Lanes: several instances of one program class run as one (Session.run_lanes).

The instances' attributes are merged into one program object: scalars equal in every instance
stay as they are, scalars that differ become a (lanes,) array and arrays a (..., lanes) stack
(even when equal, so that they broadcast against the (count, lanes) vertex values), so the
program's numpy expressions compute every lane at once.
"""
import copy

import numpy as np

from .result import Result

_ENGINE_SET = {"num_vertices", "num_edges", "iteration"}


def lane_program(programs):
    """One program object whose differing attributes hold every lane's value."""
    merged = copy.copy(programs[0])
    for name, first in vars(programs[0]).items():
        if name not in _ENGINE_SET:
            setattr(merged, name, _merge([vars(p).get(name, first) for p in programs]))
    return merged


def _merge(values):
    first = values[0]
    if isinstance(first, dict):   # e.g. arrays handed to init through a dict
        return {k: _merge([v[k] for v in values]) for k in first}
    if first is None or np.ndim(first) == 0:
        if all(v is first or (v is not None and np.ndim(v) == 0 and v == first) for v in values):
            return first   # one value for every lane
        return np.asarray(values)
    return np.stack([np.asarray(v) for v in values], axis=-1)


def lane_converged(program, lanes):
    """The program's ``converged()`` as one flag per lane."""
    flag = np.asarray(program.converged(), dtype=bool)
    return np.broadcast_to(flag.reshape(-1) if flag.size == lanes else flag, (lanes,)).copy()


def split_results(programs, store, state, stats, iterations, converged, info, seconds):
    """One Result per lane; the iterations' statistics (shared by every lane) go with the first."""
    out = []
    for k, program in enumerate(programs):
        values = {f: np.ascontiguousarray(a[:, k]) for f, a in state.items()}
        r = Result.of(program, store, values, {}, stats if k == 0 else [], converged[k], info,
                      seconds if k == 0 else 0.0)
        r.iterations = int(iterations[k])
        out.append(r)
    return out


class Instances:
    """Which program instances of a run go on: one (``lanes`` None, Session.run) or one per
    lane (Session.run_lanes). An instance stops when it has no active vertex or, after an
    iteration, its ``converged()`` says so; the run stops when every instance has, or at
    ``limit`` iterations (an instance then counts as converged by the same two tests)."""

    def __init__(self, program, lanes):
        self.program, self.lanes = program, lanes
        count = 1 if lanes is None else lanes
        self.alive = np.ones(count, dtype=bool)
        self.converged = np.zeros(count, dtype=bool)
        self.iterations = np.zeros(count, dtype=np.int64)

    def stop(self, it, limit, active):
        """Before iteration ``it`` + 1, with ``active`` vertices per instance: whether the run
        ends (the instances that stop now are set aside, converged or not)."""
        done = np.asarray(active) == 0
        if it > 0 and (self.alive & ~done).any():
            done |= self._converged_flags()
        if it >= limit:
            self.converged |= done & self.alive
            return True
        self.converged |= done & self.alive
        self.alive &= ~done
        if not self.alive.any():
            return True
        self.iterations[self.alive] += 1
        return False

    def _converged_flags(self):
        if self.lanes is None:
            return np.array([bool(self.program.converged())])
        return lane_converged(self.program, self.lanes)
