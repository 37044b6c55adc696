"""``can_run`` rules of the centrality, component and reachability functions (checks.py
holds the others and merges these into its table)."""
import math

import networkx as nx

from .convert import weights


def numeric_weights(G, weight, what, nonnegative=False):
    """True where ``weight`` names finite numbers on every edge (and, with ``nonnegative``, none
    below 0), else the reason grstream's ``what`` program cannot run."""
    if callable(weight):
        return f"a weight function cannot run in grstream's {what} program"
    if weight is None:
        return True
    w = weights(G, weight)
    if not w.known:
        return f"the graph was converted without edge attribute {weight!r}"
    if not (w.numeric and w.finite and (w.lo >= 0 or not nonnegative)):
        kind = "finite non-negative numbers" if nonnegative else "finite numbers"
        return f"grstream's {what} needs {kind} as {weight!r}"
    return True


def _every_node(G, values, option, nonnegative):
    """A dict with a finite number for exactly the nodes of ``G`` (what the programs take)."""
    if not isinstance(values, dict) or set(values) != set(G):
        return f"{option} must be a dict with a value for every node (and no other key)"
    try:
        x = [float(v) for v in values.values()]
    except (TypeError, ValueError):
        return f"{option} must hold numbers"
    if not all(math.isfinite(v) and (v >= 0 or not nonnegative) for v in x):
        return f"grstream takes finite{' non-negative' if nonnegative else ''} {option} values"
    return True


def _eigenvector(a):
    if a["nstart"] is not None:
        ok = _every_node(a["G"], a["nstart"], "nstart", nonnegative=True)
        if ok is not True:
            return ok
    return numeric_weights(a["G"], a["weight"], "eigenvector centrality")


def _katz(a):
    G, beta = a["G"], a["beta"]
    if a["nstart"] is not None:
        ok = _every_node(G, a["nstart"], "nstart", nonnegative=False)
        if ok is not True:
            return ok
    if isinstance(beta, dict):
        # a dict missing nodes raises NetworkX's NetworkXError in the backend too
        ok = True if set(beta) != set(G) else _every_node(G, beta, "beta", nonnegative=False)
        if ok is not True:
            return ok
    else:
        try:
            if not math.isfinite(float(beta)):
                return "beta must be finite"
        except (TypeError, ValueError):
            return f"beta={beta!r} is neither a number nor a dict"
    return numeric_weights(G, a["weight"], "Katz centrality")


def _reverse(a):
    from .checks import _plain_graph
    if not a["copy"]:
        return "a reversed view (copy=False) would share the NetworkX graph"
    return _plain_graph(a["G"])


def _cores(a):
    from .checks import _plain_graph
    core = a["core_number"]
    if core is not None and (not isinstance(core, dict) or set(core) != set(a["G"])
                             or not all(isinstance(c, int) for c in core.values())):
        return "core_number must be a dict with an int for every node (and no other key)"
    return _plain_graph(a["G"])


def _neighbour_degree(a):
    if a["G"].is_multigraph():
        return "a multigraph's neighbours are not its parallel edges"
    if a["weight"] is not None:
        return "weighted neighbour degrees are float sums in NetworkX's order"
    if a["nodes"] is not None and (a["nodes"] in a["G"] or not hasattr(a["nodes"], "__iter__")):
        return "nodes must be a collection of nodes"
    return True


def _negative(a):
    if a["edge"] is not None:
        return "one edge's data is not kept apart in a store"
    w = weights(a["G"], a["weight"])
    if not w.known:
        return f"the graph was converted without edge attribute {a['weight']!r}"
    if not (w.numeric and w.finite):
        return f"{a['weight']!r} holds values that are not finite numbers"
    return True


def _distances(a):
    return numeric_weights(a["G"], a["weight"], "SSSP", nonnegative=True)


def _harmonic(a):
    from .distance import fewer_targets
    try:
        if fewer_targets(a["G"], a["nbunch"], a["sources"]):
            return "with fewer targets than sources NetworkX sums in its search's dict order"
    except nx.NetworkXError:
        return True   # the function raises NetworkX's error
    return numeric_weights(a["G"], a["distance"], "SSSP", nonnegative=True)


def _hits(a):
    G = a["G"]
    if not a["normalized"]:
        return "NetworkX's unnormalised HITS has the sign ARPACK happens to return"
    if len(G) and not G.number_of_edges():
        return "NetworkX's ARPACK fails on a graph without edges"
    if a["nstart"] is not None:
        ok = _every_node(G, a["nstart"], "nstart", nonnegative=True)
        if ok is not True or not sum(a["nstart"].values()) > 0:
            return "grstream's HITS starts from non-negative nstart values, not all 0"
    return numeric_weights(G, "weight", "HITS", nonnegative=True)


def _unit_weights(a):
    """Clustering: NetworkX's weighted formula equals the unweighted one where every weight
    is 1 (its sums of cube roots are floats in its own order otherwise)."""
    if a["weight"] is None:
        return True
    w = weights(a["G"], a["weight"])
    if not w.known:
        return f"the graph was converted without edge attribute {a['weight']!r}"
    if not (w.numeric and w.lo == w.hi == 1):
        return "weighted clustering sums cube roots of weights in NetworkX's order"
    return True


def _transitivity(a):
    return True if not a["G"].is_directed() else \
        "transitivity of a directed graph counts successors only"


def _always(a):
    return True


RULES = {
    "hits": _hits,
    "harmonic_centrality": _harmonic,
    **dict.fromkeys(["clustering", "average_clustering"], _unit_weights),
    "transitivity": _transitivity,
    "triangles": _always,
    "label_propagation_communities": _always,
    **dict.fromkeys(["eccentricity", "diameter", "radius", "periphery", "center"], _distances),
    "eigenvector_centrality": _eigenvector,
    "katz_centrality": _katz,
    "reverse": _reverse,
    **dict.fromkeys(["k_core", "k_shell", "k_crust", "k_corona"], _cores),
    "average_neighbor_degree": _neighbour_degree,
    "is_negatively_weighted": _negative,
    **dict.fromkeys(["degree_centrality", "in_degree_centrality", "out_degree_centrality",
                     "strongly_connected_components", "number_strongly_connected_components",
                     "is_strongly_connected", "core_number", "ancestors", "descendants",
                     "single_target_shortest_path_length", "isolates", "number_of_isolates",
                     "is_isolate", "attracting_components", "number_attracting_components",
                     "is_attracting_component", "is_directed_acyclic_graph",
                     "is_semiconnected", "is_empty", "number_of_selfloops"], _always),
}
