"""Push on the CPU: messages from the changed vertices along their edges, combined per receiver.

A push plan's unit walks the edges its changed vertices send along (out-edges for
``gather_edges = "in"``, in-edges for "out", both for "all") and evaluates ``gather_map`` on
each with the roles of the receiver's pull gather (so the message is the one pull computes);
units keep their (receiver, message) pairs. The single apply after the units combines them:
``ufunc.at`` into a per-vertex accumulator (numpy >= 1.25 runs it in C, ~15x faster than
sorting the messages by receiver) held at the monoid's identity between iterations and reset
only at the receivers, so no step scans the n vertices, then apply runs over the receivers.

The receivers are found in the plan's frontier format: "queue" stamps each message's position
into a per-vertex array and keeps the messages whose stamp survived (one per receiver, O(k)),
then sorts those; "bitmap" marks a per-vertex flag and scans it (O(n), cheaper when most
vertices receive).
"""
import numpy as np

from .segments import expand_ranges
from ...program.views import EdgeView, ExpandedView, VertexView, as_length

#: (indptr, neighbour ids) a changed vertex sends along for each gather direction: out-edges for
#: "in" (its out-neighbours gather over in-edges from it), in-edges for "out"
SENDS = {"in": ("out/indptr", "out/dst", "out"), "out": ("in/indptr", "in/src", "in")}


def push_static(spec, n):
    """The per-vertex arrays push needs: {name: bytes} (accumulator, stamp, flags)."""
    stamp = 4 if n < 2**31 else 8
    return {"push/acc": n * spec.gather_dtype.itemsize, "push/stamp": n * stamp, "push/flag": n}


class Pusher:
    """The push state of one CPU executor (its arrays are taken from the executor's ledger)."""

    def __init__(self, ex, ledger):
        self.ex = ex
        spec, n = ex.spec, ex.n
        for name, nbytes in push_static(spec, n).items():
            ledger.take("device", name, nbytes)
        self.identity = spec.gather_reduce.identity(spec.gather_dtype)
        self.acc = np.full(n, self.identity, dtype=spec.gather_dtype)
        self.stamp = np.zeros(n, dtype=np.int32 if n < 2**31 else np.int64)
        self.flag = np.zeros(n, dtype=bool)
        self.dirs = ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,)
        uses = spec.analysis.gather_uses
        # a message that reads only the sender is computed once per sender, then repeated
        self.per_sender = {d: uses <= ({"src"} if d == "in" else {"dst"}) for d in self.dirs}

    # ------------------------------------------------------------------ per unit
    def send(self, piece, senders, full):
        """(receivers, messages, edges walked) of ``senders`` (sorted global ids of the unit's
        changed vertices; ``full``: they are every vertex of the piece's span)."""
        ex = self.ex
        dtype = ex.spec.gather_dtype
        targets, msgs, walked = [], [], 0
        local = senders - piece.lo
        for d in self.dirs:
            ptr_name, ids_name, side = SENDS[d]
            indptr, ids = piece.arrays[ptr_name], piece.arrays[ids_name]
            if full:
                e0, e1 = int(indptr[local[0]]), int(indptr[local[-1] + 1])
                sel = slice(e0, e1)
                seg = indptr[local[0]:local[-1] + 2] - e0
            else:
                sel, seg = expand_ranges(indptr, local)
            # the pairs outlive the unit, whose streaming slot is then refilled: no views of it
            other = ids[sel].copy() if full else ids[sel]
            m = len(other)
            if m == 0:
                continue
            walked += m
            counts = np.diff(seg)
            if self.per_sender[d]:
                one = VertexView(ex.cur, ex.builtins, senders, len(senders))
                per = (ex.program.gather_map(one, None, None) if d == "in"
                       else ex.program.gather_map(None, one, None))
                msg = np.repeat(as_length(per, len(senders), dtype), counts)
            else:
                sent = ExpandedView(VertexView(ex.cur, ex.builtins, senders, len(senders)), counts)
                got = VertexView(ex.cur, ex.builtins, other, m)
                src, dst = (sent, got) if d == "in" else (got, sent)
                edge = EdgeView(ex.kern.edge_props(piece, side, sel))
                msg = as_length(ex.program.gather_map(src, dst, edge), m, dtype)
                if full or not msg.flags.owndata:
                    msg = msg.copy()
            targets.append(other)
            msgs.append(msg)
        if not targets:
            return None, None, 0
        if len(targets) == 1:
            return targets[0], msgs[0], walked
        return np.concatenate(targets), np.concatenate(msgs), walked

    # ------------------------------------------------------------------ after the units
    def combine(self, parts, fmt):
        """(sorted receivers, their accumulated message) of every unit's (targets, messages)."""
        parts = [p for p in parts if p[0] is not None and len(p[0])]
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=self.acc.dtype)
        targets = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
        msgs = parts[0][1] if len(parts) == 1 else np.concatenate([p[1] for p in parts])
        targets = targets.astype(np.intp, copy=False)
        self.ex.spec.gather_reduce.ufunc.at(self.acc, targets, msgs)
        receivers = self._receivers(targets, fmt)
        acc = self.acc[receivers]
        self.acc[receivers] = self.identity   # held at the identity for the next push
        return receivers, acc

    def _receivers(self, targets, fmt):
        if fmt == "bitmap":
            flag = self.flag
            flag[targets] = True
            out = np.flatnonzero(flag)
            flag[out] = False
            return out
        k = len(targets)
        positions = np.arange(k, dtype=self.stamp.dtype)
        # each receiver keeps the position of one of its messages, whichever write lands last:
        # exactly one message per receiver then finds its own position there
        self.stamp[targets] = positions
        first = targets[self.stamp[targets] == positions]
        first.sort()
        return first

    # ------------------------------------------------------------------ executor glue
    def gather(self, unit, piece, changed_ids):
        """A push plan's gather of ``unit``: its changed vertices' messages, kept for apply."""
        ex = self.ex
        lo, hi = int(ex.intervals[unit.shards[0]]), int(ex.intervals[unit.shards[-1] + 1])
        if changed_ids is None:   # an unseeded start: every vertex counts as changed
            senders = np.concatenate([np.arange(ex.intervals[i], ex.intervals[i + 1])
                                      for i in unit.shards]).astype(np.int64)
        else:
            senders = ex._slice_ids(changed_ids, unit)
        if len(senders) == 0:
            return None, None, 0
        return self.send(piece, senders, full=len(senders) == hi - lo)

    def apply(self, parts, fmt):
        """The push plan's one apply: over the receivers of ``parts``. Returns (receivers,
        {field: new values}, changed ids)."""
        ex = self.ex
        receivers, acc = self.combine(parts, fmt)
        if len(receivers) == 0:
            return receivers, {}, receivers
        v = VertexView(ex.cur, ex.builtins, receivers, len(receivers), writable=True)
        changed = as_length(ex.program.apply(v, acc), len(receivers), np.bool_)
        written = v.assigned()
        for f, val in written.items():
            ex.nxt[f][receivers] = val
        return receivers, written, receivers[changed]

    def edges_of(self, ids, degrees):
        """Edges a push from ``ids`` (None: every vertex) walks, from the store's degrees."""
        if ids is None:
            return int(sum(int(d.sum()) for d in degrees))
        return int(sum(int(d[ids].sum()) for d in degrees))
