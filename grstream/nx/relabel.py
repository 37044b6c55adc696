"""Relabelling a backend graph: new labels over the same store, no data copied."""
from .graph import GrstreamGraph


def convert_node_labels_to_integers(G, first_label=0, ordering="default", label_attribute=None):
    """``G`` with nodes ``first_label, first_label + 1, ...`` in node order ("default") or in
    sorted order ("sorted"), as :func:`networkx.convert_node_labels_to_integers` (other
    orderings and ``label_attribute`` make ``can_run`` False). The result shares ``G``'s store."""
    labels = G.labels()
    rank = range(len(labels))
    if ordering == "sorted":
        position = {v: i for i, v in enumerate(sorted(labels))}
        rank = [position[v] for v in labels]
    H = GrstreamGraph(G.store, [first_label + r for r in rank], directed=G.is_directed(),
                      multigraph=G.is_multigraph(), weight=G.weight, attrs_known=G.attrs_known,
                      num_edges=G.number_of_edges(), graph_attrs=G.graph, owner=G)
