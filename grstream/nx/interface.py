"""The object NetworkX loads as the ``grstream`` backend (``networkx.backends`` entry point)."""
from . import (centrality, checks, components, convert, generic, link_analysis, operators,
               relabel, shortest_paths, testing, traversal, unweighted)
from . import ancestors, clustering, communities, cores, degree, distance, eigen, strong

#: module implementing each NetworkX function the backend covers (same name and signature)
MODULES = {
    link_analysis: ["pagerank", "hits"],
    traversal: ["bfs_layers", "bfs_edges", "bfs_predecessors", "bfs_successors", "bfs_tree",
                "descendants_at_distance", "single_source_shortest_path_length"],
    shortest_paths: ["single_source_dijkstra_path_length", "single_source_dijkstra",
                     "single_source_dijkstra_path", "dijkstra_predecessor_and_distance",
                     "dijkstra_path", "dijkstra_path_length", "multi_source_dijkstra",
                     "multi_source_dijkstra_path", "multi_source_dijkstra_path_length",
                     "astar_path", "astar_path_length"],
    generic: ["average_shortest_path_length", "shortest_path", "shortest_path_length"],
    unweighted: ["single_source_shortest_path", "bidirectional_shortest_path", "has_path",
                 "predecessor"],
    components: ["connected_components", "weakly_connected_components",
                 "number_connected_components", "number_weakly_connected_components",
                 "is_connected", "is_weakly_connected", "node_connected_component"],
    centrality: ["betweenness_centrality"],
    relabel: ["convert_node_labels_to_integers", "relabel_nodes"],
    operators: ["union", "union_all", "disjoint_union", "disjoint_union_all", "compose",
                "compose_all"],
    clustering: ["triangles", "clustering", "average_clustering", "transitivity"],
    communities: ["label_propagation_communities"],
    distance: ["eccentricity", "diameter", "radius", "periphery", "center",
               "harmonic_centrality"],
    eigen: ["eigenvector_centrality", "katz_centrality"],
    degree: ["degree_centrality", "in_degree_centrality", "out_degree_centrality", "isolates",
             "number_of_isolates", "is_isolate", "is_empty", "number_of_selfloops",
             "average_neighbor_degree", "is_negatively_weighted"],
    strong: ["strongly_connected_components", "number_strongly_connected_components",
             "is_strongly_connected", "core_number", "attracting_components",
             "number_attracting_components", "is_attracting_component",
             "is_directed_acyclic_graph", "is_semiconnected"],
    cores: ["k_core", "k_shell", "k_crust", "k_corona"],
    ancestors: ["ancestors", "descendants", "single_target_shortest_path_length", "reverse"],
}


class BackendInterface:
    """NetworkX's backend interface: conversions, ``can_run`` / ``should_run``, the test hook,
    and one attribute per implemented NetworkX function (see :data:`MODULES`)."""

    convert_from_nx = staticmethod(convert.convert_from_nx)
    convert_to_nx = staticmethod(convert.convert_to_nx)
    can_run = staticmethod(checks.can_run)
    should_run = staticmethod(checks.should_run)
    on_start_tests = staticmethod(testing.on_start_tests)


for _module, _names in MODULES.items():
    for _name in _names:
        setattr(BackendInterface, _name, staticmethod(getattr(_module, _name)))

backend_interface = BackendInterface()
