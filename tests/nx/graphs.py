"""Hypothesis strategies of NetworkX graphs with string labels (and optional weights)."""
import random

import networkx as nx
from hypothesis import strategies as st


@st.composite
def nx_graphs(draw, directed=None, weighted=None, max_nodes=10, min_nodes=1, float_weights=False):
    """A Graph or DiGraph on nodes "n0", "n1", ... with edges added in node order (neighbours
    in node order; tests/nx/test_order.py shuffles the insertion order)."""
    directed = draw(st.booleans()) if directed is None else directed
    weighted = draw(st.booleans()) if weighted is None else weighted
    n = draw(st.integers(min_nodes, max_nodes))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=3 * n))
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(f"n{i}" for i in range(n))
    edges = sorted(set(pairs if directed else (tuple(sorted(p)) for p in pairs)))
    values = (st.floats(0.125, 8.0, allow_nan=False) if float_weights
              else st.integers(1, 5))
    for u, v in edges:
        attrs = {"weight": draw(values)} if weighted else {}
        G.add_edge(f"n{u}", f"n{v}", **attrs)
    return G


def shuffled(G, seed):
    """``G`` rebuilt with its nodes and edges inserted in a random order (neighbour order is
    then not node order); ``seed`` an int or a ``random.Random``."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    nodes, edges = list(G), list(G.edges())
    rng.shuffle(nodes)
    rng.shuffle(edges)
    H = G.__class__()
    H.add_nodes_from(nodes)
    H.add_edges_from(edges)
    return H
