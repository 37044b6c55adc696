"""The object NetworkX loads as the ``grstream`` backend (``networkx.backends`` entry point)."""
from . import centrality, checks, components, convert, link_analysis, shortest_paths, testing
from . import traversal


class BackendInterface:
    """NetworkX's backend interface: conversions, ``can_run`` / ``should_run``, the test hook,
    and one attribute per implemented NetworkX function (same name and signature)."""

    convert_from_nx = staticmethod(convert.convert_from_nx)
    convert_to_nx = staticmethod(convert.convert_to_nx)
    can_run = staticmethod(checks.can_run)
    should_run = staticmethod(checks.should_run)
    on_start_tests = staticmethod(testing.on_start_tests)

    pagerank = staticmethod(link_analysis.pagerank)
    bfs_layers = staticmethod(traversal.bfs_layers)
    bfs_edges = staticmethod(traversal.bfs_edges)
    bfs_predecessors = staticmethod(traversal.bfs_predecessors)
    single_source_shortest_path_length = staticmethod(traversal.single_source_shortest_path_length)
    single_source_dijkstra_path_length = staticmethod(shortest_paths.single_source_dijkstra_path_length)
    single_source_dijkstra = staticmethod(shortest_paths.single_source_dijkstra)
    dijkstra_predecessor_and_distance = staticmethod(shortest_paths.dijkstra_predecessor_and_distance)
    connected_components = staticmethod(components.connected_components)
    weakly_connected_components = staticmethod(components.weakly_connected_components)
    number_connected_components = staticmethod(components.number_connected_components)
    betweenness_centrality = staticmethod(centrality.betweenness_centrality)


backend_interface = BackendInterface()
