"""Lanes on the GPU (Session.run_lanes): several runs of one program class at once.

Every per-instance device array is held once per lane, lane-major: lane k's copy of a vertex
field, of the frontier bitmaps, of the accumulator, the changed flags and the hoisted messages
starts ``k`` strides (each rounded up to the 256-byte alignment) after the allocation's start.
The executor runs each phase of a unit once per lane that has work in it, with the ordinary
kernels: :meth:`LaneRuns.enter` points the device state at the lane's arrays and copies the
lane's program arguments (its parameters, its field addresses) into the module's ``g``
constant, in stream order, from a device table of every lane's arguments uploaded once per
iteration. Shard data is delivered once per unit and read by every lane's kernels.

The host keeps each lane's current frontier (downloaded with the read back: lanes are for
graphs where n x lanes is small) to skip the lanes without active vertices in a shard and to
report the union's active vertices per shard and each lane's count. A lane that stops keeps its
values: its ``nxt`` takes its ``cur`` then, so that later swaps of the pair leave it as it is.
"""
import copy

import numpy as np

from .buffers import align


def one_lane(program, k):
    """The instance of lane ``k`` of a merged lane program (grstream/engine/lanes.py): its
    parameters that differ between lanes, (lanes,) arrays, as lane ``k``'s scalar."""
    one = copy.copy(program)
    for name, value in vars(program).items():
        if isinstance(value, np.ndarray) and value.ndim == 1:
            setattr(one, name, value[k])
    return one


class LaneRuns:
    """The lanes of a CUDA executor built for ``capacity`` lanes (module docstring)."""

    def __init__(self, ex, capacity, acc_len, flags_len):
        self.ex, self.dev = ex, ex.dev
        dev = self.dev
        self.cap = self.count = int(capacity)
        self.n, self.words = dev.n, (dev.n + 31) // 32
        sizes = {f: dt.itemsize for f, dt in ex.spec.vertex_fields.items()}
        msg = ex.ks.msg_dtype.itemsize
        # per-lane strides (bytes) of every lane-major array
        self.field_stride = {f: align(max(self.n * s, 1)) for f, s in sizes.items()}
        self.front_stride = align(max(4 * self.words, 1))
        self.acc_stride = align(max(int(acc_len) * msg, 1))
        self.flags_stride = align(max(int(flags_len), 1))
        self.hmsg_stride = align(max(self.n * msg, 1))
        self.args_size = dev.translated.args_dtype.itemsize
        self.args = dev.mem["lane arguments"]
        # the allocations' starts (lane 0); publish swaps cur / nxt and the frontier pair here
        self.cur, self.nxt = dict(dev.cur), dict(dev.nxt)
        self.front = list(dev.front)
        self.acc, self.flags, self.hmsg = dev.acc, dev.changed, dev.hmsg
        self.alive = np.ones(self.cap, dtype=bool)
        self.mask = None        # (count, n) bool: each lane's current frontier; None: every vertex
        self.seed = None        # (count, n) bool: each lane's seed (a seeding plan's)
        self.lane = None        # the lane the device state points at (None: the bases)
        self._shards = (None, None)   # (mask, its (count, shards) table): _shard_table's last

    # ------------------------------------------------------------------ lanes in use
    def use(self, count):
        if count > self.cap:
            raise ValueError(f"{count} lanes on an executor of {self.cap}")
        self.count = int(count)
        self.alive = np.ones(self.count, dtype=bool)
        self.mask = self.seed = None

    def enter(self, k, plan=None):
        """Point the device state at lane ``k``'s arrays and the kernels' arguments at its
        instance (stream order); ``plan``: the executor's per-plan addresses follow."""
        dev, ex, k = self.dev, self.ex, int(k)
        at = lambda base, stride: 0 if base is None else int(base) + k * stride   # noqa: E731
        dev.cur = {f: at(a, self.field_stride[f]) for f, a in self.cur.items()}
        dev.nxt = {f: at(a, self.field_stride[f]) for f, a in self.nxt.items()}
        dev.front = [at(f, self.front_stride) for f in self.front]
        dev.acc, dev.changed = at(self.acc, self.acc_stride), at(self.flags, self.flags_stride)
        dev.hmsg = None if self.hmsg is None else at(self.hmsg, self.hmsg_stride)
        dev.cuda.memcpy_dtod_async(dev.g_ptr, int(self.args) + k * self.args_size, self.args_size,
                                   dev.ex.compute)
        if plan is not None:
            ex._front = 0 if plan.all_active else int(dev.front[0])
            ex._hmsg = 0 if dev.hmsg is None else int(dev.hmsg)
        self.lane = k

    def leave(self):
        """Point the device state back at the allocations (lane 0's arrays)."""
        dev = self.dev
        dev.cur, dev.nxt, dev.front = dict(self.cur), dict(self.nxt), list(self.front)
        dev.acc, dev.changed, dev.hmsg = self.acc, self.flags, self.hmsg
        self.lane = None

    def running(self, plan, shards=None):
        """The lanes with work in ``shards`` (None: any): alive, and with an active vertex
        there unless every vertex is active (a seeding plan: a seed vertex)."""
        lanes = np.flatnonzero(self.alive).tolist()
        mask = self.seed if plan.seed else (None if plan.all_active else self.mask)
        if mask is None or shards is None:
            return lanes
        busy = self._shard_table(mask)[:, list(shards)].any(axis=1)
        return [k for k in lanes if busy[k]]

    def _shard_table(self, mask):
        """(count, shards) bool: whether lane k has a vertex of ``mask`` in shard i; made once
        per mask (an iteration's), not per unit and phase."""
        if self._shards[0] is not mask:
            iv = self.dev.intervals
            table = np.zeros((mask.shape[0], len(iv) - 1), dtype=bool)
            if self.n:
                lane, v = np.divmod(np.flatnonzero(mask), self.n)
                table[lane, np.searchsorted(iv, v, side="right") - 1] = True
            self._shards = (mask, table)
        return self._shards[1]

    def each(self, plan, shards=None):
        """Enter every lane of :meth:`running` in turn (the device state left at the bases)."""
        try:
            for k in self.running(plan, shards):
                self.enter(k, plan)
                yield k
        finally:
            self.leave()

    # ------------------------------------------------------------------ per iteration
    def upload(self, program):
        """Every lane's kernel arguments into the device table (one copy); its bytes."""
        dev, tr = self.dev, self.dev.translated
        members = set(tr.pointer_members)
        records = []
        for k in range(self.count):
            pointers = {"cur_" + f: int(a) + k * self.field_stride[f] for f, a in self.cur.items()}
            pointers.update({"nxt_" + f: int(a) + k * self.field_stride[f] for f, a in self.nxt.items()})
            pointers.update({d: int(mem) for d, mem in dev.deg.items()})
            pointers = {m: v for m, v in pointers.items() if m in members}
            records.append(np.frombuffer(tr.pack_args(one_lane(program, k), pointers), np.uint8))
        self._args_host = np.concatenate(records)   # (kept until the copy ran)
        dev.cuda.memcpy_htod_async(self.args, self._args_host, dev.ex.compute)
        return self._args_host.nbytes

    def swap(self, fields):
        for f in fields:
            self.cur[f], self.nxt[f] = self.nxt[f], self.cur[f]
        self.leave()

    def set_alive(self, alive):
        """Run only the lanes marked in ``alive``; a lane stopping now keeps its values (its
        ``nxt`` takes its ``cur``). Returns the union's active vertices per shard."""
        alive = np.array(alive, dtype=bool)   # (a copy: the engine's flags change in place)
        dev = self.dev
        for k in np.flatnonzero(self.alive & ~alive).tolist():
            for f, a in self.cur.items():
                nbytes = self.n * self.ex.spec.vertex_fields[f].itemsize
                if nbytes:
                    dev.cuda.memcpy_dtod_async(int(self.nxt[f]) + k * self.field_stride[f],
                                               int(a) + k * self.field_stride[f], nbytes, dev.ex.compute)
        self.alive = alive
        return self.union_counts()

    def union_counts(self):
        """Active vertices per shard of the union of the alive lanes' frontiers."""
        iv = self.dev.intervals
        if self.mask is None:
            return np.diff(iv)
        union = self.mask[self.alive].any(axis=0)
        ids = np.flatnonzero(union)
        return np.diff(np.searchsorted(ids, iv)).astype(np.int64)

    def set_seed(self, mask):
        """A run's (n, lanes) seed (None: every vertex active); returns its union's ids."""
        if mask is None:
            self.seed = self.mask = None
            return None
        self.seed = np.ascontiguousarray(np.asarray(mask, dtype=bool).T)
        return np.flatnonzero(self.seed.any(axis=0))

    def seed_ids(self, k):
        return np.flatnonzero(self.seed[k])

    def set_active(self, mask):
        """A scheduled program's (n, lanes) active vertices of the next iteration, uploaded as
        every lane's frontier bitmap."""
        self.mask = np.ascontiguousarray(np.asarray(mask, dtype=bool).T)
        return self._upload_bits(self.front[0], self.mask)

    def _upload_bits(self, base, mask):
        dev = self.dev
        if not self.words:
            return 0
        bits = np.zeros((mask.shape[0], self.front_stride * 8), dtype=bool)
        bits[:, :self.n] = mask
        words = np.packbits(bits, axis=1, bitorder="little").reshape(-1)
        dev.cuda.memcpy_htod(int(base), words)
        return words.nbytes

    def download_frontier(self):
        """Every lane's current frontier from the device (after the read back synchronised)."""
        raw = np.empty(self.count * self.front_stride, np.uint8)
        if raw.size and self.words:
            self.dev.cuda.memcpy_dtoh(raw, int(self.front[0]))
        rows = raw.reshape(self.count, self.front_stride)
        self.mask = np.unpackbits(rows, axis=1, count=self.n, bitorder="little").view(bool)   # (0 or 1: no copy)
        return raw.nbytes

    def lane_active(self):
        if self.mask is None:
            return self.alive * self.n
        return np.where(self.alive, self.mask.sum(axis=1), 0)

    def frontier_ids(self):
        """Flat ids ``vertex * lanes + lane`` of every lane's current frontier (ranks)."""
        return np.flatnonzero(self.mask.T) if self.mask is not None else None

    # ------------------------------------------------------------------ state in and out
    def upload_state(self, state):
        """The (n, lanes) initial fields, lane-major into ``cur`` and ``nxt``."""
        dev = self.dev
        for f, dt in self.ex.spec.vertex_fields.items():
            host = np.asarray(state[f], dtype=dt)
            stride = self.field_stride[f]
            raw = np.zeros((self.count, stride), np.uint8)
            raw[:, :self.n * dt.itemsize] = np.ascontiguousarray(host.T).view(np.uint8).reshape(self.count, -1)
            if raw.size:
                dev.cuda.memcpy_htod(int(self.cur[f]), raw)
                dev.cuda.memcpy_htod(int(self.nxt[f]), raw)

    def download_state(self):
        """The current fields as (n, lanes) host arrays."""
        dev = self.dev
        dev.wait_state()
        dev.ex.sync()
        out = {}
        for f, dt in self.ex.spec.vertex_fields.items():
            stride = self.field_stride[f]
            raw = np.empty((self.count, stride), np.uint8)
            if raw.size:
                dev.cuda.memcpy_dtoh(raw, int(self.cur[f]))
            lanes = raw[:, :self.n * dt.itemsize].copy().view(dt)   # (count, n)
            out[f] = np.ascontiguousarray(lanes.T)
        return out
