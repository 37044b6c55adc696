"""Built-in algorithms, each one module of the same shape written against the public GAS API:
the program class(es), a function returning ``(values, result)``, and ``from_args`` for the CLI."""
from . import bc, bfs, cc, pagerank, sssp
from .bc import BrandesBackward, BrandesForward, betweenness
from .bfs import BFS
from .cc import ConnectedComponents, connected_components
from .pagerank import PageRank
from .sssp import SSSP

#: CLI name -> module
ALGORITHMS = {m.NAME: m for m in (bfs, sssp, pagerank, cc, bc)}

__all__ = ["ALGORITHMS", "BFS", "SSSP", "PageRank", "ConnectedComponents", "BrandesForward",
           "BrandesBackward", "betweenness", "connected_components"]
