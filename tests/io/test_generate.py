import networkx as nx
import numpy as np
import pytest

from grstream.errors import UsageError
from grstream.io import generate as gen


def test_rmat_sizes_ranges_and_weights():
    src, dst, weight = gen.rmat(10, edge_factor=4, seed=3, weights=True)
    assert len(src) == len(dst) == len(weight) == 4 << 10
    assert src.dtype == np.int64 and 0 <= min(src.min(), dst.min())
    assert max(src.max(), dst.max()) < 1 << 10
    assert weight.dtype == np.float64 and set(np.unique(weight)) <= set(range(1, 256))
    assert len(np.unique(weight)) > 200


def test_rmat_is_deterministic_per_seed_and_independent_of_threads(monkeypatch):
    monkeypatch.setattr(gen, "GEN_CHUNK_EDGES", 1000)  # several chunks on a small graph
    one = gen.rmat(9, 16, seed=7, threads=1, weights=True)
    four = gen.rmat(9, 16, seed=7, threads=4, weights=True)
    for a, b in zip(one, four):
        np.testing.assert_array_equal(a, b)
    other = gen.rmat(9, 16, seed=8, threads=1)
    assert not np.array_equal(one[0], other[0])
    unweighted = gen.rmat(9, 16, seed=7, threads=2)  # weights do not change the edges
    np.testing.assert_array_equal(unweighted[0], one[0])


def test_rmat_quadrant_frequencies_match_the_initiator():
    scale, n = 12, 1 << 16
    src, dst = gen.rmat(scale, 16, seed=1, permute=False)
    levels = np.arange(scale)[None, :]
    row = (src[:, None] >> levels) & 1
    col = (dst[:, None] >> levels) & 1
    counts = np.bincount((2 * row + col).ravel(), minlength=4) / row.size
    np.testing.assert_allclose(counts, [0.57, 0.19, 0.19, 0.05], atol=0.002)
    assert len(src) == 16 * (1 << scale) and n


def test_rmat_degrees_are_skewed_and_permutation_hides_vertex_zero():
    src, dst = gen.rmat(12, 16, seed=2, permute=False)
    degree = np.bincount(src, minlength=1 << 12)
    assert degree.argmax() == 0 and degree.max() > 50 * degree.mean()
    psrc, _ = gen.rmat(12, 16, seed=2)
    pdeg = np.bincount(psrc, minlength=1 << 12)
    np.testing.assert_array_equal(np.sort(pdeg), np.sort(degree))  # a relabelling only


def test_uniform_graph():
    src, dst = gen.uniform(50, 20000, seed=1)
    assert len(src) == 20000 and src.max() < 50 and dst.min() >= 0
    counts = np.bincount(src, minlength=50)
    assert counts.min() > 250 and counts.max() < 550
    np.testing.assert_array_equal(gen.uniform(50, 20000, seed=1)[1], dst)
    assert len(gen.uniform(5, 0)[0]) == 0


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 5), (4, 3), (7, 7)])
def test_grid_is_exactly_the_4_neighbour_grid(monkeypatch, rows, cols):
    monkeypatch.setattr(gen, "GEN_CHUNK_EDGES", 8)  # many row blocks
    src, dst = gen.grid(rows, cols)
    assert len(src) == gen.grid_edge_count(rows, cols)
    expected = nx.convert_node_labels_to_integers(nx.grid_2d_graph(rows, cols), ordering="sorted")
    got = set(zip(src.tolist(), dst.tolist()))
    assert len(got) == len(src)
    assert got == set(expected.to_directed().edges)


def test_grid_weights_are_deterministic():
    a = gen.grid(5, 5, weights=True, seed=4)
    np.testing.assert_array_equal(a[2], gen.grid(5, 5, weights=True, seed=4)[2])
    assert a[2].min() >= 1 and a[2].max() <= 255


@pytest.mark.parametrize("call, message", [
    (lambda: gen.rmat(0), "scale must be at least 1"),
    (lambda: gen.rmat(50), "at most 40"),
    (lambda: gen.rmat(4, a=0.9, b=0.2), "a \\+ b \\+ c <= 1"),
    (lambda: gen.uniform(0, 5), "num_vertices"),
    (lambda: gen.uniform(5, -1), "num_edges"),
    (lambda: gen.grid(0, 3), "rows"),
    (lambda: gen.rmat(4, seed=-1), "seed must be an integer >= 0, not -1"),
    (lambda: gen.uniform(5, 5, seed=-2), "seed must be an integer >= 0, not -2"),
    (lambda: gen.grid(2, 2, seed=1.5), "seed must be an integer >= 0, not 1.5"),
    (lambda: gen.rmat(4, threads=0), "threads must be an integer >= 1, not 0"),
    (lambda: gen.uniform(5, 5, threads=-3), "threads must be an integer >= 1, not -3"),
])
def test_bad_parameters(call, message):
    with pytest.raises(UsageError, match=message):
        call()
