"""``in/eid``: each in-edge's global CSR position, the same edge in both build modes."""
import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.errors import ShardStoreError
from grstream.partition import build_shards
from grstream.store import format as fmt

from ..store.tamper import drop_index, rewrite
from .graphs import array_source, store_contents


def global_out_edges(store):
    """(src, dst, weight) of every out-edge in global CSR order: shard 0's, then shard 1's, ..."""
    src, dst, weight = [], [], []
    for i in range(store.num_shards):
        info = store.shard_info(i)
        src.append(np.repeat(np.arange(info.lo, info.hi), np.diff(store.read(i, "out/indptr"))))
        dst.append(store.read(i, "out/dst").astype(np.int64))
        if "weight" in store.edge_props:
            weight.append(store.read(i, "out/weight"))
    return np.concatenate(src), np.concatenate(dst), np.concatenate(weight) if weight else None


def check_edge_ids(path):
    with gr.open(path, verify="always") as store:
        assert store.edge_ids
        out_src, out_dst, out_w = global_out_edges(store)
        seen = []
        for i in range(store.num_shards):
            info = store.shard_info(i)
            eid = store.read(i, "in/eid")
            assert eid.dtype == np.int64 and eid.shape == (info.num_in_edges,)
            rows = np.repeat(np.arange(info.lo, info.hi), np.diff(store.read(i, "in/indptr")))
            np.testing.assert_array_equal(out_src[eid], store.read(i, "in/src"))
            np.testing.assert_array_equal(out_dst[eid], rows)
            if out_w is not None:
                np.testing.assert_array_equal(out_w[eid], store.read(i, "in/weight"))
            seen.append(eid)
        seen = np.concatenate(seen)
        np.testing.assert_array_equal(np.sort(seen), np.arange(store.num_edges))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 9)),
                   max_size=80),
    weighted=st.booleans(),
    undirected=st.booleans(),
    duplicates=st.booleans(),
    self_loops=st.booleans(),
    num_shards=st.integers(1, 6),
    chunk=st.integers(1, 30),
)
def test_edge_ids_match_the_same_edge_in_both_build_modes(tmp_path_factory, edges, weighted,
                                                          undirected, duplicates, self_loops,
                                                          num_shards, chunk):
    # few vertices, so repeated (src, dst) pairs with different weights are common
    tmp = tmp_path_factory.mktemp("e")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [float(e[2]) for e in edges] if weighted else None
    paths = []
    for memory_limit, tag in ((None, "mem"), (1 << 22, "ext")):
        paths.append(build_shards(array_source(src, dst, w, chunk=chunk), tmp / f"{tag}.h5",
                                  num_shards=num_shards, memory_limit=memory_limit,
                                  undirected=undirected, duplicates=duplicates,
                                  self_loops=self_loops, edge_ids=True, progress=False))
        check_edge_ids(paths[-1])
    assert store_contents(paths[0]) == store_contents(paths[1])


def test_edge_ids_on_a_larger_graph_with_many_shards(tmp_path):
    rng = np.random.default_rng(3)
    m, n = 20000, 700
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 5, m).astype(float)
    mem = build_shards(array_source(src, dst, w, chunk=3000), tmp_path / "m.h5", num_shards=9,
                       edge_ids=True, progress=False)
    ext = build_shards(array_source(src, dst, w, chunk=3000), tmp_path / "x.h5", num_shards=9,
                       memory_limit=1 << 22, edge_ids=True, progress=False)
    check_edge_ids(mem)
    assert store_contents(mem) == store_contents(ext)


def test_without_edge_ids_there_is_no_eid_dataset(tmp_path):
    path = build_shards(array_source([0, 1], [1, 0]), tmp_path / "g.h5", progress=False)
    with gr.open(path) as store:
        assert not store.edge_ids
        assert "in/eid" not in store.dataset_names(0)
    with h5py.File(path, "r") as f:
        assert f.attrs[fmt.EDGE_ID_ATTR] == np.False_


@pytest.fixture
def eid_store(tmp_path):
    return build_shards(array_source([0, 1, 2, 2], [1, 2, 0, 1]), tmp_path / "g.h5",
                        num_shards=2, edge_ids=True, progress=False)


def test_edge_id_out_of_range_is_reported_on_read(eid_store):
    name = "shards/0/in/eid"
    with h5py.File(eid_store, "r") as f:
        values = f[name][()]
    values[0] = 4
    rewrite(eid_store, name, values)
    with gr.open(eid_store) as store:
        with pytest.raises(ShardStoreError, match=f"dataset {name}: edge id 4 out of range 0..3"):
            store.read(0, "in/eid")


def test_missing_or_misshapen_eid_fails_on_open(eid_store):
    drop_index(eid_store)       # opened from the shard objects, which are checked on open
    with h5py.File(eid_store, "r+") as f:
        del f["shards/1/in/eid"]
        f.create_dataset("shards/1/in/eid", data=np.zeros(7, dtype=np.int64))
    with pytest.raises(ShardStoreError, match=r"shards/1/in/eid: shape \(7,\)"):
        gr.open(eid_store)
    with h5py.File(eid_store, "r+") as f:
        del f["shards/1/in/eid"]
    with pytest.raises(ShardStoreError, match="shards/1/in/eid: dataset missing"):
        gr.open(eid_store)
