"""Scatter and mutable edge state on the CPU backend."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.errors import ProgramError, UsageError

from ..algorithms.conftest import build, random_edges


class CountedBFS(BFS):
    """BFS whose scatter counts, per edge, how often its source changed."""

    edge_state = {"hits": "int64"}

    def scatter(self, src, dst, edge):
        edge.hits = edge.hits + 1


class EdgeRank(gr.GASProgram):
    """PageRank without dangling handling, passing shares through edge state (PowerGraph style):
    scatter writes each out-edge's share of the source's new rank; the next gather sums them."""

    vertex = {"rank": "float64"}
    reads = {"out_degree"}
    edge_state = {"share": "float64"}
    gather_reduce = gr.monoid.sum
    activate = "all"

    def init(self, v):
        v.rank = 1.0 / self.num_vertices

    def gather_map(self, src, dst, edge):
        return edge.share

    def apply(self, v, acc):
        v.rank = 0.15 / self.num_vertices + 0.85 * acc
        return True

    def scatter(self, src, dst, edge):
        edge.share = src.rank / src.out_degree


class WeightDecay(gr.GASProgram):
    """Edge state seeded from the stored weights: every sweep halves the weights it passes."""

    vertex = {"seen": "float64"}
    edge_state = {"weight": "float64"}
    gather_edges = "out"
    gather_reduce = gr.monoid.sum
    activate = "all"

    def gather_map(self, src, dst, edge):
        return edge.weight

    def apply(self, v, acc):
        v.seen = acc
        return True

    def scatter(self, src, dst, edge):
        edge.weight = edge.weight * 0.5


def csr_sources(store):
    """The source of every edge in the store's global CSR order."""
    parts = []
    for i in range(store.num_shards):
        lo = store.intervals[i]
        ptr = store.read(i, "out/indptr")
        parts.append(np.repeat(np.arange(lo, lo + len(ptr) - 1), np.diff(ptr)))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def test_scatter_runs_on_out_edges_of_changed_vertices(tmp_path, rng):
    src, dst, _ = random_edges(rng, 50, 200)
    store = build(tmp_path, 50, src, dst, num_shards=4)
    r = gr.run(CountedBFS(source=int(src[0])), store)
    level = r.values["level"]
    owner = csr_sources(store)
    # every vertex discovered by apply changed exactly once; the source was set by init
    reached = (level >= 1) & (level < 1 << 62)
    np.testing.assert_array_equal(r.edge_values["hits"], reached[owner].astype(np.int64))


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_gather_reads_what_scatter_wrote_last_iteration(tmp_path, rng, shards):
    src, dst, _ = random_edges(rng, 40, 200)
    path = tmp_path / f"eid{shards}.h5"
    n = 40
    import scipy.sparse as sp
    gr.build_shards(sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)), path,
                    num_shards=shards, edge_ids=True, progress=False)
    store = gr.open(path)
    r = gr.run(EdgeRank(), store, max_iter=12)
    # reference: shares start at 0, so iteration 1 gives the teleport term only
    outdeg = np.bincount(src, minlength=n).astype(float)
    x = np.full(n, 0.15 / n)
    for _ in range(11):
        push = np.where(outdeg > 0, x / np.maximum(outdeg, 1), 0.0)
        acc = np.zeros(n)
        np.add.at(acc, dst, push[src])
        x = 0.15 / n + 0.85 * acc
    np.testing.assert_allclose(r.value, x, rtol=1e-12)


def test_edge_state_starts_from_stored_property_and_is_never_written_back(tmp_path, rng):
    src, dst, w = random_edges(rng, 30, 90, weighted=True)
    store = build(tmp_path, 30, src, dst, w, num_shards=3)
    before = [store.read(i, "out/weight").copy() for i in range(store.num_shards)]
    r = gr.run(WeightDecay(), store, max_iter=3)
    expect_seen = np.zeros(30)
    np.add.at(expect_seen, src, w * 0.25)  # third sweep sees weights halved twice
    np.testing.assert_allclose(r.value, expect_seen)
    np.testing.assert_allclose(r.edge_values["weight"], np.concatenate(before) * 0.125)
    for i in range(store.num_shards):
        np.testing.assert_array_equal(store.read(i, "out/weight"), before[i])


def test_in_gather_of_edge_state_needs_edge_ids(tmp_path):
    store = build(tmp_path, 3, np.array([0, 1]), np.array([1, 2]), num_shards=2)
    with pytest.raises(UsageError, match="--edge-ids"):
        gr.run(EdgeRank(), store)


def test_scatter_needs_declared_edge_state():
    with pytest.raises(ProgramError, match="edge_state"):
        class Bad(gr.GASProgram):
            vertex = {"x": "float64"}

            def apply(self, v, acc):
                return True

            def scatter(self, src, dst, edge):
                edge.x = 1.0
