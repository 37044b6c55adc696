"""Push plans on the CPU: messages from the changed vertices along their edges, combined per
receiver.

A push plan's unit walks the edges its changed vertices send along (out-edges for
``gather_edges = "in"``, in-edges for "out", both for "all") and evaluates ``gather_map`` on
each with the roles of the receiver's pull gather (so the message is the one pull computes),
or once per sender where the message reads only the sender (absorbed receiver terms peeled
off: grstream/program/push.py ``sender_map``), repeated over its edges. The sender's edges come
from scipy's C row indexing of the CSR (range expansion and gather in one pass). Each unit then
combines its (receiver, message) pairs into a per-vertex accumulator with ``ufunc.at``
(numpy >= 1.25 runs it in C, ~15x faster than sorting the messages by receiver), on its worker
thread under a lock, so that one unit's combining overlaps another's walk. The accumulator is
held at the monoid's identity between iterations and reset only at the receivers. The single
apply after the units runs over the receivers. One message value for a whole unit (BFS's level)
of an idempotent monoid is folded instead: its targets' flags are marked, and when the unit's
sends end the flags are scanned and the value combined once per receiver (~3x cheaper per edge
than ``ufunc.at``). A unit's senders send in parts of at most segments.CHUNK_EDGES edges, so
that the messages held at once stay within the executor's scratch.

An asynchronous plan (IterationPlan.push_async) runs its units in order, each sending from its
shards' unsent vertices (the changed set at the start, plus those earlier units changed), then
applying its receivers at once, writing ``cur`` and marking the changed ones unsent; the
vertices still unsent at the end are the changed set the plan records.

The receivers are found in the plan's frontier format: "queue" stamps each message's position
into a per-vertex array and keeps the messages whose stamp survived (one per receiver, O(k)),
then sorts those; "bitmap" marks a per-vertex flag and scans it (O(n), cheaper when most
vertices receive), or, for absorbing programs (where ``apply(v, identity)`` changes nothing),
scans the accumulator for entries that left the identity. An asynchronous plan chooses per unit
by its message count (stamps below n/16, else flags or the accumulator's scan).
"""
import threading
import time

import numpy as np

from .pieces import unit_spans
from .segments import _ones, expand_ranges, row_chunks
from .strategy import Strategy
from ...program.push import sender_map
from ...program.views import EdgeView, ExpandedView, VertexView, as_length

#: (indptr, neighbour ids) a changed vertex sends along for each gather direction: out-edges for
#: "in" (its out-neighbours gather over in-edges from it), in-edges for "out"
SENDS = {"in": ("out/indptr", "out/dst", "out"), "out": ("in/indptr", "in/src", "in")}


#: a uniform message (one value for every edge of a unit) is folded in through the receiver
#: flags when its edges are at least this fraction of n: marking 1-byte flags and scanning them
#: costs less than ``ufunc.at`` on the accumulator (docs/BENCHMARKS.md, "Measured constants")
UNIFORM_SHARE = 1 / 16


def stamp_dtype(n, num_edges):
    """dtype of the receivers' stamps: a stamp is a message's position in its plan, and a plan
    sends at most one message per edge and direction, so int32 only while both the vertices and
    twice the edges stay below 2**31 (positions must stay distinct)."""
    return np.dtype(np.int32 if max(int(n), 2 * int(num_edges)) < 2**31 else np.int64)


def push_static(spec, n, num_edges=0):
    """The per-vertex arrays push needs: {name: bytes} (accumulator, stamp, flags, the unsent
    flags of asynchronous push plans, and the compiled kernels' one bit a vertex) on a store of
    ``n`` vertices and ``num_edges`` edges."""
    stamp = stamp_dtype(n, num_edges).itemsize
    return {"push/acc": n * spec.gather_dtype.itemsize, "push/stamp": n * stamp, "push/flag": n,
            "push/unsent": n, "push/seen": 8 * ((n + 63) // 64)}


def _sender_fn(spec, d):
    """``f(program, senders' view)`` -> one message per sender over ``d``-edges, or None."""
    peeled = sender_map(spec, d) if spec.push_ok and spec.gather_from == "all" else None
    if peeled is not None:
        return peeled
    if spec.analysis.gather_uses <= ({"src"} if d == "in" else {"dst"}):
        if d == "in":
            return lambda program, view: program.gather_map(view, None, None)
        return lambda program, view: program.gather_map(None, view, None)
    return None


class Push(Strategy):
    """Push plans, and the push state of one CPU executor (its arrays are taken from the
    executor's ledger)."""

    def __init__(self, ex, ledger):
        super().__init__(ex)
        self._all_edges = None   # edges_of(None), once
        spec, n = ex.spec, ex.n
        for name, nbytes in push_static(spec, n, ex.store.num_edges).items():
            ledger.take("device", name, nbytes)
        self.identity = spec.gather_reduce.identity(spec.gather_dtype)
        self.acc = np.full(n, self.identity, dtype=spec.gather_dtype)
        self.stamp = np.zeros(n, dtype=stamp_dtype(n, ex.store.num_edges))
        self.flag = np.zeros(n, dtype=bool)
        self._pending = None
        # asynchronous plans: vertices whose newest value no unit has sent yet
        self.unsent = np.zeros(n, dtype=bool)
        self.lock = threading.Lock()
        self.idempotent = spec.gather_reduce.idempotent
        self._start("bitmap")
        self.dirs = ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,)
        # a message that reads only the sender is computed once per sender, then repeated;
        # absorbing programs may leave out receiver terms that apply adds back (sender_map)
        self.sender_fn = {d: _sender_fn(spec, d) for d in self.dirs}
        self.per_sender = {d: f is not None for d, f in self.sender_fn.items()}
        # absorbing programs (push.py): apply(v, identity) changes nothing, so the receivers may
        # be found as the vertices whose accumulator left the identity
        self.absorbing = spec.push_ok and spec.gather_from == "all"

    def forget(self):
        """A run starts (the fields are set anew): nothing of an earlier run's sends holds (the
        numpy passes keep nothing between plans)."""

    # ------------------------------------------------------------------ per unit
    def send(self, piece, senders, full, keep=False):
        """([(receivers, messages) per direction], edges walked) of ``senders`` (sorted global
        ids of the unit's changed vertices; ``full``: they are every vertex of the piece's
        span; ``keep``: the piece's arrays stay until the apply, so the pairs may view them)."""
        ex = self.ex
        dtype = ex.spec.gather_dtype
        pairs, walked = [], 0
        local = senders - piece.lo
        for d in self.dirs:
            ptr_name, ids_name, side = SENDS[d]
            indptr, ids = piece.arrays[ptr_name], piece.arrays[ids_name]
            if self.per_sender[d]:
                other, seg, _ = self._targets(indptr, ids, local, full, keep, rows=True)
                if len(other):
                    walked += len(other)
                    value = self._message(d, senders)
                    msg = value if np.ndim(value) == 0 else np.repeat(value, np.diff(seg))
                    pairs.append((other, msg))
                continue
            other, seg, sel = self._targets(indptr, ids, local, full, keep)
            m = len(other)
            if m == 0:
                continue
            walked += m
            sent = ExpandedView(VertexView(ex.cur, ex.builtins, senders, len(senders)), np.diff(seg))
            got = VertexView(ex.cur, ex.builtins, other, m)
            src, dst = (sent, got) if d == "in" else (got, sent)
            edge = EdgeView(ex.kern.edge_props(piece, side, sel))
            msg = as_length(ex.program.gather_map(src, dst, edge), m, dtype)
            if (full and not keep) or not msg.flags.owndata:  # (per-edge: an array)
                msg = msg.copy()
            pairs.append((other, msg))
        return pairs, walked

    def _message(self, d, senders):
        """The senders' one message each over ``d``-edges: one scalar where every sender sends
        the same (BFS: the level just reached), so that no per-edge copy is made and an
        idempotent monoid folds it (a split of the strongest message's senders from the others,
        most of the edges of a CC iteration, was measured and not kept: the extra row gathers and
        flag scans cost what the fold saved)."""
        ex = self.ex
        per = self.sender_fn[d](ex.program, VertexView(ex.cur, ex.builtins, senders, len(senders)))
        per = as_length(per, len(senders), ex.spec.gather_dtype)
        return per[0] if (per == per[0]).all() else per

    def _targets(self, indptr, ids, local, full, keep, rows=False):
        """(neighbour ids, offsets per row, edge selection or None) of rows ``local``; ``rows``:
        only the ids are needed, so scipy's row indexing may gather them."""
        if rows and not full and self._dense_span(indptr, local):
            # scipy's C row indexing of the CSR does the range expansion and the gather in one
            # pass (it converts the senders' span of indptr: for senders spread thinly,
            # expanding costs less)
            other, seg = self._rows(indptr, ids, local)
            return other, seg, None
        if full:
            e0, e1 = int(indptr[local[0]]), int(indptr[local[-1] + 1])
            sel = slice(e0, e1)
            seg = indptr[local[0]:local[-1] + 2] - e0
        else:
            sel, seg = expand_ranges(indptr, local)
        # the pairs outlive the unit, whose streaming slot is then refilled: no views
        return (ids[sel].copy() if full and not keep else ids[sel]), seg, sel

    @staticmethod
    def _dense_span(indptr, local):
        """The senders' edges outnumber the vertices their span covers, so converting the
        span's offsets for scipy's row indexing costs less than expanding the ranges."""
        edges = int(indptr[local + 1].sum() - indptr[local].sum())
        return int(local[-1]) - int(local[0]) <= 2 * edges

    def _rows(self, indptr, ids, local):
        """(neighbour ids, offsets) of rows ``local`` (sorted) of the CSR (indptr, ids): the
        CSR of the rows' span, as a scipy matrix over views of the arrays, indexed by row.
        scipy copies an index array that is under half of the array it views: where the rows'
        span holds a quarter of the edges or more, the matrix spans every row instead."""
        first, last = int(local[0]), int(local[-1]) + 1
        e0, e1 = int(indptr[first]), int(indptr[last])
        if 4 * (e1 - e0) >= len(ids) and int(indptr[0]) == 0 and int(indptr[-1]) == len(ids):
            first, last, e0, e1 = 0, len(indptr) - 1, 0, len(ids)
        small = e1 - e0 < 2**31 - 1 and ids.dtype == np.int32
        ptr = indptr[first:last + 1] - e0
        ptr = ptr.astype(np.int32) if small else ptr
        span = ids[e0:e1] if small else ids[e0:e1].astype(np.int64)
        import scipy.sparse as sp   # (imported where used: compiled push plans never need it)
        mat = sp.csr_matrix((_ones(e1 - e0, np.int8), span, ptr),
                            shape=(last - first, max(self.ex.n, 1)), copy=False)
        sub = mat[local - first]
        return sub.indices, sub.indptr

    # ------------------------------------------------------------------ combining
    def _start(self, fmt, asynchronous=False):
        """A push plan starts: receivers are found in frontier format ``fmt``, or per unit when
        the plan is asynchronous (by the unit's message count: stamps for few, flags for many)."""
        self.fmt, self._found, self._base = fmt, [], 0
        self.asynchronous, self._unit_finder = asynchronous, None

    def _finder(self, total):
        """How the receivers of a unit's ``total`` messages are found: "queue" (stamps), "flag"
        (flags) or "bitmap" (flags, or the accumulator's scan for absorbing programs)."""
        if not self.asynchronous:
            return self.fmt
        if total < self.ex.n * UNIFORM_SHARE:
            return "queue"
        # absorbing: scanning the accumulator beats flagging the targets and scanning the flags
        # from n/16 targets on (docs/BENCHMARKS.md, "Measured constants")
        return "bitmap" if self.absorbing else "flag"

    def accumulate(self, pairs, total=None):
        """Combine (targets, messages) pairs into the accumulator at once, on the unit's worker
        thread (one at a time: ufunc.at is not atomic), so that it overlaps other units' sends;
        and mark the receivers as the frontier format finds them (``total``: the unit's
        messages, of which ``pairs`` may be a part; default the pairs')."""
        ufunc = self.ex.spec.gather_reduce.ufunc
        if total is None:
            total = sum(len(t) for t, _ in pairs)
        finder = self._unit_finder = self._finder(total)
        with self.lock:
            done = []
            for targets, msgs in pairs:
                if not len(targets):
                    continue
                if self._folds(msgs, total, finder):
                    # a uniform message of an idempotent monoid: its targets are flagged, and
                    # the value is combined once per receiver when the unit's sends end (flush)
                    if self._pending is not None and self._pending != msgs:
                        done.append(self._fold())
                    self._pending = msgs
                    self.flag[targets] = True
                    continue
                ufunc.at(self.acc, targets, msgs)
                done.append(targets)
            self._record(done, finder)

    def _folds(self, msgs, total, finder):
        """A uniform message of an idempotent monoid, over many edges, where the flags are free
        (the frontier format records no receiver in them)."""
        return (np.ndim(msgs) == 0 and self.idempotent and total >= self.ex.n * UNIFORM_SHARE
                and (finder == "queue" or (finder == "bitmap" and self.absorbing)))

    def flush(self):
        """The unit's sends ended: fold the flagged uniform message into its receivers."""
        with self.lock:
            if self._pending is not None:
                self._record([self._fold()], self._unit_finder)

    def _fold(self):
        """Combine the pending uniform value once into every flagged receiver (an idempotent
        monoid gives what ufunc.at gives with repeats); returns the receivers, unique."""
        receivers = np.flatnonzero(self.flag)
        self.flag[receivers] = False
        self.acc[receivers] = self.ex.spec.gather_reduce.ufunc(self.acc[receivers], self._pending)
        self._pending = None
        return receivers

    def _record(self, done, finder):
        """Mark the receivers ``done`` (arrays of targets) as the frontier format finds them."""
        for targets in done:
            if finder == "queue":
                # each receiver keeps the position of one of its messages, whichever write
                # lands last: exactly one message per receiver finds its own position there
                positions = np.arange(self._base, self._base + len(targets), dtype=self.stamp.dtype)
                self.stamp[targets] = positions
                self._found.append((targets, positions))
                self._base += len(targets)
            elif finder == "flag" or not self.absorbing:
                self.flag[targets] = True

    def combine(self):
        """(sorted receivers, their accumulated message) after every unit's accumulate (after
        each unit's, in an asynchronous plan)."""
        finder = self._unit_finder if self.asynchronous else self.fmt
        self._unit_finder = None
        if finder == "queue" and self._found:   # stamps
            out = [t[self.stamp[t] == p] for t, p in self._found]
            self._found, self._base = [], 0
            receivers = np.concatenate(out) if len(out) > 1 else out[0]
            receivers.sort()
            receivers = receivers.astype(np.int64, copy=False)
        elif finder in (None, "queue"):   # nothing was sent
            receivers = np.zeros(0, dtype=np.int64)
        elif finder == "bitmap" and self.absorbing:
            # apply(v, identity) changes nothing here: the receivers that matter are the
            # vertices whose accumulator left the identity
            receivers = np.flatnonzero(self.acc != self.identity)
        else:
            receivers = np.flatnonzero(self.flag)
            self.flag[receivers] = False
        acc = self.acc[receivers]
        self.acc[receivers] = self.identity   # held at the identity for the next push
        return receivers, acc

    # ------------------------------------------------------------------ the plan primitives
    def begin(self, plan):
        super().begin(plan)
        self._start(plan.frontier_format, plan.push_async)
        if plan.push_async:
            self.start_async(self.ex.frontier.changed)

    def done(self, unit):
        pass

    def gather(self, plan, unit, piece):
        """A push plan's gather of ``unit``: its changed vertices' messages, kept for apply."""
        t0 = time.perf_counter()
        ex = self.ex
        lo, hi = ex.frontier.span(unit)
        changed_ids = ex.frontier.changed
        if self.asynchronous:
            senders = self._unsent(unit)
        elif changed_ids is None:   # an unseeded start: every vertex counts as changed
            senders = np.concatenate([np.arange(ex.intervals[i], ex.intervals[i + 1])
                                      for i in unit.shards]).astype(np.int64)
        else:
            senders = ex.frontier.slice(changed_ids, unit)
        if len(senders):
            self.send_all(piece, senders, len(senders) == hi - lo, unit.transfer != "copy")
        ex.tally.timed("gather", t0)

    def send_all(self, piece, senders, full, keep):
        """Send from ``senders`` (sorted, non-empty; ``full`` and ``keep`` as :meth:`send`)
        and combine their messages into the accumulator."""
        # in parts of at most segments.CHUNK_EDGES edges, so that the messages and the
        # receivers' ids stay within the executor's scratch (a part of every vertex of the
        # span is contiguous: "full" holds for each)
        offsets = np.zeros(len(senders) + 1, dtype=np.int64)
        local = senders - piece.lo
        np.cumsum(sum(piece.arrays[SENDS[d][0]][local + 1] - piece.arrays[SENDS[d][0]][local]
                      for d in self.dirs), out=offsets[1:])
        for r0, r1 in row_chunks(offsets):
            pairs, walked = self.send(piece, senders[r0:r1], full=full, keep=keep)
            self.accumulate(pairs, total=int(offsets[-1]))
            self.ex.tally.add(edges=walked)
        self.flush()

    def apply(self, plan, unit, piece):
        """The plan's one apply (an asynchronous plan's apply of a unit): over the receivers;
        the changed ones are the changed set (asynchronous: marked unsent, and the values
        written to ``cur`` too)."""
        t0 = time.perf_counter()
        self.receive(*self.combine())
        self.ex.tally.timed("apply", t0)

    def receive(self, receivers, acc):
        """The apply over ``receivers`` (sorted) with their combined messages ``acc``."""
        ex = self.ex
        receivers, written, changed = self._apply_receivers(receivers, acc)
        if self.asynchronous:   # (cur holds the values already; the changed set: publish)
            ex.tally.add(changed=len(changed))
        else:
            self.applied.append((receivers, tuple(written)))
            ex.frontier.changed = self.changed_ids = changed
            ex.tally.add(changed=len(changed))

    def publish(self, plan):
        """The record after a push is its changed set (asynchronous: the vertices no unit
        sent)."""
        frontier = self.ex.frontier
        self.ex.sources.record(frontier.changed)
        if self.asynchronous:
            frontier.changed = self.end_async()
        frontier.ids = frontier.changed

    def _apply_receivers(self, receivers, acc):
        """(receivers, {field: new values}, changed ids) of the apply over the receivers."""
        ex = self.ex
        if len(receivers) == 0:
            return receivers, {}, receivers
        v = VertexView(ex.cur, ex.builtins, receivers, len(receivers), writable=True)
        changed = as_length(ex.program.apply(v, acc), len(receivers), np.bool_)
        written = v.assigned()
        for f, val in written.items():
            ex.nxt[f][receivers] = val
            if self.asynchronous:
                ex.cur[f][receivers] = val
        changed = receivers[changed]
        if self.asynchronous:
            self.unsent[changed] = True
        return receivers, written, changed

    # ------------------------------------------------------------------ asynchronous plans
    def start_async(self, changed_ids):
        """An asynchronous plan starts: the changed set (None: every vertex) is unsent."""
        if changed_ids is None:
            self.unsent.fill(True)
        else:
            self.unsent[changed_ids] = True

    def _unsent(self, unit):
        """The unit's unsent vertices (sorted), now counted as sent. (Push units hold whole
        shards: engine/transfers.py compacts pull units only.)"""
        spans = unit_spans(self.ex.intervals, unit.shards)
        parts = [np.flatnonzero(self.unsent[a:b]) + a for a, b in spans]
        senders = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.unsent[senders] = False
        return senders

    def end_async(self):
        """The plan ended: the vertices no unit sent (sorted), left for the next plan."""
        ids = np.flatnonzero(self.unsent)
        self.unsent[ids] = False
        return ids

    def edges_of(self, ids, degrees):
        """Edges a push from ``ids`` (None: every vertex) walks, from the store's degrees."""
        if ids is None:   # every vertex: the total, summed once per executor
            if self._all_edges is None:
                self._all_edges = int(sum(int(d.sum()) for d in degrees))
            return self._all_edges
        return int(sum(int(d[ids].sum()) for d in degrees))
