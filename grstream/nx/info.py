"""What NetworkX learns about the backend without importing it (``networkx.backend_info``).

Kept free of grstream's heavier modules: NetworkX calls :func:`get_info` at the end of its own
import.
"""
from networkx.utils.configs import Config

#: NetworkX functions the backend implements -> what differs from NetworkX, shown in their docs
FUNCTIONS = {
    "pagerank": "Runs as a streamed GAS program. Edge weights are honoured when all equal "
                "(then the result is the unweighted one); `personalization`, `nstart` and "
                "`dangling` and differing weights make `can_run` False.",
    "bfs_layers": "Levels come from streamed BFS runs (one per source); within a layer nodes are "
                  "ordered as NetworkX discovers them, neighbours taken in node order.",
    "bfs_edges": "Tree edges rebuilt from streamed BFS levels; neighbours in node order. "
                 "`reverse=True` on a directed graph and `sort_neighbors` make `can_run` False.",
    "bfs_predecessors": "As `bfs_edges`.",
    "single_source_shortest_path_length": "Streamed BFS levels.",
    "single_source_dijkstra_path_length": "Streamed Bellman-Ford style SSSP; weights must be "
                                          "non-negative numbers (else `can_run` is False).",
    "single_source_dijkstra": "Paths rebuilt from the streamed distances: among tied "
                              "predecessors the one nearest the source, then first in node "
                              "order.",
    "dijkstra_predecessor_and_distance": "All predecessors on shortest paths, rebuilt from the "
                                         "streamed distances.",
    "connected_components": "Streamed label propagation.",
    "weakly_connected_components": "Streamed label propagation over both directions.",
    "number_connected_components": "Streamed label propagation.",
    "betweenness_centrality": "Brandes with streamed forward and backward sweeps per source. "
                              "`k` samples the same sources as NetworkX for the same `seed`. "
                              "Differing weights make `can_run` False.",
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
