import functools
import json
import logging
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tqdm import tqdm

import grstream as gr
from grstream.errors import InputFormatError, UsageError
from grstream.partition import build_plan, build_shards

from .graphs import array_source, expected_edges, same_matrix, scipy_of, store_contents

OPTION_NAMES = ("undirected", "self_loops", "duplicates", "renumber")


def check_store(path, n, edges, weighted):
    """The store holds exactly ``edges``, sorted, balanced and with consistent metadata."""
    with gr.open(path, verify="always") as store:
        assert store.num_vertices == n
        assert store.num_edges == len(edges)
        for kind in ("csr", "csc"):
            assert same_matrix(store.to_scipy(kind, weights=weighted), scipy_of(n, edges, kind))
        s = np.array([e[0] for e in edges], dtype=np.int64)
        d = np.array([e[1] for e in edges], dtype=np.int64)
        np.testing.assert_array_equal(store.out_degree(), np.bincount(s, minlength=n))
        np.testing.assert_array_equal(store.in_degree(), np.bincount(d, minlength=n))
        for i in range(store.num_shards):
            info = store.shard_info(i)
            for direction, ids in (("in", "src"), ("out", "dst")):
                indptr = store.read(i, f"{direction}/indptr")
                nbrs = store.read(i, f"{direction}/{ids}").astype(np.int64)
                rows = np.repeat(np.arange(info.lo, info.hi), np.diff(indptr))
                key = rows * max(n, 1) + nbrs
                assert np.all(np.diff(key) >= 0), f"shard {i} {direction} not sorted"
        assert ("weight" in store.edge_props) == weighted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30),
                             st.integers(1, 4)), max_size=80),
    weighted=st.booleans(),
    flags=st.fixed_dictionaries({name: st.booleans() for name in OPTION_NAMES}),
    num_shards=st.integers(1, 7),
    chunk=st.integers(1, 50),
    extra_vertices=st.integers(0, 5),
)
def test_store_equals_scipy_and_external_equals_in_memory(tmp_path_factory, edges, weighted, flags,
                                                           num_shards, chunk, extra_vertices):
    tmp = tmp_path_factory.mktemp("b")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [e[2] / 2 for e in edges] if weighted else None
    declared = max(src + dst + [-1]) + 1 + extra_vertices
    n, expect, ids = expected_edges(src, dst, w, num_vertices=declared, **flags)
    paths = []
    for memory_limit, tag in ((None, "mem"), (1 << 22, "ext")):
        source = array_source(src, dst, w, num_vertices=declared, chunk=chunk)
        paths.append(build_shards(source, tmp / f"{tag}.h5", num_shards=num_shards,
                                  memory_limit=memory_limit, progress=False, **flags))
        check_store(paths[-1], n, expect, weighted)
    assert store_contents(paths[0]) == store_contents(paths[1])
    with gr.open(paths[0]) as store:
        assert store.renumbered == flags["renumber"]
        if flags["renumber"]:
            np.testing.assert_array_equal(store.original_ids(), ids)
        else:
            assert store.original_ids() is None
        assert store.directed != flags["undirected"]
        assert store.build["mode"] == "in-memory"
    assert not list(tmp.glob("*.buckets-*")) and not list(tmp.glob("*.tmp-*"))


def test_many_shards_on_a_larger_random_graph(tmp_path):
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 500, 6000), rng.integers(0, 500, 6000)
    w = rng.random(6000)
    n, expect, _ = expected_edges(src, dst, w)
    for shards in (1, 2, 13, 64):
        path = build_shards(array_source(src, dst, w, chunk=777), tmp_path / f"s{shards}.h5",
                            num_shards=shards, progress=False)
        check_store(path, n, expect, True)
        with gr.open(path) as store:
            assert store.num_shards == shards


def test_duplicates_keep_minimum_weight(tmp_path):
    source = array_source([0, 0, 0, 1], [1, 1, 1, 0], [5.0, 2.0, 7.0, 3.0])
    path = build_shards(source, tmp_path / "d.h5", duplicates=False, progress=False)
    with gr.open(path) as store:
        assert store.num_edges == 2
        np.testing.assert_array_equal(store.read(0, "out/dst"), [1, 0])
        np.testing.assert_array_equal(store.read(0, "out/weight"), [2.0, 3.0])


def test_kept_duplicates_keep_input_order_of_weights(tmp_path):
    source = array_source([2, 0, 2, 2], [1, 1, 1, 1], [5.0, 4.0, 2.0, 7.0])
    for limit in (None, 1 << 22):
        path = build_shards(source, tmp_path / "k.h5", memory_limit=limit, progress=False)
        with gr.open(path) as store:
            np.testing.assert_array_equal(store.read(0, "in/src"), [0, 2, 2, 2])
            np.testing.assert_array_equal(store.read(0, "in/weight"), [4.0, 5.0, 2.0, 7.0])


@pytest.mark.parametrize("memory_limit", [None, 1 << 22])
@pytest.mark.parametrize("num_vertices", [0, 5])
def test_zero_edges(tmp_path, num_vertices, memory_limit):
    source = array_source([], [], num_vertices=num_vertices)
    path = build_shards(source, tmp_path / "e.h5", num_shards=3, memory_limit=memory_limit,
                        progress=False)
    with gr.open(path) as store:
        assert store.num_vertices == num_vertices and store.num_edges == 0
        assert store.num_shards == (3 if num_vertices else 1)
        assert store.to_scipy().nnz == 0 and store.to_scipy().shape == (num_vertices, num_vertices)
        assert store.read(0, "in/src").shape == (0,)


def test_isolated_vertices_are_kept(tmp_path):
    path = build_shards(array_source([0, 9], [9, 0], num_vertices=20), tmp_path / "i.h5",
                        num_shards=4, progress=False)
    with gr.open(path) as store:
        assert store.num_vertices == 20
        assert store.in_degree()[1:9].sum() == 0 and store.in_degree()[9] == 1
        assert store.intervals[-1] == 20


def test_renumber_maps_sparse_ids(tmp_path):
    big = 10 ** 12
    source = array_source([big, 5, big], [5, 7 * big, 7 * big], [1.0, 2.0, 3.0])
    path = build_shards(source, tmp_path / "r.h5", renumber=True, progress=False)
    with gr.open(path) as store:
        assert store.num_vertices == 3 and store.id_dtype == np.int32
        np.testing.assert_array_equal(store.original_ids(), [5, big, 7 * big])
        dense = store.to_scipy().toarray()
        assert dense[1, 0] == 1.0 and dense[0, 2] == 2.0 and dense[1, 2] == 3.0


def test_heavy_vertex_gets_own_shard_and_is_reported(tmp_path, caplog):
    # vertex 3 is the hub of a star: its edges alone exceed total / num_shards
    rng = np.random.default_rng(3)
    leaves = np.arange(4, 200)
    src = np.concatenate([np.full(len(leaves), 3), rng.integers(4, 200, 100)])
    dst = np.concatenate([leaves, rng.integers(4, 200, 100)])
    with caplog.at_level(logging.WARNING, logger="grstream.partition"):
        path = build_shards(array_source(src, dst), tmp_path / "h.h5", num_shards=4, progress=False)
    assert "own" in caplog.text and "3" in caplog.text
    with gr.open(path) as store:
        assert 3 in store.build["heavy_vertices"]
        k = int(np.searchsorted(store.intervals, 3, side="right")) - 1
        assert (store.intervals[k], store.intervals[k + 1]) == (3, 4)


def test_shard_size_picks_shard_count(tmp_path):
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 1000, 20000), rng.integers(0, 1000, 20000)
    path = build_shards(array_source(src, dst), tmp_path / "s.h5", shard_size=16 * 1024,
                        progress=False)
    with gr.open(path) as store:
        # 40000 in+out edges x 4 bytes / 16 KiB = 9.8 -> 10 shards of about 16 KiB
        assert store.num_shards == 10
        assert store.max_shard_nbytes() < 2 * 16 * 1024


@pytest.mark.parametrize("request_kwargs", [{"num_shards": 100000}, {"shard_size": 64}])
def test_tiny_shards_are_capped_with_a_warning(tmp_path, caplog, request_kwargs):
    # 3000 vertices and 6000 in+out edges: 100000 shards (or 64-byte ones) would hold a few
    # edges each and cost a millisecond per shard to build and to open
    from grstream.partition.build_plan import MIN_SHARD_EDGES, UNCAPPED_SHARDS
    rng = np.random.default_rng(4)
    src, dst = rng.permutation(3000)[:3000], rng.permutation(3000)[:3000]
    with caplog.at_level(logging.WARNING, logger="grstream.partition"):
        path = build_shards(array_source(src, dst), tmp_path / "t.h5", progress=False,
                            **request_kwargs)
    assert 6000 // MIN_SHARD_EDGES < UNCAPPED_SHARDS
    with gr.open(path) as store:
        assert store.num_shards == UNCAPPED_SHARDS
        assert store.num_edges == 3000
    assert f"using {UNCAPPED_SHARDS} shards" in caplog.text


def test_shard_cap_follows_the_edge_count():
    from grstream.partition.build_plan import MIN_SHARD_EDGES, UNCAPPED_SHARDS, capped_shard_count
    assert capped_shard_count(UNCAPPED_SHARDS, 10) == UNCAPPED_SHARDS
    # a 2M-edge graph (4M in+out edges) asked for 100000 shards gets 4M / 16384 = 245
    total = 2 * 2_000_000
    assert capped_shard_count(100000, total) == -(-total // MIN_SHARD_EDGES) == 245
    assert capped_shard_count(200, total) == 200


def test_memory_limit_forces_enough_shards(tmp_path):
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 2000, 50000), rng.integers(0, 2000, 50000)
    limit = 1 << 20
    path = build_shards(array_source(src, dst, chunk=5000), tmp_path / "m.h5", memory_limit=limit,
                        progress=False)
    with gr.open(path) as store:
        from grstream.partition.build_plan import KEY_SORT_BYTES_PER_EDGE, SORT_VERTEX_BYTES
        sortable = (limit - SORT_VERTEX_BYTES * 2000) // KEY_SORT_BYTES_PER_EDGE
        for i in range(store.num_shards):
            info = store.shard_info(i)
            # packed keys sort both sides of a shard at once
            assert info.num_in_edges + info.num_out_edges <= sortable
        assert store.build["mode"] == "external"


def test_weight_dtype_float32(tmp_path):
    path = build_shards(array_source([0, 1], [1, 0], [0.5, 1.5]), tmp_path / "f.h5",
                        weight_dtype="float32", progress=False)
    with gr.open(path) as store:
        assert store.edge_props == {"weight": np.dtype(np.float32)}
        assert store.read(0, "out/weight").dtype == np.float32


def test_weights_can_be_dropped(tmp_path):
    path = build_shards(array_source([0, 1], [1, 0], [0.5, 1.5]), tmp_path / "nw.h5",
                        weighted=False, progress=False)
    with gr.open(path) as store:
        assert store.edge_props == {} and store.dataset_names(0) == [
            "in/indptr", "in/src", "out/indptr", "out/dst"]


def test_input_arrays_not_modified(tmp_path):
    src, dst, w = np.array([3, 1, 2, 1]), np.array([0, 2, 2, 0]), np.array([4.0, 3.0, 2.0, 1.0])
    copies = src.copy(), dst.copy(), w.copy()
    source = gr.io.base.EdgeSource("a", lambda: iter([(src, dst, w)]), weighted=True)
    build_shards(source, tmp_path / "x.h5", undirected=True, duplicates=False, renumber=True,
                 progress=False)
    for before, after in zip(copies, (src, dst, w)):
        np.testing.assert_array_equal(before, after)


def test_progress_and_summary_on_stderr(tmp_path, capsys):
    build_shards(array_source([0, 1], [1, 2]), tmp_path / "p.h5", progress=True)
    err = capsys.readouterr().err
    assert "3 vertices, 2 edges, 1 shards" in err and "writing" in err
    build_shards(array_source([0, 1], [1, 2]), tmp_path / "q.h5", progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("options", [{"memory_limit": 1 << 22, "renumber": True},
                                     {"reorder": "degree"}])
def test_progress_bars_of_the_renumbering_pass(tmp_path, capsys, options):
    """The passes that find the ids that occur draw their bars (whose ``update`` returns
    True when it redraws) and pass the chunks on as they are."""
    src = np.arange(0, 4000, 2)
    path = tmp_path / "g.npy"
    np.save(path, np.column_stack([src, src[::-1]]))
    # every update redraws (as one does after the bar's 0.1 s), so every update returns True
    with mock.patch.object(build_plan, "tqdm", functools.partial(tqdm, mininterval=0, miniters=1)), \
            mock.patch("grstream.partition.build.MAX_CHUNK_EDGES", 500):
        out = build_shards(str(path), tmp_path / "p.h5", num_shards=3, progress=True, **options)
    assert "renumbering" in capsys.readouterr().err
    quiet = build_shards(str(path), tmp_path / "q.h5", num_shards=3, progress=False, **options)
    assert store_contents(out) == store_contents(quiet)


def test_build_record(tmp_path):
    path = build_shards(array_source([0], [1], [2.0], name="mine"), tmp_path / "b.h5",
                        undirected=True, progress=False)
    with gr.open(path) as store:
        assert store.build["input"] == "mine"
        assert store.build["options"]["undirected"] is True
        assert json.dumps(store.build)


@pytest.mark.parametrize("kwargs, message", [
    ({"num_shards": 2, "shard_size": 10}, "not both"),
    ({"num_shards": 0}, "num_shards"),
    ({"shard_size": -1}, "shard_size"),
    ({"memory_limit": 0}, "memory_limit"),
    ({"weight_dtype": "int32"}, "floating"),
    ({"weighted": True}, "weights requested"),
    # numbers and dtypes as Python writes them, not np.int64(-3) or dtype('int32')
    ({"num_shards": np.int64(-3)}, "num_shards must be a positive integer, got -3$"),
    ({"memory_limit": np.int64(-5)}, "got -5$"),
    ({"weight_dtype": np.dtype("int32")}, "floating dtype, got 'int32'$"),
])
def test_bad_options(tmp_path, kwargs, message):
    with pytest.raises(UsageError, match=message):
        build_shards(array_source([0], [1]), tmp_path / "o.h5", progress=False, **kwargs)
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize("src, dst, w, message", [
    ([0, -1], [1, 1], None, "negative"),
    ([0, 1], [1, 1], [1.0, float("nan")], "NaN"),
    ([0, 1], [1, 1], [1.0, float("inf")], "infinite"),
])
def test_bad_edges(tmp_path, src, dst, w, message):
    for limit in (None, 1 << 22):
        with pytest.raises(InputFormatError, match=message):
            build_shards(array_source(src, dst, w), tmp_path / "bad.h5", memory_limit=limit,
                         progress=False)
    assert list(tmp_path.iterdir()) == []


def test_overwrite_false_keeps_existing(tmp_path):
    path = build_shards(array_source([0], [1]), tmp_path / "o.h5", progress=False)
    before = path.read_bytes()
    with pytest.raises(UsageError, match="exists"):
        build_shards(array_source([1], [0]), path, overwrite=False, progress=False)
    assert path.read_bytes() == before


@pytest.mark.parametrize("weighted", [False, True])
def test_memory_limit_too_small_for_a_hub(tmp_path, weighted):
    from grstream.errors import MemoryBudgetError
    from grstream.partition.build_plan import (KEY_SORT_BYTES_PER_EDGE, SORT_VERTEX_BYTES,
                                          WEIGHTED_KEY_SORT_BYTES_PER_EDGE)
    src = np.zeros(5000, dtype=np.int64)
    dst = np.arange(1, 5001)
    w = np.ones(5000) if weighted else None
    # the hub's 5000 edges sort as packed keys, at 32 B each more with a weight
    per_edge = KEY_SORT_BYTES_PER_EDGE + (WEIGHTED_KEY_SORT_BYTES_PER_EDGE if weighted else 0)
    need = SORT_VERTEX_BYTES * 5001 + 5000 * per_edge
    with pytest.raises(MemoryBudgetError, match="vertex 0 has 5000 edges") as info:
        build_shards(array_source(src, dst, w), tmp_path / "hub.h5", memory_limit=need - 1,
                     progress=False)
    assert info.value.minimum == need
    build_shards(array_source(src, dst, w), tmp_path / "ok.h5", memory_limit=need, progress=False)
    (tmp_path / "ok.h5").unlink()
    with pytest.raises(MemoryBudgetError, match="per vertex"):
        build_shards(array_source(src, dst, w), tmp_path / "hub.h5", memory_limit=100_000,
                     progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_build_refuses_to_write_over_its_input(tmp_path, link):
    # issue 9 item 4, API side: build_shards(p, p) used to replace the input with the store
    src = tmp_path / "edges.npy"
    np.save(src, np.array([[0, 1], [1, 2]], dtype=np.int64))
    before = src.read_bytes()
    target = {"same": src, "symlink": tmp_path / "sym.npy", "hardlink": tmp_path / "hard.npy"}[link]
    if link == "symlink":
        target.symlink_to(src)
    elif link == "hardlink":
        target.hardlink_to(src)
    with pytest.raises(UsageError, match="is the input"):
        build_shards(str(src), target, progress=False)
    assert src.read_bytes() == before
    assert target.exists() and target.read_bytes() == before
