"""A shard store as an input: ``grstream shard g.h5 -o other.h5 ...`` re-shards it."""
import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import grstream as gr
from grstream.cli import main
from grstream.errors import InputFormatError, ShardStoreError
from grstream.io import detect_format, open_source
from grstream.io.h5store import read_store

from ..algorithms.conftest import build, random_edges


def same_graph(a, b):
    """Same vertex count and the same multiset of weighted edges."""
    assert a.num_vertices == b.num_vertices and a.num_edges == b.num_edges
    ma, mb = a.to_scipy(), b.to_scipy()
    assert (ma != mb).nnz == 0


@pytest.fixture
def weighted(tmp_path, rng):
    src, dst, w = random_edges(rng, 50, 300, weighted=True)
    # vertices 50..59 are isolated, 59 last: the count must survive the re-shard
    return build(tmp_path, 60, src, dst, w, num_shards=4, name="w")


def test_reshard_with_edge_ids_through_the_cli(weighted, tmp_path, capsys):
    out = tmp_path / "eid.h5"
    rc = main(["shard", str(weighted.path), "-o", str(out), "--edge-ids", "--shards", "3", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    with gr.open(out) as again:
        assert again.edge_ids and again.num_shards == 3
        assert again.edge_props == {"weight": np.dtype(np.float64)}
        same_graph(weighted, again)


def test_chunks_stream_every_edge_in_csr_order(weighted):
    source = read_store(weighted.path, chunk_edges=7)
    assert source.weighted and source.num_vertices == 60 and source.format == "store"
    chunks = list(source.chunks())
    assert max(len(c[0]) for c in chunks) <= 7
    src, dst, w = (np.concatenate([c[k] for c in chunks]) for k in range(3))
    csr = weighted.to_scipy()
    csr.sum_duplicates()
    again = sp.csr_matrix((w, (src, dst)), shape=(60, 60))
    assert (again != csr).nnz == 0 and len(src) == weighted.num_edges
    assert np.all(np.diff(src) >= 0)  # shard after shard, by source id
    assert [len(c[0]) for c in source.chunks()] == [len(c[0]) for c in chunks]  # re-iterable


def test_weights_follow_the_option(weighted, tmp_path, rng):
    assert not read_store(weighted.path, weighted=False).weighted
    assert all(c[2] is None for c in read_store(weighted.path, weighted=False).chunks())
    src, dst, _ = random_edges(rng, 10, 30)
    plain = build(tmp_path, 10, src, dst, num_shards=2, name="plain")
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_store(plain.path, weighted=True)


def test_renumbered_store_keeps_its_original_ids(tmp_path):
    edges = np.array([[10, 700], [700, 35], [35, 10], [10, 35]])
    np.save(tmp_path / "sparse.npy", edges)
    first = tmp_path / "r.h5"
    assert main(["shard", str(tmp_path / "sparse.npy"), "-o", str(first), "--renumber", "--quiet"]) == 0
    again = tmp_path / "r2.h5"
    assert main(["shard", str(first), "-o", str(again), "--renumber", "--quiet", "--shards", "2"]) == 0
    with gr.open(first) as a, gr.open(again) as b:
        np.testing.assert_array_equal(b.original_ids(), [10, 35, 700])
        same_graph(a, b)
    plain = tmp_path / "r3.h5"
    assert main(["shard", str(first), "-o", str(plain), "--quiet"]) == 0
    with gr.open(plain) as c:
        # the labels travel with the store: the same vertices answer to the same ids
        assert c.num_vertices == 3 and c.num_edges == 4
        assert c.labels().tolist() == [10, 35, 700] and c.to_internal(700) == 2


def test_named_and_one_based_stores_keep_their_labels(tmp_path, datasets_dir):
    names = tmp_path / "names.txt"
    names.write_text("Napoleon Myriel\nMyriel Valjean\n")
    for source, labels in ((names, ["Napoleon", "Myriel", "Valjean"]),
                           (datasets_dir / "karate.mtx", list(range(1, 35)))):
        first, again = tmp_path / "a.h5", tmp_path / "b.h5"
        gr.build_shards(source, first, progress=False)
        gr.build_shards(first, again, num_shards=3, progress=False)
        with gr.open(first) as a, gr.open(again) as b:
            assert b.labels().tolist() == labels and b.id_base == a.id_base
            same_graph(a, b)


def test_detected_by_extension_and_signature(weighted, tmp_path):
    assert detect_format(weighted.path) == "store"
    renamed = tmp_path / "store.bin"
    renamed.write_bytes(weighted.path.read_bytes())
    assert detect_format(renamed) == "store"
    assert open_source(renamed).num_vertices == 60


def test_an_hdf5_file_that_is_not_a_store(tmp_path, capsys):
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ShardStoreError, match="not a grstream shard store"):
        open_source(tmp_path / "other.h5")
    assert main(["shard", str(tmp_path / "other.h5"), "-o", str(tmp_path / "o.h5")]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a grstream shard store" in err
