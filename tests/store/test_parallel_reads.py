"""A large shard's datasets are read at once, with the same data and errors as one by one."""
from unittest import mock

import numpy as np
import pytest


def test_large_shards_are_read_at_once_and_equal_one_by_one(tmp_path):
    import grstream as gr
    from grstream.store import parallel_reads

    rng = np.random.default_rng(0)
    edges = rng.integers(0, 5000, (400000, 2))
    weights = rng.random(400000)
    path = gr.build_shards(np.column_stack([edges, weights]), tmp_path / "g.h5", num_shards=2,
                           progress=False)
    with gr.open(path, verify="always") as store:
        assert sum(store.shard_info(0).dataset_nbytes.values()) >= \
            parallel_reads.PARALLEL_READ_BYTES
        with mock.patch.object(parallel_reads, "_readers",
                               wraps=parallel_reads._readers) as pool:
            both = store.read_shard(0)
        assert pool.called
        with mock.patch.object(parallel_reads, "PARALLEL_READ_BYTES", 1 << 60):
            one_by_one = store.read_shard(0)
        assert both.keys() == one_by_one.keys() == set(store.dataset_names(0))
        for name in both:
            np.testing.assert_array_equal(both[name], one_by_one[name])
        # a damaged dataset is reported from the reading thread as from the caller's
        with open(path, "r+b") as f:
            desc = store._datasets[0]["out/dst"]
            f.seek(desc.offset)
            f.write(b"\xff\xff\xff\x7f")
        with pytest.raises(gr.errors.ChecksumError, match="out/dst"):
            store.read_shard(0)
