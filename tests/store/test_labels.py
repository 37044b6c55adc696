"""Vertex labels of a store: what users give and get back, mapped to internal ids."""
import h5py
import networkx as nx
import numpy as np
import pytest

import grstream as gr
from grstream.errors import ChecksumError, ShardStoreError, UsageError
from grstream.store.labels import decode_strings, encode_strings, label_table

from .test_shard_store import _flip_byte


def build(tmp_path, source, name="g.h5", **options):
    return gr.open(gr.build_shards(source, tmp_path / name, progress=False, **options))


def test_plain_store_labels_are_the_ids(tmp_path):
    store = build(tmp_path, np.array([[0, 1], [1, 2], [2, 0]]))
    assert not store.has_labels and store.label_kind == "int" and store.id_base == 0
    np.testing.assert_array_equal(store.labels(), [0, 1, 2])
    assert store.to_internal(2) == 2 and store.to_internal("1") == 1
    np.testing.assert_array_equal(store.to_internal([[2, 0]]), [[2, 0]])
    with pytest.raises(UsageError, match=r"vertex 3 is out of range: the graph has 3 vertices "
                                         r"\(ids 0..2\)"):
        store.to_internal(3)
    with pytest.raises(UsageError, match="must be an integer, not 'x'"):
        store.to_internal("x")
    with pytest.raises(UsageError, match="must be an integer, not 1.5"):
        store.to_internal(1.5)


@pytest.mark.parametrize("renumber", [False, True])
def test_to_labels_is_the_label_table_gathered(tmp_path, monkeypatch, renumber):
    """Without labels every id is its own label (no gather); a large gather runs in pieces on
    threads: both give labels()[ids], out-of-range ids refused alike."""
    from grstream.store import labels as labels_mod
    rng = np.random.default_rng(3)
    store = build(tmp_path, rng.integers(0, 3000, (2000, 2)) * (7 if renumber else 1),
                  renumber=renumber)
    assert store.has_labels == renumber
    ids = rng.integers(0, store.num_vertices, (50, 40))
    want = store.labels()[ids]
    for parallel in (1 << 22, 64):
        monkeypatch.setattr(labels_mod, "PARALLEL_TAKE", parallel)
        got = store.to_labels(ids)
        assert got.shape == ids.shape and got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        assert not np.shares_memory(got, ids)
        with pytest.raises(IndexError):
            store.to_labels(np.append(ids.reshape(-1), store.num_vertices))
    np.testing.assert_array_equal(store.to_labels([-1]), store.labels()[[-1]])
    assert store.to_labels([]).size == 0
    if not renumber:    # ids in range are their labels: no table built, nothing gathered
        monkeypatch.setattr(store, "labels", lambda: pytest.fail("labels() read"))
        np.testing.assert_array_equal(store.to_labels(ids), ids)


def test_one_based_file_keeps_its_ids(tmp_path, datasets_dir):
    # today's code shifted karate.mtx to 0..33 and took --source 0 as the file's vertex 1
    store = build(tmp_path, datasets_dir / "karate.mtx")
    assert store.id_base == 1 and store.has_labels and store.num_vertices == 34
    np.testing.assert_array_equal(store.labels(), np.arange(1, 35))
    assert store.to_internal(34) == 33 and store.to_internal(1) == 0
    with pytest.raises(UsageError, match=r"vertex 0 is out of range.*ids 1..34"):
        store.to_internal(0)


def test_renumbered_store_maps_original_ids(tmp_path):
    store = build(tmp_path, np.array([[50, 7], [7, 900]]), renumber=True)
    np.testing.assert_array_equal(store.labels(), [7, 50, 900])
    np.testing.assert_array_equal(store.to_internal([900, 7]), [2, 0])
    np.testing.assert_array_equal(store.to_labels([1, 2]), [50, 900])
    assert store.by_label(np.array([0.5, 1.5, 2.5])) == {7: 0.5, 50: 1.5, 900: 2.5}
    with pytest.raises(UsageError, match="vertex 8 does not occur"):
        store.to_internal([7, 8])
    with pytest.raises(UsageError, match="one value per vertex"):
        store.by_label(np.zeros(2))


def test_string_labels_round_trip_through_the_store(tmp_path):
    g = nx.DiGraph([("Napoleon", "Myriel"), ("Myriel", "Mlle.Baptistine"), ("Ã©lan ✓", "Napoleon")])
    g.add_node("Isolé")
    store = build(tmp_path, g)
    assert store.label_kind == "str" and store.has_labels and store.num_vertices == 5
    assert store.labels().tolist() == list(g.nodes)
    assert store.to_internal("Isolé") == 4
    np.testing.assert_array_equal(store.to_internal(["Myriel", "Napoleon"]), [1, 0])
    with pytest.raises(UsageError, match="vertex 'Valjean' does not occur"):
        store.to_internal("Valjean")
    levels, _ = gr.algorithms.bfs.bfs(store, "Napoleon")
    assert store.by_label(levels) == {"Napoleon": 0, "Myriel": 1, "Mlle.Baptistine": 2,
                                      "Ã©lan ✓": -1, "Isolé": -1}


def test_string_labels_are_checksummed_and_refuse_a_version_one_reading(tmp_path):
    store = build(tmp_path, nx.DiGraph([("a", "b")]))
    path = store.path
    store.close()
    with h5py.File(path, "r") as f:
        # a reader that only knows original_id finds none: it refuses the store, never misreads
        assert f.attrs["renumbered"] and "vertex/original_id" not in f
        assert f["vertex/label_bytes"].chunks is None and "crc32" in f["vertex/label_bytes"].attrs
    _flip_byte(path, "vertex/label_bytes")
    with gr.open(path) as damaged:
        with pytest.raises(ChecksumError, match="vertex/label_bytes"):
            damaged.labels()


def test_bad_label_attributes_fail_on_open(tmp_path):
    store = build(tmp_path, np.array([[0, 1]]))
    path = store.path
    store.close()
    for attr, value, message in (("id_base", 7, "id_base is 7"),
                                 ("label_kind", "float", "label_kind is 'float'")):
        with h5py.File(path, "r+") as f:
            old = f.attrs[attr]
            f.attrs[attr] = value
        with pytest.raises(ShardStoreError, match=message):
            gr.open(path)
        with h5py.File(path, "r+") as f:
            f.attrs[attr] = old


def test_stores_without_label_attributes_read_as_before(tmp_path):
    store = build(tmp_path, np.array([[0, 1]]))
    path = store.path
    store.close()
    with h5py.File(path, "r+") as f:
        del f.attrs["id_base"], f.attrs["label_kind"]
    with gr.open(path) as old:
        assert not old.has_labels and old.labels().tolist() == [0, 1]


def test_label_encoding():
    labels = ["", "a", "Valjean", "日本", "x y"]
    data, offsets = encode_strings(labels)
    assert data.dtype == np.uint8 and offsets.tolist()[0] == 0 and offsets[-1] == len(data)
    assert decode_strings(data, offsets).tolist() == labels
    assert label_table([3, np.int64(1)])[0] == "int"
    kind, table = label_table([("a", 1), True, 2])
    assert kind == "str" and table.tolist() == ["('a', 1)", "True", "2"]


def test_integer_labels_in_node_order_are_looked_up(tmp_path):
    # networkx nodes that are integers but not ids (negative): kept in node order, unsorted
    store = build(tmp_path, nx.Graph([(0, -1), (5, -3)]))
    assert store.label_kind == "int" and store.labels().tolist() == [0, -1, 5, -3]
    np.testing.assert_array_equal(store.to_internal([-3, 0, 5, -1]), [3, 0, 2, 1])
    with pytest.raises(UsageError, match="vertex 4 does not occur"):
        store.to_internal(4)
