"""Vertex reordering at build time: internal ids in an order that puts a row's neighbours close
together, so that the gaps between a row's sorted neighbour ids (what a delta-coded layout
stores) shrink. Users keep the input's ids: the store's label table lists them in the new order.

The order is chosen from the input before the build and applied as the input is read, by a
wrapping :class:`~grstream.io.base.EdgeSource` whose ids are already the new ones (``0..n-1``)
and whose labels are the input's, so every build path (in memory or under a memory limit,
keyed, counting or records) writes the reordered store unchanged. Orders:

``degree``
    decreasing degree (in + out over the input's edges; ties by id): hubs get the smallest ids,
    so the many edges that point at them have small gaps.
``rcm``
    reverse Cuthill-McKee (scipy's ``reverse_cuthill_mckee``) over the graph taken undirected:
    a breadth-first order (neighbours by increasing degree, each component from a vertex of
    low degree) reversed, the classic bandwidth-reducing order, which places a vertex's
    neighbours close together.

A plain breadth-first order from each component's hub measured within 2% of ``rcm`` on every
graph tried, slower and with scipy's float64 copy of the adjacency, so it is not offered.
``degree`` needs the degrees only (8 B a vertex, any memory limit); ``rcm`` holds the undirected
adjacency (:data:`ADJACENCY_BYTES_PER_EDGE`), refused beyond a memory limit. The vertex set is
the build's own: the ids that occur when the build renumbers (asked for, or by the default rule
for sparse ids), else ``0..max(declared count, largest id + 1, labelled vertices) - 1``.
"""
import dataclasses
import logging

import numpy as np

from ..errors import MemoryBudgetError, UsageError, plain
from .edge_chunks import DegreeCounter, check_chunk, occurring_ids, split_chunks
from .renumber import auto_applies, counted_chunks
from ..store.labels import is_sparse, label_table

log = logging.getLogger("grstream.partition")

ORDERS = ("degree", "rcm")
#: working bytes per input edge of an order that holds the adjacency: the int32 ids while
#: they are collected (8), the CSR of the edges (5) and the symmetric one summed from it
#: and its transpose (10, built while the CSR is held)
ADJACENCY_BYTES_PER_EDGE = 24
#: bytes a vertex's label takes while the build runs (an int64, or an object array's pointer
#: to a name the input's reader holds anyway)
LABEL_BYTES = 8
#: bins of the id differences' bit counts (ids below 2**63)
GAP_BINS = 65
#: ``auto`` reorders when at least this share of the edges join ids far apart (:func:`auto_order`)
AUTO_FAR_SHARE = 0.5


def check_order(order):
    """``order`` itself when it names an order or ``auto``, None for no reordering; else a
    UsageError."""
    if order is None or order == "none":
        return None
    if order != "auto" and order not in ORDERS:
        raise UsageError(f"reorder must be one of none, auto, {', '.join(ORDERS)}, not "
                         f"{plain(order)}")
    return order


def auto_order(gaps, n):
    """``auto``'s choice from ``gaps[b]``, the edges whose ids differ by a ``b``-bit number:
    the degree order when at least AUTO_FAR_SHARE of them join ids more than about ``n / 16``
    apart (ids that show no locality: random, hashed, crawl order), else None (the input's
    order, which a road network or a mesh numbered by position keeps better)."""
    edges = int(gaps.sum())
    far = int(gaps[(n // 16).bit_length() + 1:].sum())
    return "degree" if edges and far >= AUTO_FAR_SHARE * edges else None


def reorder_plan(plan, order):
    """Make the plan's input list its vertices in ``order``: an EdgeSource of ids ``0..n-1`` in
    the new order whose labels are the input's ids (or names), which the build keeps as they are
    (it renumbers no further). ``plan.renumbered_input`` says whether the ids were renumbered.
    Returns the order applied: ``order``, or for ``auto`` the degree order or None (the input
    stays as it is)."""
    return apply_order(plan, choose_order(plan, order))


@dataclasses.dataclass
class Reordering:
    """A chosen vertex order: ``new_id[v]`` is the new id of the build's vertex ``v`` (its id
    after renumbering by ``ids`` where those are given), ``labels[k]`` the label of new id
    ``k``."""

    order: str
    new_id: np.ndarray
    labels: np.ndarray
    ids: "np.ndarray | None"


def choose_order(plan, order):
    """The :class:`Reordering` of the plan's input in ``order`` (a pass over the input; one more
    where the build renumbers), or None where ``auto`` keeps the input's order."""
    edges = plan.edges
    ids = _renumbered_ids(plan)
    counter, adjacency, gaps = _degrees(plan, ids, need_edges=order not in ("degree", "auto"),
                                        need_gaps=order == "auto")
    labelled = len(edges.labels()) if edges.labels is not None else 0
    if ids is not None:
        n = len(ids)
    else:
        n = max(edges.num_vertices or 0, len(counter.in_degree), labelled)
    plan.vertices.check(n)
    if order == "auto":
        order = auto_order(gaps, n)
        log.info("%s: reorder auto: %s", edges.name, order or "the input's order")
        if order is None:
            return None
    degree = np.zeros(n, dtype=np.int64)
    degree[:len(counter.in_degree)] = counter.in_degree + counter.out_degree
    del counter
    new_order = vertex_order(order, degree, adjacency)
    del adjacency
    # int64: the chunks' ids come out of one gather in the dtype the build reads
    new_id = np.empty(n, dtype=np.int64)
    new_id[new_order] = np.arange(n, dtype=np.int64)
    log.info("%s: %d vertices in %s order", edges.name, n, order)
    return Reordering(order, new_id, _labels(edges, ids, n)[new_order], ids)


def apply_order(plan, chosen):
    """Make the plan's input the reordered one of ``chosen`` (a :class:`Reordering`; None: the
    input stays as it is). Returns the order applied, or None."""
    if chosen is None:
        return None
    edges, ids, new_id, table = plan.edges, chosen.ids, chosen.new_id, chosen.labels
    n = len(new_id)
    _hold(plan, new_id.nbytes + LABEL_BYTES * n)

    def chunks():
        for src, dst, w in edges.chunks():
            if ids is not None:
                src, dst = np.searchsorted(ids, src), np.searchsorted(ids, dst)
            yield np.take(new_id, src), np.take(new_id, dst), w

    plan.edges = dataclasses.replace(edges, make_chunks=chunks, num_vertices=n,
                                     labels=lambda: table, rows=None, make_pieces=None)
    plan.renumbered_input = ids is not None
    plan.renumber_requested = False
    return chosen.order


def _hold(plan, nbytes):
    """The new ids and labels stay with the build: an external one has ``nbytes`` less."""
    if plan.memory_limit is None:
        return
    if plan.memory_limit <= nbytes:
        raise MemoryBudgetError(
            f"memory limit {plan.memory_limit} B: the vertices' new ids and labels alone take "
            f"{nbytes} B", minimum=nbytes + 1)
    plan.memory_limit -= nbytes


def _renumbered_ids(plan):
    """Sorted ids that become the vertices when the build renumbers, else None (ids as read)."""
    if plan.renumber_requested is False or not (plan.renumber_requested or auto_applies(plan)):
        return None
    with plan.bar("renumbering") as bar:
        ids = occurring_ids(counted_chunks(_raw(plan), bar))
    if plan.renumber_requested or is_sparse(int(ids[-1]) + 1 if len(ids) else 0, len(ids)):
        return ids
    return None


def _raw(plan):
    for src, dst, w in split_chunks(plan.edges.chunks(), plan.chunk_edges):
        check_chunk(src, dst, w, plan.edges.name, plan.options.weighted)
        yield src, dst, w


def _degrees(plan, ids, need_edges, need_gaps):
    """Degrees over the vertices (renumbered by ``ids``), with ``need_edges`` the list of
    every edge's source and destination ids (int32 or int64 arrays) for the orders that need
    them, and with ``need_gaps`` the edges counted by the bits of the difference of their ids
    (for ``auto``)."""
    counter = DegreeCounter(0 if ids is None else len(ids))
    gaps = np.zeros(GAP_BINS, dtype=np.int64)
    src_parts, dst_parts = [], []
    held = 0
    with plan.bar("ordering") as bar:
        for src, dst, _ in _raw(plan):
            bar.update(len(src))
            if ids is not None:
                src, dst = np.searchsorted(ids, src), np.searchsorted(ids, dst)
            elif len(src):
                plan.vertices.check(int(max(src.max(), dst.max())) + 1)
            counter.add(src, dst)
            if need_gaps:
                # bits of |src - dst| (frexp's exponent; ids are far below 2**53)
                bits = np.frexp(np.abs(src - dst).astype(np.float64))[1]
                gaps += np.bincount(bits, minlength=GAP_BINS)
            if need_edges:
                held += len(src)
                limit = plan.memory_limit
                if limit is not None and held * ADJACENCY_BYTES_PER_EDGE > limit:
                    raise MemoryBudgetError(
                        f"this order holds the graph's adjacency, {ADJACENCY_BYTES_PER_EDGE} B "
                        f"an edge, more than the memory limit {limit} B after {held} edges: "
                        "use the degree order, or a larger limit")
                narrow = np.int32 if len(counter.in_degree) < 2 ** 31 else np.int64
                src_parts.append(src.astype(narrow))
                dst_parts.append(dst.astype(narrow))
    adjacency = None
    if need_edges:
        adjacency = [np.concatenate(src_parts) if src_parts else np.empty(0, np.int32),
                     np.concatenate(dst_parts) if dst_parts else np.empty(0, np.int32)]
        del src_parts, dst_parts
    return counter, adjacency, gaps


def _labels(edges, ids, n):
    """Label of every vertex in the build's order before reordering, as a numpy array."""
    if edges.labels is not None:
        kind, table = label_table(edges.labels())
        if ids is not None:
            table = table[ids]
        if len(table) != n:
            # a declared count beyond the labelled vertices cannot be keyed by a label
            raise UsageError(f"{edges.name}: {len(table)} labels for {n} vertices")
        return table
    return (np.arange(n, dtype=np.int64) if ids is None else ids.astype(np.int64)) + edges.id_base


def vertex_order(order, degree, adjacency=None):
    """The vertices (``0..n-1``) in ``order``: element ``k`` is the vertex that gets id ``k``."""
    n = len(degree)
    if order == "degree" or n == 0:
        return np.argsort(-degree, kind="stable")
    from scipy.sparse import csgraph
    graph = _undirected(adjacency, n)
    return csgraph.reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)


def _undirected(adjacency, n):
    """The graph as a symmetric scipy CSR (each pair once, sorted rows); ``adjacency``'s two
    arrays are emptied as they are used."""
    import scipy.sparse as sp
    src, dst = adjacency
    adjacency.clear()
    # bool entries: repeated pairs add up to True, never to a wrapped-around 0
    edges = sp.csr_matrix((np.ones(len(src), dtype=bool), (src, dst)), shape=(n, n))
    del src, dst
    graph = (edges + edges.T).tocsr()
    del edges
    graph.sum_duplicates()
    graph.sort_indices()
    return graph
