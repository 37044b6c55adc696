"""When a build renumbers by default, and the labels it keeps."""
import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.partition import build_shards

from .graphs import array_source

MODES = {"in-memory": {}, "external": {"memory_limit": 1 << 24},
         "external-weighted": {"memory_limit": 1 << 24, "weighted": True}}


def sparse_graph(rng, n=300, scale=20):
    """A connected-ish graph on ``n`` ids spread over ``0..n*scale``: sparse by the rule."""
    ids = np.sort(rng.choice(n * scale, size=n, replace=False))
    src = ids[rng.integers(0, n, 4 * n)]
    dst = ids[rng.integers(0, n, 4 * n)]
    return ids, src, dst


@pytest.mark.parametrize("mode", list(MODES))
def test_sparse_ids_are_renumbered_by_default(tmp_path, rng, mode):
    # today: n = max id + 1 = up to 6000 vertices, ~95% of them isolated ghosts
    ids, src, dst = sparse_graph(rng)
    occurring = np.unique(np.concatenate([src, dst]))
    options = dict(MODES[mode])
    weight = rng.random(len(src)) if options.pop("weighted", False) else None
    path = build_shards(array_source(src, dst, weight, chunk=97), tmp_path / "s.h5",
                        num_shards=3, progress=False, **options)
    with gr.open(path) as store:
        assert store.renumbered and store.build["options"]["renumber"] is True
        assert store.num_vertices == len(occurring)
        np.testing.assert_array_equal(store.labels(), occurring)
        coo = store.to_scipy().tocoo()
        got = sorted(zip(occurring[coo.row].tolist(), occurring[coo.col].tolist()))
        assert got == sorted(set(zip(src.tolist(), dst.tolist())))


def test_external_and_in_memory_renumbering_write_the_same_store(tmp_path, rng):
    _, src, dst = sparse_graph(rng)
    paths = [build_shards(array_source(src, dst, chunk=50), tmp_path / f"{k}.h5", num_shards=4,
                          progress=False, **MODES[k]) for k in ("in-memory", "external")]
    with h5py.File(paths[0], "r") as a, h5py.File(paths[1], "r") as b:
        names = []
        a.visit(lambda name: names.append(name) if isinstance(a[name], h5py.Dataset) else None)
        for name in names:
            np.testing.assert_array_equal(a[name][()], b[name][()], err_msg=name)


def test_dense_ids_and_renumber_false_keep_the_ids(tmp_path):
    # 0..9 with 5 of 10 ids used: not sparse (10 <= 2 * 5)
    src, dst = [0, 2, 4, 6], [2, 4, 6, 9]
    with gr.open(build_shards(array_source(src, dst), tmp_path / "d.h5", progress=False)) as store:
        assert not store.renumbered and store.num_vertices == 10 and not store.has_labels
    path = build_shards(array_source([0, 100], [100, 0]), tmp_path / "n.h5", renumber=False,
                        progress=False)
    with gr.open(path) as store:
        assert store.num_vertices == 101 and not store.renumbered


def test_declared_vertex_counts_are_kept(tmp_path):
    # an input that declares its vertices (a size line, a matrix shape) keeps its isolated ones
    path = build_shards(array_source([0], [99], num_vertices=100), tmp_path / "c.h5",
                        progress=False)
    with gr.open(path) as store:
        assert store.num_vertices == 100 and not store.renumbered


@pytest.mark.parametrize("mode", ["in-memory", "external"])
def test_huge_ids_are_renumbered_without_an_array_that_large(tmp_path, mode):
    # issue 9 item 5: ids 2**31 - 1 and 2**62 grew to 24 GiB / "Unable to allocate 32.0 GiB"
    for top in (2 ** 31 - 1, 2 ** 62):
        text = tmp_path / "e.txt"
        text.write_text(f"0 1\n1 {top}\n{top} 0\n")
        options = {} if mode == "in-memory" else {"memory_limit": 1 << 24}
        with gr.open(build_shards(str(text), tmp_path / "e.h5", progress=False,
                                  **options)) as store:
            assert store.num_vertices == 3 and store.labels().tolist() == [0, 1, top]


def test_one_based_inputs_store_the_base_and_renumber_to_file_ids(tmp_path):
    mtx = tmp_path / "g.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate pattern general\n1000 1000 2\n10 500\n"
                   "500 1000\n")
    with gr.open(build_shards(str(mtx), tmp_path / "m.h5", progress=False)) as store:
        # a declared size: kept, shifted to 0-based internally, labelled with the file's ids
        assert store.num_vertices == 1000 and store.id_base == 1 and not store.renumbered
        assert store.to_internal(500) == 499
    with gr.open(build_shards(str(mtx), tmp_path / "r.h5", renumber=True,
                              progress=False)) as store:
        assert store.labels().tolist() == [10, 500, 1000] and store.id_base == 1


def test_names_are_kept_through_renumbering_and_dropped_loops(tmp_path):
    text = tmp_path / "names.txt"
    text.write_text("b a\nc c\na d\ne e\n")
    for options in ({}, {"renumber": True}, {"self_loops": False}, {"memory_limit": 1 << 24},
                    {"memory_limit": 1 << 24, "self_loops": False}):
        path = build_shards(str(text), tmp_path / "n.h5", progress=False, **options)
        with gr.open(path) as store:
            # "c" and "e" have only a self-loop: dropped edges never drop a named vertex
            assert store.labels().tolist() == ["b", "a", "c", "d", "e"], options
            assert store.num_edges == (2 if options.get("self_loops") is False else 4)
