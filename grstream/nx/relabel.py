"""Relabelling a backend graph: new labels over the same store, no data copied."""
from .adjacency import copied
from .graph import GrstreamGraph


def _relabelled(G, labels):
    return GrstreamGraph(G.store, labels, directed=G.is_directed(), multigraph=G.is_multigraph(),
                         weight=G.weight, attrs_known=G.attrs_known,
                         num_edges=G.number_of_edges(), graph_attrs=G.graph, owner=G,
                         order=copied(G.order, len(G), G.is_directed()))


def new_labels(G, mapping):
    """Labels after ``mapping`` (a dict, nodes it leaves out keep theirs, or a function)."""
    if callable(mapping):
        return [mapping(v) for v in G]
    return [mapping.get(v, v) for v in G]


def relabel_nodes(G, mapping, copy=True):
    """A relabelled copy of ``G`` sharing its store, as :func:`networkx.relabel_nodes` with
    ``copy=True`` and a one-to-one mapping (``can_run`` checks)."""
    return _relabelled(G, new_labels(G, mapping))


def convert_node_labels_to_integers(G, first_label=0, ordering="default", label_attribute=None):
    """``G`` with nodes ``first_label, first_label + 1, ...`` in node order ("default") or in
    sorted order ("sorted"), as :func:`networkx.convert_node_labels_to_integers` (other
    orderings and ``label_attribute`` make ``can_run`` False). The result shares ``G``'s store."""
    if ordering not in ("default", "sorted"):
        import networkx as nx
        raise nx.NetworkXError(f"Unknown node ordering: {ordering}")
    labels = G.labels()
    rank = range(len(labels))
    if ordering == "sorted":
        position = {v: i for i, v in enumerate(sorted(labels))}
        rank = [position[v] for v in labels]
    return _relabelled(G, [first_label + r for r in rank])
