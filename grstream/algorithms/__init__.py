"""Built-in algorithms, each one module of the same shape written against the public GAS API:
the program class(es), a function returning ``(values, result)``, and ``from_args`` for the CLI.
``predecessors`` adds BFS/SSSP trees and paths (no CLI command); ``_params`` checks parameters,
``_simple`` merges parallel edges."""
from . import bc, bfs, cc, pagerank, predecessors, sssp
from .bc import BrandesBackward, BrandesForward, betweenness
from .bfs import BFS
from .cc import ConnectedComponents, connected_components
from .pagerank import PageRank, PersonalizedPageRank, WeightedPageRank
from .predecessors import (BFSTree, ShortestPathTree, all_predecessors, bfs_predecessors, path,
                           sssp_predecessors)
from .sssp import SSSP

#: CLI name -> module
ALGORITHMS = {m.NAME: m for m in (bfs, sssp, pagerank, cc, bc)}

__all__ = ["ALGORITHMS", "BFS", "SSSP", "PageRank", "PersonalizedPageRank", "WeightedPageRank",
           "ConnectedComponents", "BrandesForward", "BrandesBackward", "BFSTree", "ShortestPathTree",
           "betweenness", "connected_components", "bfs_predecessors",
           "sssp_predecessors", "all_predecessors", "path"]
