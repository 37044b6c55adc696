"""What NetworkX learns about the backend without importing it (``networkx.backend_info``).

Kept free of grstream's heavier modules: NetworkX calls :func:`get_info` at the end of its own
import.
"""
from networkx.utils.configs import Config

_BFS = ("Streamed BFS levels; order as NetworkX's queue, neighbours in insertion order; "
        "bidirectional paths only where the shortest path is unique.")
_SSSP = ("Streamed SSSP (one run from all the sources; all-source averages in lanes); weights "
         "must be finite and non-negative; dicts, paths and predecessor lists in the order "
         "NetworkX's heap settles the nodes.")
_CC = "Streamed label propagation over both edge directions."
_PLAIN = "Graphs without node or edge attributes; the result shares or builds a store."

#: NetworkX functions the backend implements -> what to know, shown in NetworkX's docs
FUNCTIONS = {
    "pagerank": "Streamed power iteration with NetworkX's options and stopping rule.",
    "hits": "Streamed power iteration (NetworkX's `_hits_python`), normalized only; a call "
            "whose largest singular value is not simple raises NotImplementedError.",
    "betweenness_centrality": "Streamed Brandes per source; `k` samples NetworkX's sources "
                              "for the same seed; weights must be finite and positive.",
    **dict.fromkeys(["bfs_layers", "bfs_edges", "bfs_tree", "bfs_predecessors",
                     "bfs_successors", "descendants_at_distance",
                     "single_source_shortest_path", "single_source_shortest_path_length",
                     "bidirectional_shortest_path", "predecessor", "has_path"], _BFS),
    **dict.fromkeys(["single_source_dijkstra", "single_source_dijkstra_path",
                     "single_source_dijkstra_path_length", "multi_source_dijkstra",
                     "multi_source_dijkstra_path", "multi_source_dijkstra_path_length",
                     "dijkstra_path", "dijkstra_path_length",
                     "dijkstra_predecessor_and_distance", "shortest_path",
                     "shortest_path_length", "average_shortest_path_length"], _SSSP),
    "astar_path": _SSSP + " No heuristic.",
    "astar_path_length": _SSSP + " No heuristic.",
    **dict.fromkeys(["connected_components", "number_connected_components", "is_connected",
                     "node_connected_component", "weakly_connected_components",
                     "number_weakly_connected_components", "is_weakly_connected"], _CC),
    **dict.fromkeys(["relabel_nodes", "convert_node_labels_to_integers", "union", "union_all",
                     "disjoint_union", "disjoint_union_all", "compose", "compose_all"], _PLAIN),
    "harmonic_centrality": "Each source's distances from one streamed run, 64 per pass; sums "
                           "in NetworkX's order; not with fewer targets than sources.",
    **dict.fromkeys(["eccentricity", "diameter", "radius", "periphery", "center"],
                    "Every node's distances from one streamed run (BFS, or SSSP over "
                    "non-negative weights), 64 sources per pass; `usebounds` gives the same "
                    "answer."),
    **dict.fromkeys(["eigenvector_centrality", "katz_centrality"],
                    "Streamed power iteration with NetworkX's start, options and stopping rule."),
    **dict.fromkeys(["degree_centrality", "in_degree_centrality", "out_degree_centrality"],
                    "From the store's degree arrays."),
    **dict.fromkeys(["isolates", "number_of_isolates", "is_isolate", "is_empty",
                     "number_of_selfloops"], "From the store's degree arrays."),
    "is_negatively_weighted": "Whole graphs: the least stored weight (one pass).",
    "average_neighbor_degree": "Unweighted: one streamed pass summing the neighbours' degrees.",
    **dict.fromkeys(["attracting_components", "number_attracting_components",
                     "is_attracting_component", "is_directed_acyclic_graph", "is_semiconnected"],
                    "From the streamed strongly connected components."),
    **dict.fromkeys(["strongly_connected_components", "number_strongly_connected_components",
                     "is_strongly_connected"],
                    "Streamed coloring (min-label propagation forward, then back from each "
                    "root); the generator yields in NetworkX's order, from the same "
                    "depth-first search over the adjacency in memory."),
    "core_number": "Streamed peeling, all vertices of degree <= k removed at once.",
    **dict.fromkeys(["k_core", "k_shell", "k_crust", "k_corona"],
                    "Streamed core numbers; the subgraph is a new store. " + _PLAIN),
    **dict.fromkeys(["ancestors", "descendants", "single_target_shortest_path_length"],
                    "Streamed BFS over in-edges (ancestors, single target) or out-edges."),
    "reverse": _PLAIN + " Weights are kept.",
    "label_propagation_communities": "NetworkX's colouring (in memory), then one streamed "
                                     "pass per colour class counting neighbour labels (CPU).",
    **dict.fromkeys(["triangles", "clustering", "average_clustering", "transitivity"],
                    "Triangle counts as a block product over pairs of shards (two in memory "
                    "at a time, CPU); clustering without weights (or all 1)."),
}


class GrstreamConfig(Config):
    """Configuration of the grstream NetworkX backend (``nx.config.backends.grstream``).

    Parameters
    ----------
    memory_budget : int or str or None
        Bytes the engine may use for vertex state plus shard data ("512M", "2GiB", an int);
        None: no limit. Stores larger than the budget are streamed shard by shard.
    device : {"cpu", "cuda", "auto"}
        Where programs run.
    progress : bool
        Show grstream's progress bars on stderr.
    num_shards : int or None
        Shards of the temporary store built when a NetworkX graph is converted (None: sized by
        grstream's default shard size).
    tmp_dir : str or None
        Directory for those temporary stores (None: the system's temporary directory).
    """

    memory_budget: int | str | None = None
    device: str = "cpu"
    progress: bool = False
    num_shards: int | None = None
    tmp_dir: str | None = None

    def _on_setattr(self, key, value):
        if key == "device" and value not in ("cpu", "cuda", "auto"):
            raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', not {value!r}")
        if key == "progress" and not isinstance(value, bool):
            raise TypeError(f"progress must be True or False, not {value!r}")
        if key == "num_shards" and value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"num_shards must be a positive int or None, not {value!r}")
        if key == "memory_budget" and value is not None:
            from ..units import parse_bytes
            parse_bytes(value)  # raises UsageError on a bad size
        return value


def get_info():
    """Backend metadata for NetworkX (the ``networkx.backend_info`` entry point)."""
    return {
        "backend_name": "grstream",
        "project": "grstream",
        "package": "grstream",
        "short_summary": "Streams graphs larger than memory through GAS programs (CPU or GPU).",
        "default_config": GrstreamConfig(),
        "functions": {name: {"additional_docs": doc} for name, doc in FUNCTIONS.items()},
    }
