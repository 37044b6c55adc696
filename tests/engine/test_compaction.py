"""Compaction of a shard's active rows (grstream/engine/compaction.py) and the CPU executor's
"compact" transfer, the reference of the CUDA executor's: every result equals the copy path's and
scipy's."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.engine import compaction

from ..algorithms import test_bfs, test_cc, test_pagerank
from ..algorithms.conftest import BUDGETS, budget_for, build, random_edges


def csr(rng, nv, m, n):
    rows = np.sort(rng.integers(0, nv, m)) if nv else np.zeros(0, np.int64)
    indptr = np.searchsorted(rows, np.arange(nv + 1)).astype(np.int64)
    return {"in/indptr": indptr, "in/src": rng.integers(0, max(n, 1), m).astype(np.int32),
            "in/weight": rng.random(m), "out/indptr": indptr.copy(),
            "out/dst": rng.integers(0, max(n, 1), m).astype(np.int32)}


@settings(max_examples=60, deadline=None)
@given(nv=st.integers(0, 50), m=st.integers(0, 300), seed=st.integers(0, 2**31), density=st.floats(0, 1))
def test_pack_keeps_the_active_rows_and_empties_the_others(nv, m, seed, density):
    rng = np.random.default_rng(seed)
    arrays = csr(rng, nv, m if nv else 0, 100)
    names = tuple(arrays)
    rows = np.flatnonzero(rng.random(nv) < density).astype(np.int64)
    packed = {}

    def out(name, length, dtype):
        packed[name] = np.full(length, 77, dtype=dtype)   # poison: every element must be written
        return packed[name]
    nbytes = compaction.pack(arrays, names, rows, out)
    assert nbytes == sum(a.nbytes for a in packed.values())
    # indptr arrays keep their length, edge arrays hold the active rows' edges only
    for name in names:
        d = name.split("/", 1)[0]
        degrees = np.diff(arrays[f"{d}/indptr"])
        want = nv + 1 if name.endswith("/indptr") else int(degrees[rows].sum())
        assert len(packed[name]) == want, name
    active = np.zeros(nv, bool)
    active[rows] = True
    for d, ids, props in (("in", "in/src", ["in/weight"]), ("out", "out/dst", [])):
        old, new = arrays[f"{d}/indptr"], packed[f"{d}/indptr"]
        assert len(new) == nv + 1 and new[0] == 0
        for k in range(nv):
            a, b = new[k], new[k + 1]
            if not active[k]:
                assert a == b
                continue
            for name in [ids] + props:
                np.testing.assert_array_equal(packed[name][a:b], arrays[name][old[k]:old[k + 1]])


def test_rows_of():
    ids = np.array([1, 4, 5, 9, 12])
    np.testing.assert_array_equal(compaction.rows_of(ids, 4, 10), [0, 1, 5])
    assert compaction.rows_of(ids, 13, 20).size == 0


def run(program, store, budget, transfer):
    # max_iter: PageRank to tol 1e-10 on 3 vertices takes more than the default 10 n + 10
    return gr.run(program, store, device="cpu", memory_budget=budget, max_iter=1000,
                  backend_options={"transfer": transfer})


def modes(result):
    return {m for s in result.stats for m in s.plan["shard_modes"].values()}


PROGRAMS = {"bfs": lambda s: BFS(source=s), "cc": lambda s: ConnectedComponents(),
            "sssp": lambda s: SSSP(source=s), "pagerank": lambda s: PageRank(tol=1e-10)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), m=st.integers(0, 120), seed=st.integers(0, 2**31),
       shards=st.integers(1, 6), budget=st.sampled_from(BUDGETS),
       algo=st.sampled_from(sorted(PROGRAMS)), compress=st.booleans())
def test_compact_equals_copy_and_scipy(tmp_path_factory, n, m, seed, shards, budget, algo, compress):
    rng = np.random.default_rng(seed)
    src, dst, w = random_edges(rng, n, m, weighted=algo == "sssp")
    store = build(tmp_path_factory.mktemp("compact"), n, src, dst, w, num_shards=shards, compress=compress)
    source = int(rng.integers(0, n))
    b = budget_for(budget, PROGRAMS[algo](source), store)
    copy = run(PROGRAMS[algo](source), store, b, "copy")
    comp = run(PROGRAMS[algo](source), store, b, "compact")
    assert "compact" not in modes(copy)
    field = next(iter(copy.values))
    np.testing.assert_array_equal(comp.values[field], copy.values[field])
    assert comp.iterations == copy.iterations
    if algo == "bfs":
        np.testing.assert_array_equal(comp.values["level"], test_bfs.reference(n, src, dst, source))
    elif algo == "cc":
        np.testing.assert_array_equal(comp.values["label"], test_cc.reference(n, src, dst))
    elif algo == "pagerank" and m:
        np.testing.assert_allclose(comp.values["rank"], test_pagerank.scipy_pagerank(n, src, dst),
                                   atol=1e-8)


@pytest.mark.parametrize("shards", [2, 5])
@pytest.mark.parametrize("algo", sorted(PROGRAMS))
def test_compact_on_a_real_graph(datasets_dir, tmp_path, shards, algo):
    store = gr.open(gr.build_shards(datasets_dir / "rome99.gr", tmp_path / "g.h5", num_shards=shards,
                                    weighted=algo == "sssp", progress=False))
    b = budget_for("minimum", PROGRAMS[algo](0), store)
    copy = run(PROGRAMS[algo](0), store, b, "copy")
    comp = run(PROGRAMS[algo](0), store, b, "compact")
    field = next(iter(copy.values))
    np.testing.assert_array_equal(comp.values[field], copy.values[field])
    assert "compact" in modes(comp)
    moved = [s.transfer_bytes for s in comp.stats]
    # a frontier program packs less than whole shards: some iteration moves fewer bytes
    if algo in ("bfs", "sssp"):
        whole = sum(store.shard_info(i).dataset_nbytes[k] for i in range(shards)
                    for k in store.shard_info(i).dataset_nbytes)
        assert min(x.get("compact", whole) for x in moved) < whole


def test_empty_graph_and_the_option(tmp_path):
    store = build(tmp_path, 5, np.zeros(0, np.int64), np.zeros(0, np.int64), num_shards=2)
    r = run(BFS(source=0), store, budget_for("minimum", BFS(source=0), store), "compact")
    np.testing.assert_array_equal(r.values["level"] >= 0, [True, False, False, False, False])
    with pytest.raises(gr.errors.UsageError, match="transfer"):
        run(BFS(source=0), store, None, "zerocopy")


def test_plot_stacks_bytes_by_mode(tmp_path):
    from grstream.engine.plot import plot_stats
    src = np.arange(39)
    store = build(tmp_path, 40, src, src + 1, num_shards=4)
    r = run(BFS(source=0), store, budget_for("minimum", BFS(source=0), store), "compact")
    assert any(s.transfer_bytes.get("compact") for s in r.stats)
    plot_stats(r.stats, tmp_path / "p.png", title="compact")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


@settings(max_examples=40, deadline=None)
@given(nv=st.integers(1, 60), m=st.integers(0, 400), seed=st.integers(0, 2**31),
       density=st.floats(0, 1), parts=st.integers(2, 7))
def test_pack_in_parts_equals_pack_in_one(nv, m, seed, density, parts):
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(seed)
    arrays = csr(rng, nv, m, 100)
    rows = np.flatnonzero(rng.random(nv) < density).astype(np.int64)
    results = []
    with ThreadPoolExecutor(3) as pool:
        for k, run in ((1, None), (parts, pool.map)):
            packed = {}

            def out(name, length, dtype, packed=packed):
                packed[name] = np.full(length, 77, dtype=dtype)
                return packed[name]
            compaction.pack(arrays, tuple(arrays), rows, out, parts=k, run=run)
            results.append(packed)
    for name in arrays:
        np.testing.assert_array_equal(results[0][name], results[1][name])


def coded(arrays, num_vertices):
    """``arrays`` with their id arrays as compressed parts (a GPU region's layout)."""
    from grstream.store import codec
    out = {}
    for name, a in arrays.items():
        if name in ("in/src", "out/dst"):
            out.update({f"{name}.{p}": v for p, v in codec.encode(a, num_vertices).items()})
        else:
            out[name] = a
    return out


def pack_into_dict(arrays, rows, **kw):
    packed = {}

    def out(name, length, dtype):
        packed[name] = np.full(length, 77, dtype=dtype)   # poison: every element must be written
        return packed[name]
    nbytes = compaction.pack(arrays, tuple(arrays), rows, out, **kw)
    assert nbytes == sum(a.nbytes for a in packed.values())
    return packed


def decoded(packed, num_vertices):
    """``packed`` with compressed id parts decoded (the edge count: the end of the indptr)."""
    from grstream.store import codec
    out = {n: a for n, a in packed.items() if "." not in n}
    for d, ids in (("in", "in/src"), ("out", "out/dst")):
        if f"{ids}.words" in packed:
            parts = {p: packed[f"{ids}.{p}"] for p in codec.PARTS}
            edges = int(packed[f"{d}/indptr"][-1])
            codec.check(parts, edges, num_vertices)
            out[ids] = codec.decode(parts, edges, num_vertices, np.int64)
    return out


@settings(max_examples=60, deadline=None)
@given(nv=st.integers(0, 50), m=st.integers(0, 300), seed=st.integers(0, 2**31), density=st.floats(0, 1),
       bits=st.sampled_from([1, 7, 20, 31]), parts=st.integers(1, 4))
def test_pack_of_compressed_ids_decodes_to_the_plain_pack(nv, m, seed, density, bits, parts):
    """The packer decodes the active rows' blocks of compressed ids and encodes them again: the
    packed parts decode to the ids a plain store's pack holds (ids up to 2^31 - 1, rows of one
    edge, hubs and repeated neighbours from the random rows), every other array equal."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(seed)
    n = 1 << bits
    arrays = csr(rng, nv, m if nv else 0, n)
    if m and nv:   # runs of one repeated neighbour and ids near the top of the range
        arrays["in/src"][: m // 3] = n - 1 - rng.integers(0, min(n, 3), m // 3)
    rows = np.flatnonzero(rng.random(nv) < density).astype(np.int64)
    plain = pack_into_dict(arrays, rows)
    with ThreadPoolExecutor(2) as pool:
        packed = pack_into_dict(coded(arrays, n), rows, parts=parts, run=pool.map, num_vertices=n)
    got = decoded(packed, n)
    assert set(got) == set(plain)
    # the packed blocks are the encoding of the packed ids (a function of the ids alone), unless
    # they would outgrow the shard's own: then the direction is whole
    want = dict(plain)
    for d, ids in (("in", "in/src"), ("out", "out/dst")):
        if len(coded(plain, n)[f"{ids}.words"]) > len(coded(arrays, n)[f"{ids}.words"]):
            want.update({k: v for k, v in arrays.items() if k.startswith(d + "/")})
    for name, parts_of in coded(want, n).items():
        np.testing.assert_array_equal(packed[name], parts_of, err_msg=name)
    for name, a in want.items():
        np.testing.assert_array_equal(got[name], a, err_msg=name)


def test_pack_of_compressed_ids_that_would_grow_goes_whole():
    """Packed blocks can take more words than the blocks they came from (the active rows meet
    other neighbours in a block); then the direction is written whole, as a copy would be."""
    n = 1 << 18
    lengths = [7, 20, 6, 14, 38]
    ids = np.array([233564] * 7 + [200104] * 20 + [182658, 182666, 182672, 182704, 182705, 182720]
                   + [10998, 22494, 43514, 55576, 70220, 79395, 102980, 141334, 166197, 170825, 170858,
                      187636, 208538, 234268] + [61869] * 38, dtype=np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    arrays = {"in/indptr": indptr, "in/src": ids, "in/weight": np.arange(len(ids), dtype=np.float64),
              "out/indptr": indptr.copy(), "out/dst": np.sort(ids)}
    rows = np.array([1, 2, 3, 4])
    whole = coded(arrays, n)
    assert len(compaction.pack_ids({p: whole[f"in/src.{p}"] for p in ("offsets", "masks", "widths", "words")},
                                   compaction.edge_positions(indptr, rows)[0], n)["words"]) \
        > len(whole["in/src.words"])
    packed = pack_into_dict(whole, rows, num_vertices=n)
    for name in ("in/indptr", "in/weight") + tuple(f"in/src.{p}" for p in ("offsets", "masks", "widths", "words")):
        np.testing.assert_array_equal(packed[name], whole[name], err_msg=name)
    # the other direction is compacted as usual
    got, plain = decoded(packed, n), pack_into_dict(arrays, rows)
    for name in ("out/indptr", "out/dst"):
        np.testing.assert_array_equal(got[name], plain[name])
