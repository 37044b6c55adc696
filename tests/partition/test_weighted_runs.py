"""The external build of weighted edges by packed-key runs writes what the edge-record build it
replaced wrote, bit for bit."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.partition import build_shards, external_keys, layout
from grstream.partition.key_runs import KeyRuns

from .graphs import DATASETS, array_source, store_contents

OPTION_NAMES = ("undirected", "self_loops", "duplicates", "renumber")


def _records_instead(*args):
    raise external_keys.WideIds()


def _runs_and_records(tmp, source_of, key_bits=None, **kwargs):
    """Stores of the key-run build (its key width narrowed to ``key_bits``, which reaches the
    block sort and the fallbacks on small graphs) and of the edge-record build."""
    contents, modes = [], []
    for tag in ("runs", "records"):
        with pytest.MonkeyPatch.context() as patch:
            if tag == "records":
                patch.setattr("grstream.partition.build.build_keyed", _records_instead)
            elif key_bits is not None:
                patch.setattr(layout, "_KEY_BITS", key_bits)
            path = build_shards(source_of(), tmp / f"{tag}.h5", progress=False, **kwargs)
        contents.append(store_contents(path))
        with gr.open(path) as store:
            modes.append(store.build["mode"])
    assert modes == ["external", "external"]
    return contents


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(1, 5)),
                   max_size=120),
    flags=st.fixed_dictionaries({name: st.booleans() for name in OPTION_NAMES}),
    num_shards=st.integers(1, 6),
    chunk=st.integers(1, 60),
    extra_vertices=st.integers(0, 4),
    weight_dtype=st.sampled_from(["float64", "float32", "float16"]),
    key_bits=st.sampled_from([None, 16, 13, 11]),
)
def test_weighted_runs_equal_the_record_build(tmp_path_factory, edges, flags, num_shards, chunk,
                                              extra_vertices, weight_dtype, key_bits):
    tmp = tmp_path_factory.mktemp("r")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [e[2] / 3 for e in edges]
    declared = max(src + dst + [-1]) + 1 + extra_vertices
    runs, records = _runs_and_records(
        tmp, lambda: array_source(src, dst, w, num_vertices=declared, chunk=chunk),
        key_bits=key_bits, num_shards=num_shards, memory_limit=1 << 22,
        weight_dtype=weight_dtype, **flags)
    assert runs == records


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("duplicates", [True, False])
def test_weighted_runs_of_a_real_graph(tmp_path, undirected, duplicates):
    path = DATASETS / "rome99.gr"
    if not path.exists():
        pytest.skip("rome99.gr not available")
    runs, records = _runs_and_records(tmp_path, lambda: str(path), num_shards=7,
                                      memory_limit=1 << 22, undirected=undirected,
                                      duplicates=duplicates)
    assert runs == records


def test_weighted_runs_of_many_chunks_and_shards(tmp_path):
    # hubs and repeated pairs spread over 40 runs, gathered by cursor into 9 shards
    rng = np.random.default_rng(7)
    m = 40_000
    src = np.minimum(rng.zipf(1.6, m), 3000) - 1
    dst = rng.integers(0, 3000, m)
    w = rng.integers(1, 5, m) / 4
    runs, records = _runs_and_records(
        tmp_path, lambda: array_source(src, dst, w, chunk=1000), num_shards=9,
        memory_limit=1 << 22)
    assert runs == records


def test_key_runs_return_each_runs_weights_with_its_keys(tmp_path):
    runs = KeyRuns(tmp_path, "g.h5", np.float32)
    try:
        runs.append("out", np.array([1, 5, 9], dtype=np.uint64), np.array([0.5, 1.5, 2.5]))
        runs.append("out", np.array([2, 3, 12], dtype=np.uint64), np.array([3.5, 4.5, 5.5]))
        keys, weights = runs.load("out", 6, 4)
        np.testing.assert_array_equal(keys, [1, 5, 2, 3])
        np.testing.assert_array_equal(weights, np.array([0.5, 1.5, 3.5, 4.5], np.float32))
        keys, weights = runs.load("out", 100, 2)
        np.testing.assert_array_equal(keys, [9, 12])
        assert weights.dtype == np.float32
        np.testing.assert_array_equal(weights, [2.5, 5.5])
    finally:
        runs.cleanup()
    assert list(tmp_path.iterdir()) == []


def test_wide_weighted_chunks_fall_back_to_records(tmp_path, caplog):
    # a chunk's ids and edge indices beyond the block sort (narrowed here) build from records
    src, dst, w = [0, 1, 2, 3], [3, 2, 1, 0], [1.0, 2.0, 3.0, 4.0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "_KEY_BITS", 3)
        with caplog.at_level("INFO", logger="grstream.partition"):
            path = build_shards(array_source(src, dst, w), tmp_path / "g.h5", num_shards=2,
                                memory_limit=1 << 22, progress=False)
    assert "bucketing edge records" in caplog.text
    with gr.open(path) as store:
        assert store.num_edges == 4


@settings(max_examples=120, deadline=None)
@given(
    edges=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(-2, 3)),
                   max_size=200),
    lo=st.integers(0, 10),
    dedup=st.booleans(),
    runs=st.integers(1, 5),
    key_bits=st.sampled_from([64, 24, 20, 16]),
    wide_ids=st.booleans(),
    fast_sort=st.booleans(),
)
def test_shard_keys_sort_as_compress_does(edges, lo, dedup, runs, key_bits, wide_ids,
                                          fast_sort):
    # a shard's keys, gathered run by run from stably sorted runs, give compress's layout
    # whether the neighbour is narrowed to the ids' width (one sort with the index: a fast
    # sort), left at 32 bits (the block sort, with the key width narrowed: a slow sort) or
    # too wide (None)
    from grstream.partition import weighted_keys
    from grstream.partition.weighted_keys import compress_weighted_keys, sorted_run
    edges = [e for e in edges if e[0] >= lo]
    top = 41
    n = 2 ** 31 if wide_ids else top
    p = np.array([e[0] for e in edges], dtype=np.int64)
    s = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] / 4 for e in edges])
    want = layout.compress(p, s, w, lo, top, n, np.int64, dedup)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "_KEY_BITS", key_bits)
        patch.setattr(weighted_keys, "sort_is_fast", lambda: fast_sort)
        keys, weights = [], []
        for part in np.array_split(np.arange(len(p)), runs):
            run = sorted_run(p[part], s[part], w[part], top)
            if run is None:
                return
            keys.append(run[0])
            weights.append(run[1])
        key = np.concatenate(keys) if keys else np.empty(0, np.uint64)
        weight = np.concatenate(weights) if weights else np.empty(0)
        # the shard's keys: each run's share, runs in order, as KeyRuns.load gives them
        got = compress_weighted_keys(key, weight, lo, top, np.int64, dedup, n)
    if got is None:
        assert key_bits < 64
        return
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_the_sort_probe_answers_once_per_process():
    from grstream.partition.weighted_keys import sort_is_fast
    assert sort_is_fast() in (True, False)
    assert sort_is_fast.cache_info().currsize == 1
