"""The backend graph: a grstream store plus the NetworkX view of it (labels, direction, weight)."""
import shutil
import weakref

import numpy as np

from .store_edges import out_edges


def _release(store, tmp_dir):
    if store is not None:
        store.close()
    if tmp_dir is not None:
        shutil.rmtree(tmp_dir, ignore_errors=True)


class GrstreamGraph:
    """A graph NetworkX dispatches to the ``grstream`` backend.

    Internal vertex ``i`` of the store is node ``nodes[i]``. Made by converting a NetworkX
    graph (``nx.pagerank(G, backend="grstream")`` does it for you; the temporary store is
    removed when the graph is dropped) or by :func:`grstream.nx.from_store` over an existing
    store.

    Parameters
    ----------
    store : ShardStore or None
        None only for a graph without nodes.
    nodes : sequence or None
        Node labels in internal order; None: the store's labels (the input's ids or names).
    directed, multigraph : bool
        What ``is_directed()`` / ``is_multigraph()`` answer.
    weight : str or None
        Name of the edge attribute stored as the store's ``weight`` (None: no weights stored).
    attrs_known : bool
        True when every edge attribute the graph has is in the store (a store opened with
        ``from_store``); False for a converted graph, whose other attributes were left out.
    num_edges : int, optional
        Edges as NetworkX counts them; default: from the store.
    tmp_dir : str, optional
        Directory removed with the graph.
    order : (indptr, dst) or None
        NetworkX's order of every node's neighbours (internal ids, a CSR) where it is not node
        order; None: neighbours in node order (a store's own order).
    options : dict, optional
        The backend options the store was built with (a converted graph's cache key).
    owner : GrstreamGraph, optional
        The graph whose store this one shares (kept alive; the store is closed with it).
    """

    __networkx_backend__ = "grstream"

    def __init__(self, store, nodes=None, *, directed=True, multigraph=False, weight=None,
                 attrs_known=True, num_edges=None, tmp_dir=None, graph_attrs=None, owner=None,
                 order=None, options=None):
        self.store = store
        self._nodes = nodes
        self._directed = bool(directed)
        self._multigraph = bool(multigraph)
        self.weight = weight
        self.attrs_known = attrs_known
        self._num_edges = num_edges
        self._index = None
        self.order = order
        self.options = options
        self._positions = None
        self.graph = dict(graph_attrs or {})
        self.__networkx_cache__ = {}
        # a graph sharing another's store keeps that one alive instead of owning the store
        self._owner = owner
        self._finalizer = (weakref.finalize(self, _release, store, tmp_dir) if owner is None
                           else None)

    # --- what NetworkX and the wrappers ask of a graph ---
    def is_directed(self):
        return self._directed

    def is_multigraph(self):
        return self._multigraph

    def __len__(self):
        return 0 if self.store is None else int(self.store.num_vertices)

    number_of_nodes = __len__

    def number_of_edges(self):
        if self._num_edges is None:
            self._num_edges = _count_edges(self.store, self._directed)
        return self._num_edges

    def labels(self):
        """Node labels in internal order (a list of Python objects)."""
        if self._nodes is None:
            self._nodes = _store_labels(self.store)
        elif not isinstance(self._nodes, list):
            self._nodes = list(self._nodes)
        return self._nodes

    def __iter__(self):
        return iter(self.labels())

    def __contains__(self, node):
        return self.index_of(node) is not None

    def index_of(self, node):
        """Internal id of ``node``, or None when it is not a node of the graph."""
        if self._index is None:
            self._index = {label: i for i, label in enumerate(self.labels())}
        try:
            return self._index.get(node)
        except TypeError:  # unhashable: never a node
            return None

    def positions(self, u, v):
        """Position of each edge ``(u[i], v[i])`` in ``u[i]``'s neighbours, NetworkX's order."""
        if self._positions is None:
            from .adjacency import Positions
            self._positions = Positions(self.order, len(self))
        return self._positions(np.asarray(u, np.int64), np.asarray(v, np.int64))

    def close(self):
        """Close the store now (and remove it when it was a temporary one)."""
        (self._finalizer or self._owner.close)()

    def __repr__(self):
        kind = ("Multi" if self._multigraph else "") + ("DiGraph" if self._directed else "Graph")
        path = None if self.store is None else self.store.path
        return f"<GrstreamGraph {kind} n={len(self)} store={path}>"


def _store_labels(store):
    """The labels a store keeps for its vertices (strings, original or 1-based ids), else
    ``0..n-1``."""
    if store is None:
        return []
    if hasattr(store, "labels"):  # stores that keep the input's labels
        return store.labels().tolist()
    original = store.original_ids()
    return list(range(int(store.num_vertices))) if original is None else original.tolist()


def _count_edges(store, directed):
    """Edges as NetworkX counts them: each stored edge, or each pair of mirrored ones."""
    if store is None:
        return 0
    m = int(store.num_edges)
    if directed:
        return m
    loops = sum(int(np.count_nonzero(src == dst)) for src, dst, _ in out_edges(store))
    return (m + loops) // 2
