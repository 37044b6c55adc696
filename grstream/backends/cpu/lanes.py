"""The lanes of the CPU executor (Session.run_lanes): several runs of one program class at once,
every vertex field an (n, lanes) array and one frontier per lane. Lanes always pull."""
import numpy as np


class LaneMethods:
    """Methods of :class:`~grstream.backends.cpu.executor.CpuExecutor` that exist for lanes."""

    def _use_lanes(self, count):
        """Run ``count`` lanes (at most the capacity allocated): views of the first rows."""
        if count > self.cap:
            raise ValueError(f"{count} lanes on an executor of {self.cap}")
        full, n = self._full, self.n
        self.L = count

        def view(a):   # the first n * count elements as a contiguous (n, count) array
            return a[:n * count].reshape(n, count)
        self.cur = {f: view(a) for f, a in full["cur"].items()}
        self.nxt = {f: view(a) for f, a in full["nxt"].items()}
        if full["lmask"] is not None:
            self.lmask, self.lnext = view(full["lmask"]), view(full["lnext"])
        if full["acc"] is not None:
            self.acc_all = view(full["acc"])

    def set_lanes(self, alive):
        """Lanes only: run only the lanes marked in ``alive`` from now on (the others converged:
        their vertices stay as they are). Returns the active vertices per shard of the union."""
        self.alive = np.asarray(alive, dtype=bool)
        if self.lmask is not None:
            self.lmask[:, ~self.alive] = False
            self.front_ids = np.flatnonzero(self.lmask.any(axis=1))
            return np.diff(np.searchsorted(self.front_ids, self.intervals))
        return np.diff(self.intervals)

    def _mask_lanes(self, index, changed, written):
        """Lanes where a vertex is not active (or the lane stopped) keep their values."""
        if self.lmask is not None:
            keep = self.lmask[index]
        elif not self.alive.all():
            keep = self.alive[None, :]
        else:
            return changed, written
        out = {f: np.where(keep, val, self.cur[f][index]) for f, val in written.items()}
        return changed & keep, out

    def _activate_lanes(self, plan, unit, piece):
        if plan.seed:
            rows = self._slice_ids(self.seed_ids, unit)
            changed = self.seed_lanes[rows]
        else:
            ctx = self._ctx[unit]
            rows, changed = ctx["rows"], ctx["changed"]
        some = changed.any(axis=1)
        if some.any():
            flat = self.kern.activate_lanes(piece, rows[some], changed[some])
            self.lnext.reshape(-1)[flat] = True
