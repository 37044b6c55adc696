"""Built-in algorithms, each one module of the same shape written against the public GAS API:
the program class(es) and an entry point ``function(store, <params>, **run_options)`` returning
``(values, result)``, whose parameters are declared once (params.py) and give ``grstream run``
its options. ``predecessors`` adds BFS/SSSP trees and paths (no CLI command); ``_checks``
holds the checks that need the store, ``_simple`` merges parallel edges.

A new algorithm is its module plus one line in :data:`ALGORITHMS`. Modules load on first use,
so the command line's parser imports no algorithm until it parses ``run``.
"""
import importlib

#: CLI name -> its declared entry point, as "module:function" (loaded on first use) or the
#: function itself
ALGORITHMS = {
    "bfs": "grstream.algorithms.bfs:bfs",
    "sssp": "grstream.algorithms.sssp:sssp",
    "pagerank": "grstream.algorithms.pagerank:pagerank",
    "cc": "grstream.algorithms.cc:connected_components",
    "bc": "grstream.algorithms.bc:betweenness",
    "eigenvector": "grstream.algorithms.eigenvector:eigenvector_centrality",
    "katz": "grstream.algorithms.eigenvector:katz_centrality",
    "scc": "grstream.algorithms.scc:strongly_connected_components",
    "kcore": "grstream.algorithms.kcore:core_number",
    "bfs-to": "grstream.algorithms.reach:bfs_to",
    "hits": "grstream.algorithms.hits:hits",
}

#: public name -> module defining it
_EXPORTS = {"BFS": "bfs", "SSSP": "sssp", "PageRank": "pagerank",
            "PersonalizedPageRank": "pagerank", "WeightedPageRank": "pagerank",
            "ConnectedComponents": "cc", "connected_components": "cc",
            "BrandesForward": "bc", "BrandesBackward": "bc", "betweenness": "bc",
            "BFSTree": "predecessors", "ShortestPathTree": "predecessors",
            "all_predecessors": "predecessors", "bfs_predecessors": "predecessors",
            "path": "predecessors", "sssp_predecessors": "predecessors",
            "EigenvectorCentrality": "eigenvector", "KatzCentrality": "eigenvector",
            "eigenvector_centrality": "eigenvector", "katz_centrality": "eigenvector",
            "strongly_connected_components": "scc", "CoreNumber": "kcore",
            "core_number": "kcore", "ReverseBFS": "reach", "bfs_to": "reach",
            "AuthorityStep": "hits", "HubStep": "hits", "hub_authority": "hits", "hits": "hits"}
_MODULES = ("bc", "bfs", "cc", "eigenvector", "hits", "kcore", "pagerank", "pagerank_delta",
            "predecessors", "reach", "scc", "sssp", "triangles", "params")

__all__ = ["ALGORITHMS", "declaration"] + list(_EXPORTS)


def declaration(name):
    """The :class:`~grstream.algorithms.params.Algorithm` registered as ``name``."""
    from ..errors import UsageError
    entry = ALGORITHMS.get(name)
    if entry is None:
        raise UsageError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
    return entry.declaration


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'grstream.algorithms' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_MODULES))
