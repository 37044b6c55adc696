"""grstream as a NetworkX backend.

``nx.pagerank(G, backend="grstream")`` converts ``G`` to a temporary store and streams it;
:func:`from_store` wraps an existing store (larger than memory) as a graph NetworkX dispatches
to the backend. Engine options come from ``nx.config.backends.grstream``
(:class:`~grstream.nx.backend_info.GrstreamConfig`).
"""
from .convert import convert_from_nx, convert_to_nx, from_store
from .graph import GrstreamGraph
from .backend_info import GrstreamConfig

__all__ = ["GrstreamGraph", "GrstreamConfig", "from_store", "convert_from_nx", "convert_to_nx"]
