"""Unions of backend graphs: one new temporary store holding every graph's edges."""
import networkx as nx
import numpy as np

from .convert import temp_store
from .store_edges import out_edges
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
    labels, srcs, dsts, offset, attrs = [], [], [], 0, {}
    for G in graphs:
        for src, dst, _ in out_edges(G.store):
            keep = slice(None) if G.is_directed() else src <= dst  # stored both ways: once
            srcs.append(src[keep] + offset)
            dsts.append(dst[keep] + offset)
        labels += G.labels()
        offset += len(G)
        attrs.update(G.graph)
    edges = sum(G.number_of_edges() for G in graphs)
    if not labels:
        return GrstreamGraph(None, [], directed=first.is_directed(), graph_attrs=attrs)
    cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64))
    store, tmp_dir = temp_store(cat(srcs), cat(dsts), None, len(labels), first.is_directed(),
                                "<union>")
    return GrstreamGraph(store, labels, directed=first.is_directed(),
                         multigraph=first.is_multigraph(), attrs_known=True, num_edges=edges,
                         tmp_dir=tmp_dir, graph_attrs=attrs)


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
