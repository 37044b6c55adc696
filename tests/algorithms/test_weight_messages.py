"""Refused weights are shown as numbers, not numpy reprs (``-10.0``, not ``np.float64(-10.0)``)."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import bc, pagerank, sssp
from grstream.errors import UsageError


@pytest.mark.parametrize("run, shown", [
    (lambda s: sssp.sssp(s, 0), "weight -10.0"),
    (lambda s: pagerank.pagerank(s), "has -10.0"),
    (lambda s: bc.betweenness(s, weight="weight"), "weight -10.0"),
])
def test_bad_weight_is_shown_plainly(tmp_path, run, shown):
    edges = np.array([[0, 1, 1.0], [1, 2, -10.0], [2, 0, 1.0]])
    store = gr.open(gr.build_shards(edges, tmp_path / "neg.h5", progress=False))
    with pytest.raises(UsageError) as info:
        run(store)
    assert shown in str(info.value) and "np." not in str(info.value)
