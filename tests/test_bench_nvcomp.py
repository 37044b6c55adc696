"""tools/bench_nvcomp.py's arrays are the store's: each shard's CSC sources as build_shards
writes them, without and with the degree order (the GPU parts run on the GPU machine only)."""
import numpy as np

import grstream as gr
from grstream.io.generate import rmat

from ._tools import tool_module


def test_csc_shards_are_the_stores_in_src(tmp_path):
    bench = tool_module("bench_nvcomp")
    src, dst = rmat(10, 16, seed=1)
    n = bench.vertex_count(src, dst)
    for order in ("none", "degree"):
        s, d = (src, dst) if order == "none" else bench.degree_order(src, dst, n, np)
        shards = bench.csc_shards(s, d, n, 5, np)
        path = gr.build_shards((src, dst), tmp_path / f"{order}.h5", num_shards=5,
                               reorder=None if order == "none" else order, progress=False)
        with gr.open(path) as store:
            assert n == store.num_vertices and len(shards) == store.num_shards
            for i, ids in enumerate(shards):
                assert ids.dtype == np.int32
                np.testing.assert_array_equal(ids, store.read(i, "in/src"))
