"""Unions of backend graphs: one new temporary store holding every graph's edges."""
import networkx as nx
import numpy as np

from .convert import temp_store
from .store_edges import edge_arrays, out_edges
from .adjacency import copied, unsorted
from .graph import GrstreamGraph
from .relabel import convert_node_labels_to_integers, relabel_nodes


def union_all(graphs, rename=()):
    """The union of graphs with disjoint nodes, as :func:`networkx.union_all` for graphs
    without node or edge attributes (``can_run`` checks)."""
    graphs = list(graphs)
    if not graphs:
        raise ValueError("cannot apply union_all to an empty list")
    rename = list(rename) + [None] * (len(graphs) - len(rename))
    graphs = [G if p is None else relabel_nodes(G, lambda x, p=p: f"{p}{x}")
              for G, p in zip(graphs, rename)]
    first, seen = graphs[0], set()
    for i, G in enumerate(graphs):
        if G.is_directed() != first.is_directed():
            raise nx.NetworkXError("All graphs must be directed or undirected.")
        if G.is_multigraph() != first.is_multigraph():
            raise nx.NetworkXError("All graphs must be graphs or multigraphs.")
        if not seen.isdisjoint(G.labels()):
            raise nx.NetworkXError(
                "The node sets of the graphs are not disjoint.\nUse `rename` to specify "
                "prefixes for the graphs or use\ndisjoint_union(G1, G2, ..., GN).")
        seen.update(G.labels())
    weight = union_weight(graphs)
    labels, srcs, dsts, ws, offset, attrs = [], [], [], [], 0, {}
    for G in graphs:
        src, dst, w = edge_arrays(G.store, G.is_directed(), weights=weight is not None)
        srcs.append(src + offset)
        dsts.append(dst + offset)
        ws.append(np.ones(len(src)) if w is None else w)
        labels += G.labels()
        offset += len(G)
        attrs.update(G.graph)
    edges = sum(G.number_of_edges() for G in graphs)
    if not labels:
        return GrstreamGraph(None, [], directed=first.is_directed(), graph_attrs=attrs)
    cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64))
    order = union_order(graphs)
    w = np.concatenate(ws) if weight is not None and ws else None
    if w is not None and (w == 1).all():
        w = None  # all 1, NetworkX's default: the unweighted programs give the answers
    store, tmp_dir = temp_store(cat(srcs), cat(dsts), w, len(labels), first.is_directed(),
                                "<union>")
    return GrstreamGraph(store, labels, directed=first.is_directed(),
                         multigraph=first.is_multigraph(), weight=weight,
                         attrs_known=all(G.attrs_known for G in graphs), num_edges=edges,
                         tmp_dir=tmp_dir, graph_attrs=attrs, order=order)


def union_order(graphs):
    """Neighbour order of the union (None: node order): each graph's, as NetworkX's union
    copies it (:func:`~grstream.nx.adjacency.copied`), one after the other."""
    orders = [copied(G.order, len(G), G.is_directed()) for G in graphs]
    if all(o is None for o in orders):
        return None
    counts, dsts, offset = [], [], 0
    for G, o in zip(graphs, orders):
        o = spelled_out(G, o)
        counts.append(np.diff(o[0]))
        dsts.append(o[1] + offset)
        offset += len(G)
    indptr = np.r_[0, np.cumsum(np.concatenate(counts))].astype(np.int64)
    return unsorted(indptr, np.concatenate(dsts).astype(np.int64))


def spelled_out(G, order):
    """``order`` (a neighbour order of ``G``, None: node order) as ``(indptr, dst)`` arrays;
    node order is the store's distinct out-neighbours of every vertex, by id."""
    if order is not None:
        return order
    n = max(len(G), 1)
    pairs = [np.unique(s * n + d) for s, d, _ in out_edges(G.store)]
    key = np.concatenate(pairs) if pairs else np.zeros(0, np.int64)
    return np.r_[0, np.cumsum(np.bincount(key // n, minlength=len(G)))], key % n


def compose(G, H):
    """The graph of both node sets and both edge sets, as :func:`networkx.compose` for graphs
    without node or edge attributes (``can_run`` checks); where both have an edge, ``H``'s
    weight. Nodes: ``G``'s, then ``H``'s others; each node's neighbours: ``G``'s order, then
    ``H``'s new ones, as NetworkX's ``add_edges_from`` of one graph after the other."""
    if G.is_directed() != H.is_directed():
        raise nx.NetworkXError("All graphs must be directed or undirected.")
    if G.is_multigraph() != H.is_multigraph():
        raise nx.NetworkXError("All graphs must be graphs or multigraphs.")
    directed, weight = G.is_directed(), union_weight([G, H])
    labels = list(G.labels())
    index = {x: i for i, x in enumerate(labels)}
    for x in H.labels():
        if x not in index:
            index[x] = len(labels)
            labels.append(x)
    to_r = np.fromiter(map(index.__getitem__, H.labels()), np.int64, len(H))
    n = len(labels)
    parts = [edge_arrays(G.store, directed, weights=weight is not None),
             edge_arrays(H.store, directed, weights=weight is not None)]
    src = np.concatenate([parts[0][0], to_r[parts[1][0]]])
    dst = np.concatenate([parts[0][1], to_r[parts[1][1]]])
    w = np.concatenate([np.ones(len(p[0])) if p[2] is None else p[2] for p in parts])
    if not directed:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    # one edge per pair, the last listed (H's) where both graphs have it
    key = src * n + dst
    last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
    src, dst, w = src[last], dst[last], w[last]
    attrs = {**G.graph, **H.graph}
    if not n:
        return GrstreamGraph(None, [], directed=directed, graph_attrs=attrs)
    w = None if weight is None or (w == 1).all() else w
    store, tmp_dir = temp_store(src, dst, w, n, directed, "<compose>")
    return GrstreamGraph(store, labels, directed=directed, weight=weight,
                         attrs_known=G.attrs_known and H.attrs_known, num_edges=len(src),
                         tmp_dir=tmp_dir, graph_attrs=attrs, order=_composed_order(G, H, to_r, n))


def compose_all(graphs):
    """As :func:`networkx.compose_all`: :func:`compose` of the first two graphs, then of that
    and the next, ... (the same nodes, edges, order and weights as NetworkX's one pass)."""
    graphs = list(graphs)
    if not graphs:
        raise ValueError("cannot apply compose_all to an empty list")
    R = graphs[0]
    for H in graphs[1:]:
        R = compose(R, H)
    if len(graphs) == 1:   # NetworkX returns a new graph
        R = compose(R, GrstreamGraph(None, [], directed=R.is_directed(),
                                     multigraph=R.is_multigraph()))
    return R


def _composed_order(G, H, to_r, n):
    """Neighbour order of ``compose(G, H)``: every row of ``G`` (as NetworkX copies it), then
    the neighbours ``H`` adds, in ``H``'s copied order."""
    rows, dsts = [], []
    for graph, ids in ((G, None), (H, to_r)):
        indptr, dst = spelled_out(graph, copied(graph.order, len(graph), graph.is_directed()))
        row = np.repeat(np.arange(len(graph), dtype=np.int64), np.diff(indptr))
        if ids is not None:
            row, dst = ids[row], ids[dst]
        rows.append(row)
        dsts.append(dst)
    row, dst = np.concatenate(rows), np.concatenate(dsts)
    # the first entry of each (row, neighbour) pair keeps its place; G's entries come first
    first = np.sort(np.unique(row * n + dst, return_index=True)[1])
    row, dst = row[first], dst[first]
    by = np.argsort(row, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    return unsorted(indptr, dst[by])


def union_weight(graphs):
    """The edge attribute the union of backend graphs keeps its weights under (None: no
    weights). ``can_run`` refuses graphs whose weights differ in name, or that left out
    attributes while another keeps weights (:func:`weight_conflict`)."""
    names = {G.weight for G in graphs if G.weight is not None}
    return names.pop() if names else None


def weight_conflict(graphs):
    """Why the weights of these backend graphs cannot be united, or None."""
    names = {G.weight for G in graphs if G.weight is not None}
    if len(names) > 1:
        return f"the graphs keep their weights under different attributes {sorted(names)}"
    if names and any(G.weight is None and not G.attrs_known for G in graphs):
        return "a graph was converted without the edge attribute another keeps as its weight"
    return None


def union(G, H, rename=()):
    """As :func:`networkx.union` (see :func:`union_all`)."""
    return union_all([G, H], rename)


def disjoint_union_all(graphs):
    """Graphs relabelled ``0..`` one after the other, then united, as
    :func:`networkx.disjoint_union_all`."""
    relabelled, first = [], 0
    for G in graphs:
        relabelled.append(convert_node_labels_to_integers(G, first_label=first))
        first += len(G)
    return union_all(relabelled)


def disjoint_union(G, H):
    """As :func:`networkx.disjoint_union`."""
    return disjoint_union_all([G, H])
