"""k-cores of NetworkX on the backend graph: ``k_core``, ``k_shell``, ``k_crust`` and
``k_corona`` as subgraphs of the node sets the streamed core numbers select, each a new store
(``G.subgraph(nodes).copy()``, neighbour order included)."""
import numpy as np

from .convert import temp_store
from .graph import GrstreamGraph
from .store_edges import edge_arrays, out_edges


def _neighbour_lists(G):
    """``(src, dst, pos, length)`` per entry of every node's neighbour list in NetworkX's
    order: internal ids, position in the list, the list's length."""
    if G.order is not None:
        indptr, dst = (np.asarray(a, dtype=np.int64) for a in G.order)
        src = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    else:   # a store's graph: neighbours in node order
        parts = list(out_edges(G.store))
        src = np.concatenate([p[0] for p in parts])
        dst = np.concatenate([p[1] for p in parts])
        indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=len(G)))])
    pos = np.arange(len(dst), dtype=np.int64) - indptr[src]
    return src, dst, pos, np.diff(indptr)[src]


def _subgraph_order(G, keep, rank, k):
    """NetworkX's neighbour order in ``G.subgraph(nodes).copy()`` as a CSR of new ids. The
    view lists a node's neighbours in its own order, or in the order of the node set when
    that set is under half the list (networkx.classes.filters / coreviews.FilterAtlas); the
    copy adds edges node by node in the view's order, so a directed copy keeps those lists,
    and an undirected one lists a node's neighbours in the order their edges were first met:
    ``(rank of the endpoint met first, position in its list)``."""
    n = len(keep)
    src, dst, pos, length = _neighbour_lists(G)
    both = keep[src] & keep[dst]
    src, dst, pos, length = src[both], dst[both], pos[both], length[both]
    listed = np.where(2 * k < length, rank[dst], pos)   # position in the view's list
    if G.is_directed():
        key = listed
    else:
        code = src * n + dst
        by_code = np.argsort(code, kind="stable")
        first_is_src = rank[src] <= rank[dst]
        first, other = np.where(first_is_src, src, dst), np.where(first_is_src, dst, src)
        at = by_code[np.searchsorted(code[by_code], first * n + other)]
        key = rank[first] * (n + 1) + listed[at]
    by = np.lexsort((key, rank[src]))
    new_src, new_dst = rank[src[by]], rank[dst[by]]
    return np.concatenate([[0], np.cumsum(np.bincount(new_src, minlength=k))]), new_dst


def subgraph(G, keep, listed=None):
    """The backend graph of ``G.subgraph(nodes).copy()`` for the boolean mask ``keep``;
    ``listed``: the labels in the order NetworkX's ``nodes`` generator gives them (default
    node order), which decides the order of a small node set."""
    labels = G.labels()
    directed = G.is_directed()
    kept = [v for v in (labels if listed is None else listed) if keep[G.index_of(v)]]
    if not kept:
        return GrstreamGraph(None, [], directed=directed, graph_attrs=G.graph)
    k = len(kept)
    # the view iterates the node set itself when it is under half the graph
    seq = ([G.index_of(v) for v in set(kept)] if 2 * k < len(G)
           else np.flatnonzero(keep).tolist())
    rank = np.full(len(G), -1, dtype=np.int64)
    rank[seq] = np.arange(k)
    src, dst, weight = edge_arrays(G.store, directed, weights=True)
    both = keep[src] & keep[dst]
    src, dst = rank[src[both]], rank[dst[both]]
    weight = None if weight is None else weight[both]
    store, tmp_dir = temp_store(src, dst, weight, k, directed, "<subgraph>")
    return GrstreamGraph(store, [labels[i] for i in seq], directed=directed,
                         weight=G.weight if weight is not None else None, attrs_known=G.attrs_known,
                         num_edges=len(src), tmp_dir=tmp_dir, graph_attrs=G.graph,
                         order=_subgraph_order(G, keep, rank, k))


def _cores(G, core_number):
    from .eigen import _no_multigraph
    from .strong import core_number as compute
    _no_multigraph(G)
    core = compute(G) if core_number is None else core_number
    return np.array([core[v] for v in G.labels()], dtype=np.int64)


def _listed(core_number):
    """The order NetworkX's node generator takes: the given dict's, else node order."""
    return None if core_number is None else list(core_number)


def _core_subgraph(G, k, core_number, select):
    core = _cores(G, core_number)
    if k is None:
        k = int(core.max())   # max() of no core numbers raises, as in NetworkX
    return subgraph(G, select(core, k), _listed(core_number))


def k_core(G, k=None, core_number=None):
    """The subgraph of nodes with core number >= ``k`` (default: the largest), as
    :func:`networkx.k_core`."""
    return _core_subgraph(G, k, core_number, lambda c, k: c >= k)


def k_shell(G, k=None, core_number=None):
    """The subgraph of nodes with core number ``k`` (default: the largest), as
    :func:`networkx.k_shell`."""
    return _core_subgraph(G, k, core_number, lambda c, k: c == k)


def k_crust(G, k=None, core_number=None):
    """The subgraph of nodes with core number <= ``k`` (default: the largest minus one), as
    :func:`networkx.k_crust`."""
    core = _cores(G, core_number)
    if k is None:
        k = int(core.max()) - 1
    return subgraph(G, core <= k, _listed(core_number))


def k_corona(G, k, core_number=None):
    """The subgraph of nodes in the k-core with exactly ``k`` neighbours in it, as
    :func:`networkx.k_corona` (neighbours: successors on a directed graph)."""
    core = _cores(G, core_number)
    count = np.zeros(len(G), dtype=np.int64)
    for src, dst, _ in out_edges(G.store):
        np.add.at(count, src[core[dst] >= k], 1)
    return subgraph(G, (core == k) & (count == k), _listed(core_number))
