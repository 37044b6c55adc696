"""Moving graphs between NetworkX and grstream: conversion both ways, stores opened as graphs,
and the facts about edge weights that decide whether the backend can run a call."""
from typing import Optional, Union

import os
import shutil
import tempfile
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..errors import UsageError
from .store_edges import out_edges
from .graph import GrstreamGraph


def config():
    """``nx.config.backends.grstream`` (the defaults when NetworkX's test setup replaced it)."""
    cfg = getattr(nx.config.backends, "grstream", None)
    if cfg is None:
        from .backend_info import GrstreamConfig
        cfg = GrstreamConfig()
    return cfg


def run_options():
    """Engine keyword arguments (device, memory_budget, progress) from the backend config."""
    from ..units import parse_bytes
    cfg = config()
    budget = None if cfg.memory_budget is None else parse_bytes(cfg.memory_budget)
    return {"device": cfg.device, "memory_budget": budget, "progress": cfg.progress}


def convert_from_nx(graph, *, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None):
    """A :class:`GrstreamGraph` over a temporary store built from a NetworkX graph.

    Internal ids follow ``list(graph)``; an undirected graph is stored with both directions of
    every edge (a self-loop once), each parallel edge of a multigraph as its own edge. When
    ``edge_attrs`` names an attribute, its values (the given default where an edge lacks it)
    become the store's weights, unless all are 1 (then the store has none and the functions
    run their unweighted programs, which give the same answers). The edges come from one
    vectorised pass over NetworkX's adjacency (:class:`~grstream.nx.adjacency.Edges`), the
    one ``can_run`` made when it checked the weights; the graph keeps NetworkX's order of
    every node's neighbours where it is not node order (traversals follow it).
    """
    if isinstance(graph, GrstreamGraph):
        return graph
    attr, default = _weight_attr(edge_attrs)
    directed, multigraph = graph.is_directed(), graph.is_multigraph()
    common = {"directed": directed, "multigraph": multigraph, "weight": attr,
              "attrs_known": False, "num_edges": graph.number_of_edges(),
              "graph_attrs": graph.graph if preserve_graph_attrs else None,
              "options": store_options()}
    edges = adjacency_of(graph, attr, default, keep=False)
    if not edges.n:
        return GrstreamGraph(None, edges.nodes, **common)
    if edges.weight is False:
        raise TypeError(f"edge attribute {attr!r} holds a non-number")
    src, dst, weight = edges.edges(directed)
    if weight is not None and (weight == 1).all():
        weight = None  # all 1, NetworkX's default: the unweighted programs give the answers
    store, tmp_dir = temp_store(src, dst, weight, edges.n, directed,
                                f"<networkx {graph_name or 'G'}>")
    return GrstreamGraph(store, edges.nodes, tmp_dir=tmp_dir, order=edges.order(), **common)


def adjacency_of(G, attr, default=1, keep=True):
    """:class:`~grstream.nx.adjacency.Edges` of NetworkX graph ``G`` with weights ``attr``;
    ``keep``: remember them in NetworkX's per-graph cache for the conversion that follows
    (which takes them out: ``keep=False``), so ``can_run`` and the conversion share one pass."""
    from .adjacency import Edges
    cache = getattr(G, "__networkx_cache__", None)
    key = ("grstream-edges", attr, default)
    edges = None if cache is None else (cache.get if keep else cache.pop)(key, None)
    if edges is None:
        edges = Edges(G, attr, default)
        # kept for a conversion only when NetworkX has none of G cached already
        if keep and cache is not None and not cache.get("backends", {}).get("grstream"):
            cache[key] = edges
    return edges


def forget_adjacency(G):
    """Drop the edge arrays ``can_run`` left for a conversion that is not coming."""
    cache = getattr(G, "__networkx_cache__", None)
    for key in [k for k in (cache or ()) if isinstance(k, tuple) and k[:1] == ("grstream-edges",)]:
        cache.pop(key, None)


def store_options():
    """The backend options that shape a converted graph's store (its cache key besides
    NetworkX's attributes)."""
    cfg = config()
    return {"num_shards": cfg.num_shards, "tmp_dir": cfg.tmp_dir}


def drop_stale_conversions(G):
    """Remove from NetworkX's cache of ``G`` the grstream conversions built with other
    :func:`store_options` than the current ones, so that NetworkX converts again."""
    cache = getattr(G, "__networkx_cache__", None)
    if not cache:
        return
    ours = cache.get("backends", {}).get("grstream", {})
    options = store_options()
    for key, B in list(ours.items()):
        if isinstance(B, GrstreamGraph) and B.options != options:
            ours.pop(key, None)


def temp_store(src, dst, weight, n, directed, name):
    """``(store, tmp_dir)``: a store of these edges in a new temporary directory (undirected:
    each edge given once, stored both ways), built with the backend config's options."""
    from ..io.arrays import array_source
    from ..partition import build_shards
    from ..store import open as open_store
    cfg = config()
    if cfg.tmp_dir is not None and not os.path.isdir(cfg.tmp_dir):
        raise UsageError(f"nx.config.backends.grstream.tmp_dir {os.fspath(cfg.tmp_dir)!r} is not "
                         "an existing directory")
    tmp_dir = tempfile.mkdtemp(prefix="grstream-nx-", dir=cfg.tmp_dir)
    try:
        source = array_source(src, dst, weight, name=name, weighted=weight is not None,
                              chunk_edges=None, fmt="networkx", num_vertices=n)
        # renumber=False: internal ids must stay the positions in the node list
        path = build_shards(source, os.path.join(tmp_dir, "graph.h5"), undirected=not directed,
                            renumber=False,
                            num_shards=cfg.num_shards, progress=cfg.progress)
        return open_store(path), tmp_dir
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise


def _weight_attr(edge_attrs):
    if not edge_attrs:
        return None, None
    if len(edge_attrs) > 1:
        raise NotImplementedError(f"grstream keeps one edge attribute, not {sorted(edge_attrs)}")
    (attr, default), = edge_attrs.items()
    return attr, 1 if default is None else default


def convert_to_nx(obj, *, name=None):
    """A NetworkX graph of the same class, nodes and edges (weights under the graph's weight
    attribute) for a :class:`GrstreamGraph`; anything else is returned as it is."""
    if not isinstance(obj, GrstreamGraph):
        return obj
    cls = {(False, False): nx.Graph, (True, False): nx.DiGraph, (False, True): nx.MultiGraph,
           (True, True): nx.MultiDiGraph}[obj.is_directed(), obj.is_multigraph()]
    G = cls()
    G.graph.update(obj.graph)
    labels = obj.labels()
    G.add_nodes_from(labels)
    for src, dst, w in out_edges(obj.store, weights=obj.weight is not None):
        keep = slice(None) if obj.is_directed() else src <= dst
        pairs = zip((labels[i] for i in src[keep]), (labels[i] for i in dst[keep]))
        if w is None:
            G.add_edges_from(pairs)
        else:
            G.add_edges_from((u, v, {obj.weight: float(x)}) for (u, v), x in zip(pairs, w[keep]))
    return G


def from_store(path: Union[str, "os.PathLike[str]"], *, directed: Optional[bool] = None,
               weight: Optional[str] = "weight", verify: str = "first") -> "GrstreamGraph":
    """A NetworkX-dispatchable graph over an existing store, streamed, never loaded whole.

    Parameters
    ----------
    path : str or Path
        A store written by ``grstream shard`` / :func:`grstream.build_shards`.
    directed : bool, optional
        Default: directed unless the store is undirected (stored both ways). False on a store
        built directed raises :class:`~grstream.errors.UsageError` (its edges are one-way).
    weight : str
        The edge attribute name under which NetworkX functions see the store's weights.
    verify : str
        Checksum verification passed to :func:`grstream.open`.

    Returns
    -------
    GrstreamGraph
        Its nodes are the store's ids (the input's ids when it was renumbered).

    Examples
    --------
    >>> G = grstream.nx.from_store("shards/default.h5")          # doctest: +SKIP
    >>> with nx.config.backends.grstream(memory_budget="64M"):   # doctest: +SKIP
    ...     ranks = nx.pagerank(G)
    """
    from ..store import open as open_store
    store = open_store(path, verify=verify)
    if directed is None:
        directed = store.directed
    elif not directed and store.directed:
        store.close()
        raise UsageError(f"{os.fspath(path)} was built directed: its edges are one-way, so "
                         "it is no undirected graph; open it with directed=True (or None), or "
                         "build the store with undirected (grstream shard --undirected)")
    return GrstreamGraph(store, None, directed=directed, multigraph=False,
                         weight=weight if "weight" in store.edge_props else None,
                         attrs_known=True)


@dataclass(frozen=True)
class Weights:
    """What a call needs to know about the values of one edge attribute."""

    known: bool = True        # False: a converted graph that left this attribute out
    numeric: bool = True
    finite: bool = True
    lo: float = 1.0
    hi: float = 1.0


def weights(G, attr):
    """:class:`Weights` of edge attribute ``attr`` (missing values count as 1, NetworkX's
    default); one pass over the edges, remembered in NetworkX's per-graph cache."""
    if attr is None:
        return Weights()
    cache = getattr(G, "__networkx_cache__", None)
    key = ("grstream-weights", attr)
    if cache is not None and key in cache:
        return cache[key]
    summary = _store_weights(G, attr) if isinstance(G, GrstreamGraph) else _nx_weights(G, attr)
    if cache is not None:
        cache[key] = summary
    return summary


def _nx_weights(G, attr):
    values = adjacency_of(G, attr).weight
    if values is False:
        return Weights(numeric=False)
    return _summary(values) or Weights()


def _store_weights(G, attr):
    if attr != G.weight:
        return Weights() if G.attrs_known else Weights(known=False)
    # min and max shard by shard: the store may be larger than memory
    parts = [_summary(w) for _, _, w in out_edges(G.store, weights=True) if w is not None]
    parts = [p for p in parts if p is not None]
    if not parts:
        return Weights()
    return Weights(finite=all(p.finite for p in parts), lo=min(p.lo for p in parts),
                   hi=max(p.hi for p in parts))


def _summary(values):
    """Weights of a non-empty array of values; None for an empty one."""
    if not len(values):
        return None
    finite = bool(np.isfinite(values).all())
    return Weights(finite=finite, lo=float(np.nanmin(values)) if finite else 0.0,
                   hi=float(np.nanmax(values)) if finite else 0.0)
