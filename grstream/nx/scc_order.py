"""NetworkX's order of strongly connected components.

``networkx.strongly_connected_components`` yields the components as its depth-first search
(Nuutila's variant of Tarjan's) completes them: sources in node order, each node's successors
in insertion order. That order is a property of the sequential search itself (which
component completes first depends on the order the search meets edges inside every
component), so it is computed here by the same search over the graph's adjacency arrays, in
memory; the streamed coloring (grstream/algorithms/scc.py) gives the components where their
order does not matter (how many, whether one).
"""
import numpy as np

from .operators import spelled_out


def components_in_order(G):
    """Yield each strongly connected component of ``G`` as a list of internal ids, in
    NetworkX's order, each list in the order NetworkX adds them to its set."""
    indptr, dst = spelled_out(G, G.order)
    n = len(G)
    starts, nbrs = indptr.tolist(), dst.tolist()
    preorder = [0] * n
    lowlink = [0] * n
    found = [False] * n
    at = starts[:-1]   # each node's next successor to look at
    stack, count = [], 0
    for source in range(n):
        if found[source]:
            continue
        queue = [source]
        while queue:
            v = queue[-1]
            if not preorder[v]:
                count += 1
                preorder[v] = count
            done, p, end = True, at[v], starts[v + 1]
            while p < end:
                w = nbrs[p]
                p += 1
                if not preorder[w]:
                    queue.append(w)
                    done = False
                    break
            at[v] = p
            if not done:
                continue
            low = preorder[v]
            for w in nbrs[starts[v]:end]:
                if not found[w]:
                    low = min(low, lowlink[w] if preorder[w] > preorder[v] else preorder[w])
            lowlink[v] = low
            queue.pop()
            if low == preorder[v]:
                comp = [v]
                while stack and preorder[stack[-1]] > preorder[v]:
                    comp.append(stack.pop())
                for k in comp:
                    found[k] = True
                yield comp
            else:
                stack.append(v)


def component_ids(G):
    """``(comp, order)``: per vertex the index of its component in NetworkX's order (int64),
    and the components as lists (:func:`components_in_order`)."""
    comp = np.zeros(len(G), np.int64)
    order = list(components_in_order(G))
    for i, members in enumerate(order):
        comp[members] = i
    return comp, order
