"""Lanes on the CPU (Session.run_lanes): several runs of one program class at once, every vertex
field an (n, lanes) array and one frontier per lane. Lanes always pull: an iteration runs the
union of the lanes' active vertices, and each lane keeps its values where it is not active."""
import time

import numpy as np

from .strategy_pull import Pull


class Lanes(Pull):
    """Pull plans over lanes; owns each lane's frontier (this iteration's and the next, flat
    (n * capacity) arrays viewed as (n, lanes in use)), the lanes still running and the seed."""

    def __init__(self, ex, shape, masks):
        super().__init__(ex)
        self.alive = self.seed = None
        self._full = (np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)) if masks else None
        self.mask = self.next = None

    def use(self, count):
        """Run ``count`` lanes: views of the first ``n * count`` flags."""
        if self._full is not None:
            n = self.ex.n
            self.mask, self.next = (a[:n * count].reshape(n, count) for a in self._full)

    def start(self, mask):
        """A run starts: every lane alive, from the (n, lanes) seed ``mask`` (None: every vertex
        active). Returns the seed's union over the lanes (None for None)."""
        self.alive = np.ones(self.ex.L, dtype=bool)
        if mask is None:
            if self.mask is not None:
                self.mask.fill(True)
            return None
        self.seed = np.asarray(mask, dtype=bool)
        return self.seed.any(axis=1)

    def schedule(self, mask):
        """A scheduled program's (n, lanes) active vertices of the next iteration."""
        self.mask[...] = mask
        self.ex.frontier.ids = np.flatnonzero(mask.any(axis=1))

    def set_lanes(self, alive):
        """Run only the lanes marked in ``alive`` from now on (the others stay as they are).
        Returns the active vertices per shard of the union."""
        frontier = self.ex.frontier
        self.alive = np.asarray(alive, dtype=bool)
        if self.mask is not None:
            self.mask[:, ~self.alive] = False
            frontier.ids = np.flatnonzero(self.mask.any(axis=1))
            return frontier.counts(frontier.ids)
        return np.diff(self.ex.intervals)

    def _keep(self, index, changed, written):
        """Lanes where a vertex is not active (or the lane stopped) keep their values."""
        if self.mask is not None:
            keep = self.mask[index]
        elif not self.alive.all():
            keep = self.alive[None, :]
        else:
            return changed, written
        out = {f: np.where(keep, val, self.ex.cur[f][index]) for f, val in written.items()}
        return changed & keep, out

    def _changed(self, plan, unit, piece, ctx, index, changed, written):
        ctx["rows"] = np.arange(index.start, index.stop) if isinstance(index, slice) else index
        ctx["changed"] = changed
        return int(changed.sum())

    def activate(self, plan, unit, piece):
        t0 = time.perf_counter()
        if plan.seed:
            rows = self.ex.frontier.slice(self.ex.frontier.seed, unit)
            changed = self.seed[rows]
        else:
            ctx = self.ctx[unit]
            rows, changed = ctx["rows"], ctx["changed"]
        some = changed.any(axis=1)
        if some.any():
            flat = self.ex.kern.activate_lanes(piece, rows[some], changed[some])
            self.next.reshape(-1)[flat] = True
        self.ex.tally.timed("activate", t0)

    def publish(self, plan):
        frontier = self.ex.frontier
        if not plan.frontier:
            frontier.ids = None
            return
        self.mask, self.next = self.next, self.mask
        self.next.fill(False)
        frontier.ids = np.flatnonzero(self.mask.any(axis=1))

    def flat(self):
        """Every lane's next frontier (after publish) as sorted flat ids ``vertex * lanes + lane``
        (None for topology-driven lanes, which keep no masks)."""
        return None if self.mask is None else np.flatnonzero(self.mask)

    def adopt(self, flat):
        """Every lane's next frontier from flat ids (:meth:`flat`'s, united over ranks)."""
        self.mask.fill(False)
        self.mask.reshape(-1)[flat] = True
        self.ex.frontier.ids = np.flatnonzero(self.mask.any(axis=1))

    def read_back(self, plan, rb):
        rb.lane_active = self.mask.sum(axis=0) if self.mask is not None else self.alive * self.ex.n
