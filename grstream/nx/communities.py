"""Label propagation communities of NetworkX on the backend graph
(grstream/algorithms/label_propagation.py)."""
from collections import defaultdict

import networkx as nx


def label_propagation_communities(G):
    """Communities as :func:`networkx.community.label_propagation_communities`: the same
    colouring, labels and updates, hence the same sets in the same order (a ``dict_values``
    of sets, by first node in node order)."""
    from ..algorithms.label_propagation import greedy_colours, semi_synchronous_labels
    from .degree import _degrees
    from .operators import spelled_out
    if G.is_directed():
        raise nx.NetworkXNotImplemented("not implemented for directed type")
    if not len(G):
        return {}.values()
    indptr, dst = spelled_out(G, G.order)
    label = semi_synchronous_labels(G.store, greedy_colours(indptr, dst, _degrees(G, "out")))
    clusters = defaultdict(set)
    for node, x in zip(G.labels(), label.tolist()):
        clusters[x].add(node)
    return clusters.values()
