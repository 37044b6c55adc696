"""When a build renumbers vertex ids, and the labels the store keeps for them.

``renumber=None`` (the default) renumbers when the ids are *sparse*: the input declares no
vertex count (no ``.mtx`` / DIMACS / KONECT size line, not an in-memory matrix or networkx
graph) and ``largest id + 1 > 2 * distinct ids``, i.e. more than half of ``0..max id`` would be
isolated vertices that exist only because of the numbering (README "Vertex ids"). The ids that
occur, in increasing order, become ``0..n-1``; the store keeps them as labels, so users keep
giving and getting the input's ids.
"""
import numpy as np

from ..store.labels import SPARSE_FACTOR, is_sparse, label_table
from .edges import occurring_ids


def auto_applies(plan):
    """True when the default rule has to look at the ids (renumber=None, no declared count)."""
    edges = plan.edges
    return (plan.renumber_requested is None and edges.num_vertices is None
            and edges.labels is None)


def sparse_ids_in_parts(parts, top):
    """Sorted ids occurring in prepared chunks ``parts`` when they are sparse, else None.

    ``top`` is the largest id + 1. A bitmap over ``0..top-1`` counts the distinct ids when it
    is no larger than the edge arrays themselves; beyond that the ids are sparse for sure
    (``distinct <= 2 * edges < top / 2``) and a sort finds them without an O(top) array.
    """
    occurrences = 2 * sum(len(p[0]) for p in parts)
    if top > SPARSE_FACTOR * occurrences:
        return occurring_ids(parts)
    mark = np.zeros(top, dtype=bool)
    for src, dst, _ in parts:
        mark[src] = True
        mark[dst] = True
    distinct = int(np.count_nonzero(mark))
    return np.flatnonzero(mark) if is_sparse(top, distinct) else None


def sparse_ids_in_degrees(in_degree, out_degree):
    """Sorted ids with an edge, from degree arrays, when they are sparse, else None."""
    present = (in_degree > 0) | (out_degree > 0)
    distinct = int(np.count_nonzero(present))
    return np.flatnonzero(present) if is_sparse(len(present), distinct) else None


def renumber_parts(parts, ids):
    """Prepared chunks with ids replaced by their positions in the sorted ``ids``."""
    return [(np.searchsorted(ids, s), np.searchsorted(ids, d), w) for s, d, w in parts]


def store_labels(plan, num_vertices):
    """``(kind, table)`` of labels the store keeps for its vertices, or None (labels = ids + base).

    Renumbered integer ids are kept as written in the input (``id_base`` added back); a source
    with labels of its own (names) keeps those, in the order of the store's vertices.
    """
    source = plan.edges.labels() if plan.edges.labels is not None else None
    if plan.renumber:
        ids = plan.options.original_ids
        if source is None:
            return "int", ids.astype(np.int64) + plan.edges.id_base
        table = np.empty(len(source), dtype=object)
        table[:] = list(source)
        return label_table(table[ids])
    if source is None:
        return None
    kind, table = label_table(source)
    if len(table) != num_vertices:
        # a declared count beyond the labelled vertices cannot be keyed by a label
        raise ValueError(f"{len(table)} labels for {num_vertices} vertices")
    return kind, table
