"""Strongly connected components and core numbers of NetworkX on the backend graph
(grstream/algorithms/scc.py, kcore.py)."""
import networkx as nx
import numpy as np

from .convert import run_options
from .degree import _directed_only
from .eigen import _no_multigraph


def _labels(G):
    from ..algorithms.scc import strongly_connected_components as scc
    return scc(G.store, **run_options())[0]


def _named(G, members):
    names = G.labels()
    return set(names[i] for i in members)   # NetworkX's order of adding to the set


def strongly_connected_components(G):
    """Sets of nodes, one per strongly connected component, as
    :func:`networkx.strongly_connected_components`, in its order (the depth-first search of
    grstream/nx/scc_order.py)."""
    from .scc_order import components_in_order
    _directed_only(G)
    if not len(G):
        return
    for members in components_in_order(G):
        yield _named(G, members)


def number_strongly_connected_components(G):
    """How many strongly connected components, as
    :func:`networkx.number_strongly_connected_components`."""
    _directed_only(G)
    return int(len(np.unique(_labels(G)))) if len(G) else 0


def is_strongly_connected(G):
    """Whether ``G`` is one strongly connected component, as
    :func:`networkx.is_strongly_connected`."""
    _directed_only(G)
    if not len(G):
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return number_strongly_connected_components(G) == 1


def core_number(G):
    """Core number of every node, as :func:`networkx.core_number` (in- plus out-neighbours on
    a directed graph)."""
    from ..algorithms.kcore import core_number as run
    from .degree import _loops
    _no_multigraph(G)
    if not len(G):
        return {}
    if _loops(G).any():
        raise nx.NetworkXNotImplemented(
            "Input graph has self loops which is not permitted; "
            "Consider using G.remove_edges_from(nx.selfloop_edges(G)).")
    core, _ = run(G.store, **run_options())
    return dict(zip(G.labels(), core.tolist()))


def _attracting(G):
    """``(label, attracting)``: component labels and, per label, whether no edge leaves the
    component (one streamed pass over the edges)."""
    from .store_edges import out_edges
    label = _labels(G)
    attracting = np.ones(len(G), dtype=bool)
    for src, dst, _ in out_edges(G.store):
        attracting[label[src[label[src] != label[dst]]]] = False
    return label, attracting


def attracting_components(G):
    """Sets of nodes, one per attracting component (no edge leaves it), as
    :func:`networkx.attracting_components`, in the order of
    :func:`strongly_connected_components`."""
    from .scc_order import components_in_order
    _directed_only(G)
    if not len(G):
        return
    label, attracting = _attracting(G)
    for members in components_in_order(G):
        if attracting[label[members[0]]]:
            yield _named(G, members)


def number_attracting_components(G):
    """How many attracting components, as :func:`networkx.number_attracting_components`."""
    _directed_only(G)
    if not len(G):
        return 0
    label, attracting = _attracting(G)
    return int((attracting & (label == np.arange(len(G)))).sum())


def is_attracting_component(G):
    """Whether ``G`` is one attracting component, as :func:`networkx.is_attracting_component`."""
    _directed_only(G)
    return bool(len(G)) and number_strongly_connected_components(G) == 1


def is_semiconnected(G):
    """Whether for every two nodes one reaches the other, as :func:`networkx.is_semiconnected`
    (streamed: components, then their longest-path levels in the condensation)."""
    from ..algorithms.scc import is_semiconnected as semiconnected
    _directed_only(G)
    if not len(G):
        raise nx.NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return semiconnected(G.store, _labels(G), run_options())


def is_directed_acyclic_graph(G):
    """Whether ``G`` is directed without cycles, as :func:`networkx.is_directed_acyclic_graph`:
    every strongly connected component a single node, and no self-loop."""
    from .degree import _loops
    if not G.is_directed():
        return False
    if not len(G):
        return True
    return number_strongly_connected_components(G) == len(G) and not _loops(G).any()
