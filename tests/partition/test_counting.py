"""Weighted layouts by counting sorts are bit for bit those of the packed-key sort they replace."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grstream.io.generate import rmat
from grstream.partition import build_shards, compress
from grstream.partition import counting, in_memory
from grstream.partition.layout import compress_pieces

from .graphs import DATASETS, array_source, store_contents

pytestmark = pytest.mark.skipif(not counting.AVAILABLE, reason="scipy's sparsetools moved")

OPTION_NAMES = ("undirected", "self_loops", "duplicates", "renumber")


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _layouts_by_sort(src, dst, weight, n, id_dtype, dedup):
    return (compress(src, dst, weight, 0, n, n, id_dtype, dedup),
            compress(dst, src, weight, 0, n, n, id_dtype, dedup))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 25), st.integers(0, 25), st.integers(-3, 6)),
                   max_size=150),
    extra=st.integers(0, 4),
    dedup=st.booleans(),
    weight_dtype=st.sampled_from([np.float64, np.float32]),
    wide=st.booleans(),
)
def test_counting_layouts_equal_the_sorted_layouts(edges, extra, dedup, weight_dtype, wide):
    # few distinct ids and weights: many repeated pairs whose weights differ, self-loops
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] / 4 for e in edges], dtype=weight_dtype)
    n = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1 + extra
    id_dtype = np.dtype(np.int64 if wide else np.int32)
    itype = np.int64 if wide else counting.index_dtype(n, len(src))
    got = counting.weighted_layouts(src.astype(itype), dst.astype(itype), w.copy(), n, id_dtype,
                                    dedup)
    want = _layouts_by_sort(src, dst, w, n, id_dtype, dedup)
    for g, x in zip(got, want):
        for a, b in zip(g, x):
            _same(a, b)


def test_counting_layouts_of_no_edges():
    empty = np.empty(0, dtype=np.int32)
    for n in (0, 3):
        got = counting.weighted_layouts(empty, empty, np.empty(0), n, np.dtype(np.int32))
        want = _layouts_by_sort(empty, empty, np.empty(0), n, np.int32, False)
        for g, x in zip(got, want):
            for a, b in zip(g, x):
                _same(a, b)


def test_counting_layouts_on_an_rmat_graph():
    # hubs, long rows and many repeated pairs; the sort gets the keys in two pieces
    src, dst, w = rmat(12, 16, seed=5, weights=True)
    w = np.floor(w / 32)                                    # repeated pairs with equal weights too
    n = 1 << 12
    # the counting sorts write into their inputs: a copy of the weights the sort also reads
    dst32, w_copy = dst.astype(np.int32), w.copy()
    got = counting.weighted_layouts(src.astype(np.int32), dst32, w_copy, n, np.dtype(np.int32))
    # the CSR is written into the buffers it was given: no fresh edge arrays for it
    assert np.shares_memory(got[0][1], dst32) and np.shares_memory(got[0][2], w_copy)
    want = (compress_pieces([src[:30000], src[30000:]], [dst[:30000], dst[30000:]], n,
                            np.dtype(np.int32), weight=w),
            compress_pieces([dst], [src], n, np.dtype(np.int32), weight=w))
    for g, x in zip(got, want):
        for a, b in zip(g, x):
            _same(a, b)


def _both_paths(tmp, source_of, **kwargs):
    """The store written by the counting path and by the sorted path it replaced."""
    contents = []
    for tag, applies in (("counting", True), ("sorted", False)):
        with pytest.MonkeyPatch.context() as patch:
            taken = []
            original = in_memory._counting_applies

            def spy(plan, original=original, applies=applies, taken=taken):
                taken.append(original(plan))
                return applies and taken[-1]

            patch.setattr(in_memory, "_counting_applies", spy)
            path = build_shards(source_of(), tmp / f"{tag}.h5", progress=False, **kwargs)
        contents.append(store_contents(path))
    return contents, taken


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(1, 5)),
                   max_size=120),
    flags=st.fixed_dictionaries({name: st.booleans() for name in OPTION_NAMES}),
    num_shards=st.integers(1, 6),
    chunk=st.integers(1, 60),
    extra_vertices=st.integers(0, 4),
    weight_dtype=st.sampled_from(["float64", "float32"]),
    edge_ids=st.booleans(),
)
def test_weighted_store_is_bit_identical_to_the_sorted_build(
        tmp_path_factory, edges, flags, num_shards, chunk, extra_vertices,
        weight_dtype, edge_ids):
    tmp = tmp_path_factory.mktemp("w")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [e[2] / 3 for e in edges]
    declared = max(src + dst + [-1]) + 1 + extra_vertices
    (new, old), taken = _both_paths(
        tmp, lambda: array_source(src, dst, w, num_vertices=declared, chunk=chunk),
        num_shards=num_shards, weight_dtype=weight_dtype, edge_ids=edge_ids, **flags)
    assert taken == [True]
    assert new == old


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("duplicates", [True, False])
@pytest.mark.parametrize("edge_ids", [False, True])
def test_weighted_store_of_a_real_graph_is_bit_identical(tmp_path, undirected,
                                                         duplicates, edge_ids):
    # rome99: DIMACS, 1-based ids, integer weights, repeated arcs
    path = DATASETS / "rome99.gr"
    if not path.exists():
        pytest.skip("rome99.gr not available")
    (new, old), taken = _both_paths(tmp_path, lambda: str(path), num_shards=5,
                                    undirected=undirected, duplicates=duplicates,
                                    edge_ids=edge_ids)
    assert taken == [True]
    assert new == old


def test_weighted_text_edge_list_with_one_based_ids(tmp_path):
    rng = np.random.default_rng(3)
    m = 3000
    src, dst = rng.integers(1, 200, m), rng.integers(1, 200, m)
    src[:50], dst[:50] = dst[50:100], src[50:100]             # some reverse pairs
    src[100:120] = dst[100:120]                               # self-loops
    weight = rng.integers(1, 4, m) / 8                        # repeated pairs, unequal weights
    lines = [f"{s} {d} {w}" for s, d, w in zip(src, dst, weight)] + lines_again(src, dst)
    edges = tmp_path / "g.mtx"
    edges.write_text("%%MatrixMarket matrix coordinate real general\n"
                     f"250 250 {len(lines)}\n" + "\n".join(lines) + "\n")
    (new, old), taken = _both_paths(tmp_path, lambda: str(edges), num_shards=3)
    assert taken == [True]
    assert new == old


def lines_again(src, dst):
    """The first 40 edges once more with other weights: repeated pairs across chunks."""
    return [f"{s} {d} {k % 3 + 0.5}" for k, (s, d) in enumerate(zip(src[:40], dst[:40]))]


def test_float16_weights_keep_the_sorted_path(tmp_path, monkeypatch):
    taken = []
    original = in_memory._counting_applies
    monkeypatch.setattr(in_memory, "_counting_applies",
                        lambda plan: taken.append(original(plan)) or taken[-1])
    source = array_source([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0])
    build_shards(source, tmp_path / "h.h5", weight_dtype="float16", progress=False)
    build_shards(source, tmp_path / "u.h5", weighted=False, edge_ids=True, progress=False)
    assert taken == [False, False]
