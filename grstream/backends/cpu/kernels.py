"""The numpy passes of the CPU executor: gather, activation and scatter over one unit's arrays.

Ids are global vertex ids; a Piece's ``indptr`` arrays index vertices from ``piece.lo``.
"""
import numpy as np

from . import compiled
from ...program.monoid import sum as sum_monoid
from ...program.push import message_field
from .segments import expand_ranges, reduce_segments, row_chunks, spmv
from ...program.views import EdgeView, ExpandedView, VertexView, as_length

_IDS = {"in": "in/src", "out": "out/dst"}
#: from this many edges on, a sum over in-edges of hoisted messages goes through scipy's CSR
#: product (below, building the matrix costs more than numpy's reduceat)
SPMV_EDGES = 1 << 14
#: activation walks per-edge flags instead of selecting edge positions once more than one row in
#: this many of a piece changed
DENSE_ACTIVATION = 4


class Kernels:
    def __init__(self, ex, choice="auto"):
        self.ex = ex
        spec = ex.spec
        self.dirs = () if not spec.has_gather else (
            ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,))
        # gather_map returns a field of the sending end: that field's array is the messages
        self.fields = {d: message_field(spec, d) for d in self.dirs}
        # such messages summed over selected rows: the compiled sum (compiled.SUM_ROWS)
        self.row_sums = None
        if (self.dirs and spec.gather_reduce is sum_monoid and spec.gather_dtype.kind in "fi"
                and all(self.fields[d] is not None for d in self.dirs)):
            from .strategy_compiled import COMPILED_EDGES
            self.row_sums = compiled.row_sums(choice, int(ex.store.num_edges), COMPILED_EDGES)
        direction = spec.gather_edges or "in"
        # readers of a changed vertex: its out-neighbours when vertices gather over in-edges
        self.act_pairs = ([("out/indptr", "out/dst")] if direction in ("in", "all") else []) + \
                         ([("in/indptr", "in/src")] if direction in ("out", "all") else [])

    # ------------------------------------------------------------------ gather
    def gather(self, piece, lo, hi, rows, kind, fresh=False):
        """(accumulator per active vertex, edges gathered over) of the span [lo, hi) or ``rows``;
        ``fresh``: compute messages from ``cur`` even when the plan hoisted them."""
        a, b = lo - piece.lo, hi - piece.lo
        ex = self.ex
        # hoisted messages serve the compiled sum where they are the other end's (in-edges)
        hoisted = None if fresh else ex.hoisted
        if (self.row_sums is not None and ex.L is None and ex.sources.ids is None
                and (hoisted is None or self.dirs == ("in",))):
            return self._sum_rows(piece, np.arange(a, b) if rows is None else rows - piece.lo,
                                  hoisted)
        if rows is not None and kind == "sweep":
            # most of the span is active: a sweep with the inactive results dropped beats
            # selecting edges; statistics still count only the active vertices' edges
            acc, _ = self._chunked(piece, a, b, None, fresh)
            local = rows - piece.lo
            return acc[local - a], self._edges_of(piece, local)
        return self._chunked(piece, a, b, None if rows is None else rows - piece.lo, fresh)

    def _sum_rows(self, piece, local, hoisted=None):
        """(sums per row of ``local``, edges gathered over) through the compiled row sum: per
        direction the field of the other end (or its ``hoisted`` messages) summed over the
        row's edges, directions added."""
        ex, acc, edges = self.ex, None, 0
        dtype = ex.spec.gather_dtype
        for d in self.dirs:
            x = ex.cur[self.fields[d]] if hoisted is None else hoisted
            part = np.zeros(len(local), dtype=x.dtype)
            edges += self.row_sums._run("sum_rows", (
                piece.arrays[f"{d}/indptr"], piece.arrays[_IDS[d]], local, x, part))
            part = part.astype(dtype, copy=False)
            acc = part if acc is None else acc + part
        return acc, edges

    def _chunked(self, piece, a, b, rows, fresh):
        """:meth:`_gather` over groups of rows of at most segments.CHUNK_EDGES edges each (a row
        is never split, so every vertex's reduction is the one of a single pass), so that the
        per-edge temporaries stay within the executor's scratch whatever the unit's size."""
        if not self.dirs:
            return self._gather(piece, a, b, rows, fresh)
        if rows is None:
            offsets = sum(piece.arrays[f"{d}/indptr"][a:b + 1] for d in self.dirs)
        else:
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(self._degrees(piece, rows), out=offsets[1:])
        groups = row_chunks(offsets)
        if len(groups) == 1:
            return self._gather(piece, a, b, rows, fresh)
        out, edges = None, 0
        for r0, r1 in groups:
            if rows is None:
                acc, m = self._gather(piece, a + r0, a + r1, None, fresh)
            else:
                acc, m = self._gather(piece, a, b, rows[r0:r1], fresh)
            if out is None:
                count = (b - a) if rows is None else len(rows)
                out = np.empty((count,) + acc.shape[1:], dtype=acc.dtype)
            out[r0:r1] = acc
            edges += m
        return out, edges

    def _degrees(self, piece, local):
        """Edges of rows ``local`` over every gather direction."""
        return sum(piece.arrays[f"{d}/indptr"][local + 1] - piece.arrays[f"{d}/indptr"][local]
                   for d in self.dirs)

    def _gather(self, piece, a, b, rows, fresh=False):
        ex = self.ex
        spec, arrays = ex.spec, piece.arrays
        dtype, monoid = spec.gather_dtype, spec.gather_reduce
        count = (b - a) if rows is None else len(rows)
        L = ex.L
        acc, edges = None, 0
        for d in self.dirs:
            indptr, ids = arrays[f"{d}/indptr"], arrays[_IDS[d]]
            if rows is None:
                e0, e1 = int(indptr[a]), int(indptr[b])
                seg = indptr[a:b + 1] - e0 if e0 else indptr[a:b + 1]
                sel = slice(e0, e1)
                other = ids[sel]
            else:
                sel, seg = expand_ranges(indptr, rows)
                other = ids[sel]
            if ex.sources.ids is not None and not (ex.hoisted_changed and d == "in"):
                # gather_from "changed": only the edges whose other end changed last iteration
                keep = ex.sources.mask[other]
                kept = np.zeros(len(keep) + 1, dtype=np.int64)
                np.cumsum(keep, out=kept[1:])
                pos = np.flatnonzero(keep)
                sel = (pos + sel.start) if isinstance(sel, slice) else sel[pos]
                other, seg = other[pos], kept[seg]
            m = int(seg[-1]) if len(seg) else 0
            edges += m
            own_index = slice(piece.lo + a, piece.lo + b) if rows is None else rows + piece.lo
            hoisted = ex.hoisted if spec.has_gather and ex.hoisted is not None and not fresh else None
            by_other = d == "in"   # hoisted messages are the other end's (else the own end's)
            if hoisted is None and self.fields[d] is not None and L is None:
                hoisted, by_other = ex.cur[self.fields[d]], True   # the message is this field
            if (hoisted is not None and by_other and monoid is sum_monoid and dtype.kind in "fi"
                    and m >= SPMV_EDGES and L is None):
                # sum of a per-sender value over the edges is a sparse matrix-vector product:
                # let scipy's fused C loop do the gather and the reduction in one pass
                part = spmv(seg, other, hoisted)
                acc = part if acc is None else acc + part
                continue
            if hoisted is not None:
                msg = (hoisted[other] if by_other
                       else np.repeat(hoisted[own_index], np.diff(seg), axis=0))
            else:
                other_view = VertexView(ex.cur, ex.builtins, other, m, lanes=L)
                own_view = ExpandedView(VertexView(ex.cur, ex.builtins, own_index, count, lanes=L),
                                        np.diff(seg))
                src, dst = (other_view, own_view) if d == "in" else (own_view, other_view)
                edge = EdgeView(self.edge_props(piece, d, sel), lanes=L)
                msg = as_length(ex.program.gather_map(src, dst, edge), m, dtype, L)
            part = reduce_segments(msg, seg, monoid, dtype)
            acc = part if acc is None else monoid.ufunc(acc, part).astype(dtype, copy=False)
        if acc is None:
            acc = np.full(count if L is None else (count, L), monoid.identity(dtype), dtype=dtype)
        return acc, edges

    def _edges_of(self, piece, local):
        return int(self._degrees(piece, local).sum()) if self.dirs else 0

    def edge_props(self, piece, d, sel):
        """Edge properties of the selected edges, stored and mutable, each read on first use."""
        ex, arrays = self.ex, piece.arrays
        props = {p: (lambda p=p: arrays[f"{d}/{p}"][sel]) for p in ex.spec.edge_reads}
        for name in ex.spec.edge_state:
            if d == "out":
                if isinstance(sel, slice):
                    at = slice(piece.out_base + sel.start, piece.out_base + sel.stop)
                else:
                    at = piece.out_base + sel
                props[name] = (lambda name=name, at=at: ex.edges[name][at])
            else:  # edge state lives in CSR order: in-edges find it by id
                props[name] = (lambda name=name: ex.edges[name][arrays["in/eid"][sel]])
        return props

    # ------------------------------------------------------------------ activation, scatter
    def activate(self, piece, changed, spans=None):
        """Ids of every vertex that gathers from a ``changed`` vertex (duplicates possible):
        :meth:`activate_chunks` concatenated."""
        out = list(self.activate_chunks(piece, changed, spans))
        return (out[0] if len(out) == 1 else np.concatenate(out) if out
                else np.zeros(0, dtype=np.int64))

    def activate_chunks(self, piece, changed, spans=None):
        """Yield the ids of the vertices that gather from a ``changed`` vertex, in parts of at
        most segments.CHUNK_EDGES edges' worth (duplicates possible). ``spans``: the unit's
        vertex ranges [a, b) (global ids, ascending, data loaded) holding the sorted
        ``changed``; where most of a range changed, per-edge flags replace selecting edge
        positions (a run's shards between a unit's may not be loaded, so never across)."""
        local = np.asarray(changed, dtype=np.int64) - piece.lo
        for ptr, ids in self.act_pairs:
            indptr, targets = piece.arrays[ptr], piece.arrays[ids]
            sparse = [local]
            if spans is not None and len(local):
                sparse = []
                for a, b in spans:
                    a, b = a - piece.lo, b - piece.lo
                    i, j = np.searchsorted(local, (a, b))
                    if (j - i) * DENSE_ACTIVATION < b - a:
                        sparse.append(local[i:j])
                        continue
                    # most of the range changed (delta programs keep nearly every vertex moving)
                    flags = np.zeros(b - a, dtype=bool)
                    flags[local[i:j] - a] = True
                    for r0, r1 in row_chunks(indptr[a:b + 1]):
                        per_edge = np.repeat(flags[r0:r1], np.diff(indptr[a + r0:a + r1 + 1]))
                        yield targets[int(indptr[a + r0]):int(indptr[a + r1])][per_edge]
            for part in sparse:
                offsets = np.zeros(len(part) + 1, dtype=np.int64)
                np.cumsum(indptr[part + 1] - indptr[part], out=offsets[1:])
                for r0, r1 in row_chunks(offsets):
                    sel, _ = expand_ranges(indptr, part[r0:r1])
                    yield targets[sel]

    def activate_lanes(self, piece, rows, changed):
        """Flat (id * lanes + lane) positions of the vertices that gather from a vertex of
        ``rows`` changed in that lane (``changed``: bool (len(rows), lanes))."""
        L = self.ex.L
        local = np.asarray(rows, dtype=np.int64) - piece.lo
        out = []
        for ptr, ids in self.act_pairs:
            sel, seg = expand_ranges(piece.arrays[ptr], local)
            targets = piece.arrays[ids][sel].astype(np.int64)
            flags = np.repeat(changed, np.diff(seg), axis=0)
            edge, lane = np.nonzero(flags)
            out.append(targets[edge] * L + lane)
        return out[0] if len(out) == 1 else np.concatenate(out)

    def scatter(self, piece, changed, written):
        """Scatter over the out-edges of ``changed``: (edge positions, {property: values})."""
        ex = self.ex
        local = np.asarray(changed, dtype=np.int64) - piece.lo
        indptr, dst_ids = piece.arrays["out/indptr"], piece.arrays["out/dst"]
        sel, seg = expand_ranges(indptr, local)
        if len(sel) == 0:
            return None
        fields = {f: (ex.nxt[f] if f in written else a) for f, a in ex.cur.items()}
        src = ExpandedView(VertexView(fields, ex.builtins, changed, len(changed)), np.diff(seg))
        dst = VertexView(ex.cur, ex.builtins, dst_ids[sel], len(sel))
        edge = EdgeView(self.edge_props(piece, "out", sel), writable=True)
        ex.program.scatter(src, dst, edge)
        values = {k: as_length(v, len(sel), ex.spec.edge_state[k]).copy()
                  for k, v in edge.assigned().items()}
        return piece.out_base + sel, values
