"""Weights the chosen dtype cannot hold are refused, never stored as inf or 0, in both builds."""
import re

import numpy as np
import pytest

import grstream as gr
from grstream.cli import main
from grstream.errors import InputFormatError
from grstream.partition import build_shards
from grstream.partition.edge_chunks import stored_weights

#: (weights, dtype, what the message says)
LOST = [
    ([1.0, 70000.0], "float16", "weight 70000.0 is beyond the largest float16 (65504)"),
    ([1.0, -1e39], "float32", "weight -1e+39 is beyond the largest float32"),
    ([1e-50, 2.0], "float32", "weight 1e-50 is below the smallest nonzero float32"),
    ([3.0, -1e-9], "float16", "weight -1e-09 is below the smallest nonzero float16"),
]


@pytest.mark.parametrize("memory_limit", [None, 1 << 24])
@pytest.mark.parametrize("weights, dtype, message", LOST)
def test_lost_weights_are_refused_in_both_builds(tmp_path, memory_limit, weights, dtype,
                                                 message):
    edges = np.array([[0, 1, weights[0]], [1, 2, weights[1]]])
    with pytest.raises(InputFormatError, match=re.escape(message)):
        build_shards(edges, tmp_path / "w.h5", weight_dtype=dtype, memory_limit=memory_limit,
                     progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("memory_limit", [None, 1 << 24])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_weights_within_range_are_kept_rounded(tmp_path, memory_limit, dtype):
    # the largest finite value, a subnormal, a signed zero and a value that only rounds
    tiny = float(np.finfo(dtype).smallest_subnormal) * 3
    weights = [float(np.finfo(dtype).max), tiny, -0.0, 0.1]
    edges = np.array([[i, i + 1, w] for i, w in enumerate(weights)])
    path = build_shards(edges, tmp_path / "w.h5", weight_dtype=dtype, memory_limit=memory_limit,
                        progress=False)
    with gr.open(path) as store:
        stored = np.concatenate([store.read(i, "out/weight") for i in range(store.num_shards)])
    assert stored.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(stored, np.array(weights).astype(dtype))
    assert np.signbit(stored[2]) and stored[1] > 0


def test_the_cli_says_which_value_and_dtype(tmp_path, capsys):
    (tmp_path / "g.txt").write_text("0 1 1.5\n1 2 70000\n")
    for extra in ([], ["--memory-limit", "16M"]):
        assert main(["shard", str(tmp_path / "g.txt"), "-o", str(tmp_path / "g.h5"), "--quiet",
                     "--weight-dtype", "float16", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"grstream shard: error: {tmp_path / 'g.txt'}: weight 70000.0 is beyond "
                       "the largest float16 (65504): it would be stored as inf; choose a wider "
                       "--weight-dtype (weight_dtype)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


def test_the_same_dtype_passes_through():
    w = np.array([1.0, 2.0], dtype=np.float32)
    assert stored_weights(w, np.dtype(np.float32)) is w
