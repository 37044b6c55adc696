"""Vertex reordering at build time: the same graph under the input's labels, every algorithm's
results keyed by label unchanged, the same store for every thread count and memory limit."""
import json
from unittest import mock

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grstream as gr
from grstream.algorithms import bc, bfs, cc, eigenvector, hits, kcore, pagerank, reach, scc, sssp
from grstream.cli import main
from grstream.errors import FormatVersionError, MemoryBudgetError, ShardStoreError, UsageError
from grstream.nx.store_edges import in_edges, out_edges
from grstream.partition import build_shards
from grstream.partition.reorder import ORDERS, auto_order, vertex_order
from grstream.store import format as fmt

from .graphs import array_source, store_contents


def labelled_edges(store, side=out_edges):
    """Every stored edge as (label, label, weight), sorted: the graph whatever the ids."""
    labels = store.labels()
    rows = []
    for src, dst, w in side(store, weights=True):
        ws = [1.0] * len(src) if w is None else w.tolist()
        rows += zip(labels[src].tolist(), labels[dst].tolist(), ws)
    return sorted(rows)


def by_label(store, values):
    return {k: v for k, v in zip(store.labels().tolist(), np.asarray(values).tolist())}


def same_store_graph(plain, ordered):
    assert ordered.num_vertices == plain.num_vertices
    assert ordered.num_edges == plain.num_edges
    assert sorted(ordered.labels().tolist()) == sorted(plain.labels().tolist())
    assert labelled_edges(ordered) == labelled_edges(plain)
    assert labelled_edges(ordered, in_edges) == labelled_edges(plain, in_edges)
    for degree in ("in_degree", "out_degree"):
        assert by_label(ordered, getattr(ordered, degree)()) == \
            by_label(plain, getattr(plain, degree)())
    np.testing.assert_array_equal(ordered.to_internal(ordered.labels()),
                                  np.arange(ordered.num_vertices))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edges=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(1, 4)),
                   max_size=80),
    declared=st.integers(0, 40),
    order=st.sampled_from(ORDERS + ("auto",)),
    weighted=st.booleans(),
    undirected=st.booleans(),
    self_loops=st.booleans(),
    duplicates=st.booleans(),
    renumber=st.sampled_from([None, True, False]),
    num_shards=st.integers(1, 5),
)
def test_reordered_store_is_the_graph_under_its_labels(tmp_path_factory, edges, declared, order,
                                                       weighted, undirected, self_loops,
                                                       duplicates, renumber, num_shards):
    # isolated vertices (a declared count beyond the ids), self-loops and repeated pairs
    tmp = tmp_path_factory.mktemp("r")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    w = [e[2] / 2 for e in edges] if weighted else None
    n = max([declared] + [v + 1 for v in src + dst]) if renumber is not True else None

    def build(tag, reorder, memory_limit=None, threads=1, chunk=7):
        path = tmp / f"{tag}.h5"
        build_shards(array_source(src, dst, w, num_vertices=n, chunk=chunk), path,
                     num_shards=num_shards, undirected=undirected, self_loops=self_loops,
                     duplicates=duplicates, renumber=renumber, reorder=reorder,
                     memory_limit=memory_limit, threads=threads, progress=False)
        return path

    plain = gr.open(build("plain", None))
    first = build("ordered", order)
    with gr.open(first) as ordered:
        if order == "auto":
            assert ordered.vertex_order in (None, "degree")
        else:
            assert ordered.vertex_order == order
        assert ordered.format_version == (fmt.REORDERED_VERSION if ordered.vertex_order else 1)
        same_store_graph(plain, ordered)
    contents = store_contents(first)
    # the same store from every build: thread counts, memory limits, chunkings
    for tag, options in (("t2", {"threads": 2}), ("ext", {"memory_limit": 1 << 22}),
                         ("ext2", {"memory_limit": 1 << 22, "threads": 2, "chunk": 3})):
        assert store_contents(build(tag, order, **options)) == contents, tag
    plain.close()


def _graph():
    """A graph with hubs, isolated vertices (the declared count), self-loops, repeated pairs and
    several components, with weights."""
    rng = np.random.default_rng(5)
    src = np.concatenate([rng.integers(0, 60, 300), [0, 0, 7, 70, 71, 72, 3, 3]])
    dst = np.concatenate([rng.integers(0, 12, 300), [0, 5, 7, 71, 72, 70, 9, 9]])
    w = rng.integers(1, 9, len(src)).astype(np.float64)
    return src, dst, w, 80


def _results(store):
    """Every algorithm's results keyed by label; components as sets of labels."""
    labels = store.labels()
    source, target = int(labels[store.to_internal(3)]), int(labels[store.to_internal(9)])
    out = {
        "bfs": by_label(store, bfs.bfs(store, source)[0]),
        "bfs-to": by_label(store, reach.bfs_to(store, target)[0]),
        "sssp": by_label(store, sssp.sssp(store, source)[0]),
        "kcore": by_label(store, kcore.core_number(store)[0]),
    }
    floats = {
        "bc": bc.betweenness(store)[0],
        "pagerank": pagerank.pagerank(store, tol=1e-12)[0],
        "katz": eigenvector.katz_centrality(store, alpha=0.01, tol=1e-12)[0],
        "hits": hits.hits(store, tol=1e-12)[0],
    }
    for name, components in (("cc", cc.connected_components(store)[0]),
                             ("scc", scc.strongly_connected_components(store)[0])):
        groups = {}
        for label, comp in zip(labels.tolist(), store.to_labels(components).tolist()):
            groups.setdefault(comp, set()).add(label)
        out[name] = sorted(sorted(g) for g in groups.values())
    return out, {k: by_label(store, v) for k, v in floats.items()}


@pytest.fixture(scope="module")
def plain_results(tmp_path_factory):
    src, dst, w, n = _graph()
    path = tmp_path_factory.mktemp("plain") / "g.h5"
    build_shards(array_source(src, dst, w, num_vertices=n), path, num_shards=3, progress=False)
    with gr.open(path) as store:
        return _results(store)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("num_shards,memory_limit", [(1, None), (4, None), (3, 1 << 22)])
def test_every_algorithm_keyed_by_label_as_without_reordering(tmp_path, plain_results, order,
                                                              num_shards, memory_limit):
    src, dst, w, n = _graph()
    path = tmp_path / "g.h5"
    build_shards(array_source(src, dst, w, num_vertices=n), path, num_shards=num_shards,
                 memory_limit=memory_limit, reorder=order, progress=False)
    with gr.open(path) as store:
        exact, floats = _results(store)
    assert exact == plain_results[0]
    for name, values in floats.items():
        expect = plain_results[1][name]
        assert values.keys() == expect.keys()
        np.testing.assert_allclose([values[k] for k in expect], list(expect.values()),
                                   rtol=1e-9, atol=1e-12, err_msg=name)


def test_degree_order_puts_hubs_first():
    degree = np.array([1, 5, 0, 5, 9])
    np.testing.assert_array_equal(vertex_order("degree", degree), [4, 1, 3, 0, 2])


def test_rcm_order_is_scipys_over_the_undirected_graph():
    # repeated pairs and both directions of a pair are one undirected edge
    src = np.array([0, 0, 0, 1, 5, 5, 5, 3])
    dst = np.array([1, 1, 1, 0, 3, 4, 6, 5])
    degree = np.bincount(np.concatenate((src, dst)), minlength=8)
    import scipy.sparse as sp
    from scipy.sparse import csgraph
    pairs = {(0, 1), (1, 0), (5, 3), (3, 5), (5, 4), (4, 5), (5, 6), (6, 5)}
    rows, cols = zip(*sorted(pairs))
    graph = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(8, 8))
    expect = csgraph.reverse_cuthill_mckee(graph, symmetric_mode=True)
    np.testing.assert_array_equal(vertex_order("rcm", degree, [src, dst]), expect)


def test_string_labels_and_id_base_survive_reordering(tmp_path, datasets_dir):
    names = tmp_path / "names.txt"
    names.write_text("alice bob\nbob carol\ncarol alice\ndave bob\nerin erin\n")
    for source in (names, datasets_dir / "karate.mtx"):
        plain = gr.open(build_shards(source, tmp_path / "p.h5", progress=False))
        for order in ORDERS:
            with gr.open(build_shards(source, tmp_path / f"{order}.h5", reorder=order,
                                      num_shards=2, progress=False)) as ordered:
                assert ordered.label_kind == plain.label_kind
                same_store_graph(plain, ordered)
                first = plain.labels()[0]
                assert by_label(ordered, bfs.bfs(ordered, first)[0]) == \
                    by_label(plain, bfs.bfs(plain, first)[0])
        plain.close()


def test_cli_output_of_a_reordered_store_is_the_plain_one(tmp_path, datasets_dir, capsys):
    source = str(datasets_dir / "rome99.gr")
    outputs = []
    for order in ("none", "rcm"):
        store, out = tmp_path / f"{order}.h5", tmp_path / f"{order}.csv"
        assert main(["shard", source, "-o", str(store), "--reorder", order, "--shards", "3",
                     "--quiet"]) == 0
        assert main(["run", "sssp", str(store), "--source", "7", "-o", str(out), "--quiet"]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    capsys.readouterr()
    assert main(["info", str(tmp_path / "rcm.h5"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["vertex_order"] == "rcm" and info["format_version"] == fmt.REORDERED_VERSION


def test_older_readers_refuse_a_reordered_store(tmp_path):
    path = build_shards(np.array([[0, 1], [1, 2], [2, 0]]), tmp_path / "g.h5",
                        reorder="degree", progress=False)
    with mock.patch.object(fmt, "READABLE_VERSIONS", (1,)):
        with pytest.raises(FormatVersionError, match="format version 2"):
            gr.open(path)
    # a store without reordering stays version 1
    plain = build_shards(np.array([[0, 1], [1, 2], [2, 0]]), tmp_path / "p.h5", progress=False)
    with gr.open(plain) as store:
        assert store.format_version == 1 and store.vertex_order is None


def test_vertex_order_attribute_needs_a_label_table(tmp_path):
    path = build_shards(np.array([[0, 1], [1, 2]]), tmp_path / "g.h5", progress=False)
    with h5py.File(path, "r+") as f:
        f.attrs[fmt.VERTEX_ORDER] = "degree"
    with pytest.raises(ShardStoreError, match="vertex_order"):
        gr.open(path)


def test_bad_orders_and_limits_are_refused(tmp_path):
    edges = np.array([[0, 1], [1, 2]])
    with pytest.raises(UsageError, match="reorder must be one of"):
        build_shards(edges, tmp_path / "g.h5", reorder="random", progress=False)
    src = np.arange(100000) % 5000
    with pytest.raises(MemoryBudgetError, match="adjacency"):
        build_shards((src, src[::-1].copy()), tmp_path / "g.h5", reorder="rcm",
                     memory_limit="1M", progress=False)
    assert not (tmp_path / "g.h5").exists()


def test_networkx_backend_keys_a_reordered_store_by_label(tmp_path, datasets_dir):
    nx = pytest.importorskip("networkx")
    import grstream.nx
    source = datasets_dir / "karate.mtx"
    plain = grstream.nx.from_store(build_shards(source, tmp_path / "p.h5", progress=False))
    ordered = grstream.nx.from_store(build_shards(source, tmp_path / "o.h5", reorder="rcm",
                                                  num_shards=2, progress=False))
    layers = [sorted(x) for x in nx.bfs_layers(ordered, 1)]
    assert layers == [sorted(x) for x in nx.bfs_layers(plain, 1)]
    ranks, expect = nx.pagerank(ordered, tol=1e-12), nx.pagerank(plain, tol=1e-12)
    assert ranks.keys() == expect.keys()
    np.testing.assert_allclose([ranks[k] for k in expect], list(expect.values()), rtol=1e-9)


def test_auto_reorders_ids_without_locality(tmp_path):
    n = 1 << 12
    ring = np.arange(n)
    rng = np.random.default_rng(1)
    scrambled = rng.permutation(n)
    for name, (src, dst), expect in (
            ("ring", (ring, (ring + 1) % n), None),
            ("scrambled", (scrambled[ring], scrambled[(ring + 1) % n]), "degree")):
        gaps = np.bincount(np.frexp(np.abs(src - dst).astype(np.float64))[1], minlength=65)
        assert auto_order(gaps, n) == expect, name
        auto = build_shards((src, dst), tmp_path / f"{name}-auto.h5", num_shards=3,
                            reorder="auto", progress=False)
        with gr.open(auto) as store:
            assert store.vertex_order == expect
            assert store.build["options"]["reorder"] == "auto"
        same = build_shards((src, dst), tmp_path / f"{name}-same.h5", num_shards=3,
                            reorder=expect, progress=False)
        assert store_contents(auto) == store_contents(same)
    assert auto_order(np.zeros(65, dtype=np.int64), 10) is None


def test_external_build_keeps_the_reordering_tables_within_its_limit(tmp_path):
    src, dst = np.arange(5000) * 7919 % 4096, np.arange(5000) % 4096
    path = build_shards((src, dst), tmp_path / "g.h5", reorder="degree", memory_limit="4M",
                        progress=False)
    with gr.open(path) as store:
        assert store.build["options"]["memory_limit"] == 4 << 20
        assert store.vertex_order == "degree" and store.num_edges == len(src)
    with pytest.raises(MemoryBudgetError, match="new ids and labels"):
        reorder_plan_with_limit(src, dst, tmp_path)


def reorder_plan_with_limit(src, dst, tmp_path):
    from grstream.partition import reorder
    # a limit the vertex arrays pass but the reordering tables (16 B a vertex) do not
    with mock.patch.object(reorder, "LABEL_BYTES", 1 << 20):
        build_shards((src, dst), tmp_path / "h.h5", reorder="degree", memory_limit="64M",
                     progress=False)


def test_a_compressed_store_keeps_its_vertex_order(tmp_path):
    src, dst, w, n = _graph()
    plain = build_shards(array_source(src, dst, w, num_vertices=n), tmp_path / "p.h5",
                         num_shards=3, progress=False)
    both = build_shards(array_source(src, dst, w, num_vertices=n), tmp_path / "c.h5",
                        num_shards=3, reorder="degree", compress=True, progress=False)
    with gr.open(plain) as p, gr.open(both) as c:
        assert c.format_version == fmt.COMPRESSED_VERSION and c.vertex_order == "degree"
        same_store_graph(p, c)
        source = int(p.labels()[3])
        assert by_label(c, sssp.sssp(c, source)[0]) == by_label(p, sssp.sssp(p, source)[0])


def test_resharding_a_reordered_store_keeps_a_version_2_label_table(tmp_path):
    src, dst, w, n = _graph()
    plain = build_shards(array_source(src, dst, w, num_vertices=n), tmp_path / "p.h5",
                         num_shards=2, progress=False)
    ordered = build_shards(array_source(src, dst, w, num_vertices=n), tmp_path / "o.h5",
                           num_shards=2, reorder="rcm", progress=False)
    again = build_shards(ordered, tmp_path / "again.h5", num_shards=3, progress=False)
    with gr.open(plain) as p, gr.open(again) as a:
        # the labels stay in the reordered store's order: readers that assume them
        # increasing must refuse the store, though no order was asked for this time
        assert a.vertex_order is None and a.format_version == fmt.REORDERED_VERSION
        same_store_graph(p, a)
