"""Weights narrowed in the external build's runs: the store is bit for bit the in-memory one."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.partition import build_shards
from grstream.partition.run_weights import narrowest
from grstream.partition.key_runs import KeyRuns

from .graphs import array_source, store_contents

OPTION_NAMES = ("undirected", "self_loops", "duplicates", "renumber")

#: weights of every width: float16-exact (small integers, halves, zeros of both signs, a
#: float16 subnormal), float32-exact (beyond float16's range or precision), and float64 only
WEIGHTS = [1.0, 2.0, 255.0, 0.5, -3.5, 0.0, -0.0, 2.0 ** -24, 2049.0, 70000.0,
           float(np.float32(0.1)), 0.1, 1 / 3, 1e-30, -1e200]


def _fits(value, dtype):
    with np.errstate(over="ignore"):
        return float(dtype(value)) == value


@pytest.mark.parametrize("values, dtype, want", [
    ([1.0, 2.0, 255.0, -0.5], np.float64, np.float16),
    ([1.0, 2049.0], np.float64, np.float32),
    ([1.0, 70000.0], np.float64, np.float32),
    ([1.0, float(np.float32(0.1))], np.float64, np.float32),
    ([1.0, 0.1], np.float64, np.float64),
    ([1e300], np.float64, np.float64),
    ([1.0, 3.0], np.float32, np.float16),
    ([1.0, 0.1], np.float32, np.float32),
    ([1.0, 3.0], np.float16, np.float16),
    ([], np.float64, np.float16),
])
def test_narrowest_holds_every_weight_exactly(values, dtype, want):
    weight = np.array(values, dtype=dtype)
    got = narrowest(weight)
    assert got.dtype == want
    assert got.astype(dtype).tobytes() == weight.tobytes()


def test_narrowest_looks_past_its_sample():
    weight = np.ones(10_000)
    weight[-1] = 0.1
    assert narrowest(weight).dtype == np.float64
    weight[-1] = 70000.0
    assert narrowest(weight).dtype == np.float32


def test_negative_zero_keeps_its_sign():
    got = narrowest(np.array([-0.0, 0.0, 1.0]))
    assert np.signbit(got).tolist() == [True, False, False]


def test_key_runs_widen_a_shards_weights_to_its_widest_run(tmp_path):
    runs = KeyRuns(tmp_path, "g.h5", np.float64)
    try:
        runs.append("in", np.array([1, 5, 9], dtype=np.uint64), np.array([0.5, 1.5, 2.5],
                                                                          np.float16))
        runs.append("in", np.array([2, 6, 12], dtype=np.uint64), np.array([0.1, 0.2, 0.3]))
        runs.append("in", np.array([3, 13], dtype=np.uint64), np.array([7.0, 8.0], np.float32))
        keys, weights = runs.load("in", 4, 3)
        np.testing.assert_array_equal(keys, [1, 2, 3])
        assert weights.dtype == np.float64
        np.testing.assert_array_equal(weights, [0.5, 0.1, 7.0])
        keys, weights = runs.load("in", 10, 3)
        np.testing.assert_array_equal(keys, [5, 9, 6])
        assert weights.dtype == np.float64
        np.testing.assert_array_equal(weights, [1.5, 2.5, 0.2])
        # one run left below each bound: the shard's weights keep that run's width
        keys, weights = runs.load("in", 13, 1)
        assert weights.dtype == np.float64
        np.testing.assert_array_equal(weights, [0.3])
        keys, weights = runs.load("in", 14, 1)
        assert weights.dtype == np.float32
        np.testing.assert_array_equal(weights, [8.0])
    finally:
        runs.cleanup()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30),
                             st.sampled_from(range(len(WEIGHTS)))), max_size=150),
    wide=st.sampled_from(["none", "float32", "float64"]),
    flags=st.fixed_dictionaries({name: st.booleans() for name in OPTION_NAMES}),
    num_shards=st.integers(1, 6),
    chunk=st.integers(1, 60),
    weight_dtype=st.sampled_from(["float64", "float32"]),
)
def test_external_weighted_store_equals_the_in_memory_store(
        tmp_path_factory, edges, wide, flags, num_shards, chunk, weight_dtype):
    # chunks of float16-, float32- and float64-wide weights side by side: runs of every width
    # gathered into one shard, with repeated pairs (the minimum kept under dedup, zeros of
    # both signs among them) and self-loops
    tmp = tmp_path_factory.mktemp("w")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    # a float32 store's weights are float32 values (and finite there) from the start
    values = [v if weight_dtype == "float64" else float(np.float32(v))
              for v in WEIGHTS if weight_dtype == "float64" or abs(v) < 1e38]
    narrow = [v for v in values if _fits(v, np.float16)]
    allowed = {"none": narrow, "float32": [v for v in values if _fits(v, np.float32)],
               "float64": values}[wide]
    w = [allowed[e[2] % len(allowed)] if (k // chunk) % 2 else narrow[e[2] % len(narrow)]
         for k, e in enumerate(edges)]
    contents = []
    for tag, limit in (("mem", None), ("ext", 1 << 22)):
        path = build_shards(array_source(src, dst, w, chunk=chunk), tmp / f"{tag}.h5",
                            num_shards=num_shards, memory_limit=limit,
                            weight_dtype=weight_dtype, progress=False, **flags)
        contents.append(store_contents(path))
        with gr.open(path) as store:
            assert store.build["mode"] == ("in-memory" if limit is None else "external")
    assert contents[0] == contents[1]


def test_external_rmat_store_equals_the_in_memory_store(tmp_path):
    # integer weights (float16 in the runs) in some chunks, random float64 ones in others
    rng = np.random.default_rng(3)
    m, n = 60_000, 4096
    src = np.minimum(rng.zipf(1.5, m), n) - 1
    dst = rng.integers(0, n, m)
    w = rng.integers(1, 256, m).astype(np.float64)
    w[20_000:30_000] = rng.random(10_000)
    w[45_000:50_000] = rng.random(5_000).astype(np.float32)
    contents = []
    for tag, limit in (("mem", None), ("ext", 1 << 22)):
        path = build_shards(array_source(src, dst, w, chunk=7000), tmp_path / f"{tag}.h5",
                            num_shards=5, memory_limit=limit, progress=False)
        contents.append(store_contents(path))
    assert contents[0] == contents[1]


@pytest.mark.parametrize("weights", [[0.0, -0.0], [-0.0, 0.0], [-0.0, 2.0, 0.0]])
@pytest.mark.parametrize("weight_dtype", ["float64", "float32"])
def test_a_repeated_pair_of_signed_zeros_keeps_the_in_memory_zero(tmp_path, weights,
                                                                   weight_dtype):
    # numpy's minimum of 0.0 and -0.0 returns the second in float64 and the first in float16:
    # runs of float16 weights must not decide which zero a deduplicated pair keeps
    contents = []
    for tag, limit in (("mem", None), ("ext", 1 << 22)):
        source = array_source([1] * len(weights), [0] * len(weights), weights, chunk=1)
        path = build_shards(source, tmp_path / f"{tag}.h5", num_shards=1, memory_limit=limit,
                            duplicates=False, weight_dtype=weight_dtype, progress=False)
        contents.append(store_contents(path))
    assert contents[0] == contents[1]
