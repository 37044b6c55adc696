"""The edge-balanced push walk (push_kernels.PUSH_MERGE, strategy "merge" of a push unit's
shard): its kernel text run on the host over compressed and plain ids, its launches, the rule that
gives it to a shard (engine/balance.py merge_pushes) and, on the GPU, BFS and SSSP with it equal
to scipy and to the walk by rows on plain, compressed and degree-ordered stores."""
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import grstream as gr
from grstream.algorithms import bfs, sssp
from grstream.backends.cuda.blockids import prelude
from grstream.backends.cuda.push_kernels import MERGE_NID, PUSH_MERGE
from grstream.backends.cuda.skeletons import MERGE_ROWS
from grstream.engine import balance
from grstream.engine.capabilities import Capabilities, PushFacts
from grstream.store import codec

from .warp_host import WARP_HOST

#: the single-shard kernel on the host: a message of the source (1 + u % 5) summed per destination
_HOST = WARP_HOST + r"""
$PRELUDE
inline void gr_block_count(unsigned long long* c, unsigned long long x) {
  __syncthreads();   // (every thread of the block must reach it, as the GPU's)
  std::lock_guard<std::mutex> g(t_mu);
  *c += x;
}
void kernel(gr_counted indptr, $NBR_T nbr, long long lo, long long nv, long long ne, const unsigned* chg,
            long long per_thread, double* acc, unsigned long long* counters) {
$BODY
}
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  long long h[8];   // nv, ne, blocks, words, n, lo, per_thread, compressed
  if (fread(h, 8, 8, f) != 8) return 1;
  const long long nv = h[0], ne = h[1], nb = h[2], nw = h[3], n = h[4], lo = h[5], per = h[6];
  auto indptr = take<long long>(f, nv + 1);
$READ_IDS
  auto chg = take<unsigned>(f, (lo + nv + 31) / 32);
  std::vector<double> acc(n + 1, 0.0);
  std::vector<unsigned long long> counters(3, 0ULL);
  const long long threads = (ne + per - 1) / per, blocks = (threads + GR_BLOCK - 1) / GR_BLOCK;
  gr_run_blocks(blocks, [&] {
    kernel(gr_counted{indptr.data()}, ids, lo, nv, ne, chg.data(), per, acc.data(), counters.data());
  });
  for (long long w = 0; w < n; ++w) printf("%.17g\n", acc[w]);
  printf("%llu\n", counters[1]);
  fprintf(stderr, "%lld\n", t_reads.load());
  return 0;
}
"""
_READ = {
    True: ("gr_ids_t", "  auto off = take<unsigned>(f, nb + 1);\n  auto mask = take<unsigned>(f, nb);\n"
                       "  auto wid = take<unsigned char>(f, nb);\n  auto words = take<unsigned>(f, nw);\n"
                       "  gr_ids_t ids = {off.data(), mask.data(), wid.data(), words.data()};"),
    False: ("const long long*", "  auto idv = take<long long>(f, ne);\n  const long long* ids = idv.data();")}


def _rows(rng, rows):
    """Row degrees: empty rows (a run longer than a round of 32 too), one-edge rows, short rows,
    rows of several id blocks and two hubs side by side (a degree order's first rows)."""
    deg = rng.choice([0, 0, 1, 2, 5, 13, 31, 33, 70], rows)
    deg[rows // 3: rows // 3 + 40] = 0
    deg[rows // 2: rows // 2 + 2] = 1500
    return deg


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    """(compressed, id bits) -> the built host program of the edge-balanced push."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    out, tmp = {}, tmp_path_factory.mktemp("pushmerge")

    def build(packed, n):
        key = (packed, codec.id_bits(n) if packed else 0)
        if key not in out:
            nbr_t, read = _READ[packed]
            body = (MERGE_ROWS + PUSH_MERGE.template).replace("$BID", "blockIdx.x").replace(
                "$NID", MERGE_NID[packed]).replace("$EDGE", "gr_atomic_add(&acc[nid], (double)(1 + u % 5));")
            src = tmp / f"push{key[1]}.cpp"
            src.write_text(_HOST.replace("$PRELUDE", prelude(key[1]) if packed else "").replace(
                "$NBR_T", nbr_t).replace("$READ_IDS", read).replace("$BODY", body))
            exe = tmp / f"push{key[1]}"
            subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-o", str(exe), str(src)], check=True,
                           capture_output=True)
            out[key] = exe
        return out[key]
    return build


@pytest.mark.parametrize("packed,n", [(True, 5000), (True, 2 ** 31 - 1), (False, 5000)])
def test_edge_balanced_push_sends_every_changed_rows_edges_once(tmp_path, host_kernels, packed, n):
    """Every edge of a changed row sends its message once, with its row's source vertex, for
    runs of 1, 3 and 32 edges a thread (rows cut by runs, hubs over many runs, empty rows between
    them and after the shard's last edge); the walked-edge count is the changed rows' degree
    sum; no changed row: nothing sent; empty rows after the last edge cost few row reads."""
    exe = host_kernels(packed, n)
    rng = np.random.default_rng(n % 1009)
    lo = 1000
    base = _rows(rng, 400)
    reads = {}
    for tail, frac, per in ((0, 0.4, 1), (0, 0.4, 3), (0, 0.4, 32), (0, 1.0, 32), (0, 0.0, 32),
                            (0, 0.02, 32), (20_000, 0.4, 32), (20_000, 0.0, 32)):
        deg = np.concatenate((base, np.zeros(tail, base.dtype)))
        rows = len(deg)
        ids = np.concatenate([np.sort(rng.integers(0, min(n, 3000), d)) for d in deg]).astype(np.int64)
        indptr = np.concatenate(([0], np.cumsum(deg))).astype(np.int64)
        changed = rng.random(rows) < frac
        bits = np.zeros(lo + rows + 64, bool)
        bits[lo:lo + rows] = changed
        words = np.packbits(bits[:(lo + rows + 31) // 32 * 32].reshape(-1, 8), axis=1, bitorder="little")
        src = np.repeat(np.arange(rows), deg)
        on = changed[src]
        want = np.zeros(3000)
        np.add.at(want, ids[on], 1.0 + (lo + src[on]) % 5)
        data = tmp_path / f"in-{tail}-{frac}-{per}.bin"
        with open(data, "wb") as fh:
            parts = codec.encode(ids, n) if packed else None
            head = [rows, len(ids), len(parts["masks"]) if packed else 0, len(parts["words"]) if packed else 0,
                    3000, lo, per, int(packed)]
            fh.write(np.array(head, np.int64).tobytes())
            fh.write(indptr.tobytes())
            if packed:
                for p in codec.PARTS:
                    fh.write(np.ascontiguousarray(parts[p]).tobytes())
            else:
                fh.write(ids.tobytes())
            fh.write(words.tobytes())
        run = subprocess.run([str(exe), str(data)], check=True, capture_output=True, text=True, timeout=300)
        got = np.array(run.stdout.split(), dtype=np.float64)
        np.testing.assert_array_equal(got[:-1], want, err_msg=f"tail {tail}, changed {frac}, per_thread {per}")
        assert int(got[-1]) == int(deg[changed].sum())
        reads[tail, frac] = int(run.stderr.split()[-1])
    assert reads[20_000, 0.4] < 1.5 * reads[0, 0.4]


# ---------------------------------------------------------------- the rule and the launches

def _caps(share=0.25, degree=64.0):
    return Capabilities("cuda", push=PushFacts(balance="twc", hub_edges=8192, merge_share=share,
                                               merge_degree=degree))


def test_a_dense_or_long_rowed_shard_pushes_edge_balanced():
    edges, sizes = np.array([1000, 1000, 400_000, 400_000, 0]), np.array([100, 100, 1000, 1000, 10])
    walk = np.array([300, 200, 70_000, 60_000, 0])
    # shard 0: a quarter of its edges; 2: mean degree 400 and a walk of 2^16 or more
    dense, long = balance.DENSE_PUSH, balance.LONG_ROWS
    assert balance.merge_pushes(_caps(), walk, edges, sizes).tolist() == [dense, 0, long, 0, 0]
    assert balance.merge_pushes(_caps(0.0), walk, edges, sizes).tolist() == [0, 0, long, 0, 0]
    assert balance.merge_pushes(_caps(0.25, 0.0), walk, edges, sizes).tolist() == [dense, 0, 0, 0, 0]
    assert not balance.merge_pushes(Capabilities("cpu"), walk, edges, sizes).any()
    from grstream.engine.plan import Unit
    push = Unit((0, 2, 3), "resident", ("twc",) * 3, direction="push")
    assert balance.as_run(push, _caps(), hubs=True, merged={2: long}) == ("hubs", "merge", "hubs")
    assert balance.as_run(push, _caps(), merged={0: dense, 3: long}) == ("merge", "twc", "merge")
    # read in place: long rows only (a dense walk would read every offset over the link)
    zc = Unit((0, 2, 3), "zerocopy", ("twc",) * 3, direction="push")
    assert balance.as_run(zc, _caps(), merged={0: dense, 3: long}) == ("twc", "twc", "merge")


def test_the_cuda_executor_offers_the_edge_balanced_push(tmp_path):
    """Compressed stores: both rules; plain stores: the long-row rule alone; push_merge=False:
    neither."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.backends.cuda.facts import PUSH_MERGE_DEGREE, PUSH_MERGE_SHARE
    plain, packed = _store(tmp_path, False), _store(tmp_path, True)

    def push(store, **options):
        p = CudaExecutor.capabilities(CudaExecutor.make_setup(store=store, options=options)).push
        return p.merge_share, p.merge_degree
    assert push(packed) == (PUSH_MERGE_SHARE, PUSH_MERGE_DEGREE)
    assert push(plain) == (0.0, PUSH_MERGE_DEGREE)
    assert push(packed, push_merge=False) == (0.0, 0.0)
    with pytest.raises(gr.errors.UsageError, match="push_merge"):
        CudaExecutor.make_setup(options={"push_merge": 1})


def _fake(log, merge_items=32):
    from grstream.backends.cuda.pushes import Pushes

    class Fn:
        def __init__(self, name):
            self.name = name

        def launch(self, grid, block, stream, *args):
            log.append((self.name, grid, args))

    class Dev:
        n, S = 8, 2
        intervals = np.array([0, 4, 8])
        cuda = type("C", (), {"memset_d32_async": lambda *a: log.append(("memset",))})()
        ex = type("Ex", (), {"compute": "s"})
        pacc, touched, rb_dev, hubs, chg, cq = 11, 12, 13, 14, [15, 16], 17
        push_degree = np.array([1, 2, 3, 0, 2, 2, 2, 2])
        fn = {k: Fn(k) for k in ("push_merge_multi_out", "push_multi_bitmap_out")}

        def launch(self, name, count, *args):
            log.append((name, count, args))
    ks = type("Ks", (), {"push_dirs": ("out",), "gather_props": ()})
    pushes = Pushes(Dev(), ks, 0, merge_items)
    pushes.changed = np.array([2, 2])
    return pushes


def test_a_merge_shard_launches_a_grid_over_its_edges():
    from grstream.backends.cuda.movement import DeviceArrays
    log = []
    pushes = _fake(log, merge_items=8)
    arrays = DeviceArrays(1, {"out/indptr": 21, "out/dst": 22}, {"out/dst": 100})
    pushes.shard(type("Plan", (), {"frontier_format": "queue"}), arrays, None, "merge")
    # ceil(100 / 8) threads; indptr, ids, lo, nv, ne, the changed bitmap, per_thread, pacc, touched, counters
    assert log == [("push_merge_out", 13, (21, 22, 4, 4, 100, 15, 8, 11, 12, 13))]


def test_several_shards_split_into_an_edge_balanced_launch_and_a_walk_by_rows():
    from grstream.backends.cuda.movement import DeviceArrays
    log, tables = [], []
    pushes = _fake(log)
    data = [DeviceArrays(i, {"out/indptr": 21 + i, "out/dst": 31 + i}, {"out/dst": 100}) for i in (0, 1)]

    def table(d, members, transfer, strategy="twc"):
        tables.append((d, [a.shard for a in members], transfer, strategy))
        return 700 + len(tables), len(members), 5
    pushes.several(data, "zerocopy", ("merge", "twc"), table)
    assert tables == [("out", [0], "zerocopy", "merge"), ("out", [1], "zerocopy", "twc")]
    assert log[0] == ("push_merge_multi_out", (5, 1), (701, 1, 15, 32, 11, 12, 13))
    assert log[1][0] == "push_multi_bitmap_out" and log[1][2][:3] == (702, 1, 15)
    log.clear(), tables.clear()
    pushes.several(data, "resident", ("merge", "merge"), table)
    assert [e[0] for e in log] == ["push_merge_multi_out"] and tables[0][1] == [0, 1]


def _store(tmp_path, compress, reorder=None, n=3000, m=40_000, weighted=False, name="g"):
    """RMAT-like skew: hubs at low ids (their rows side by side), random edges, self-loops and
    duplicates."""
    rng = np.random.default_rng(3)
    src = np.concatenate([rng.integers(0, 40, m // 2), rng.integers(0, n, m // 2)])
    dst = np.concatenate([rng.integers(0, n, m // 2), rng.integers(0, 40, m // 4), rng.integers(0, n, m // 4)])
    w = rng.integers(1, 9, m).astype(np.float64)
    path = tmp_path / f"{name}-{int(compress)}-{reorder}-{int(weighted)}.h5"
    if not path.exists():
        gr.build_shards(sp.coo_matrix((w, (src, dst)), shape=(n, n)), path, num_shards=6, weighted=weighted,
                        progress=False, compress=compress, reorder=reorder)
    return gr.open(path)


def test_push_plans_give_dense_and_long_rowed_shards_the_edge_balanced_walk(tmp_path):
    """The planner asks the rule per push plan: on a compressed store the shards a dense level
    fills walk edge-balanced, a sparse level's by rows; push_merge=False never."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.memory import Footprint, plan_memory
    from grstream.engine.planner import Planner
    from grstream.engine.schedule import needed_arrays
    store = _store(tmp_path, True)
    spec = bfs.BFS.spec
    model = plan_memory(store, needed_arrays(spec, push=True), Footprint(static={"state": 100}, alignment=64))
    sizes = np.diff(np.asarray(store.intervals))
    dense, sparse = sizes.copy(), np.minimum(sizes, 1)
    dense[1] = 0
    for on in (True, False):
        setup = CudaExecutor.make_setup(store, {"push_merge": on})
        planner = Planner(spec, store, model, CudaExecutor.capabilities(setup), CudaExecutor.policies(setup))
        got = {i: b for u in planner.push(2, dense).units for i, b in zip(u.shards, u.balance)}
        assert sorted(got) == [0, 2, 3, 4, 5]
        assert set(got.values()) == ({"merge"} if on else {"twc", "hubs"} & set(got.values()))
        got = {b for u in planner.push(3, sparse).units for b in u.balance}
        assert "merge" not in got and got


# ---------------------------------------------------------------- on the GPU

@pytest.fixture(scope="module")
def merge_stores(tmp_path_factory):
    """The hub graph of test_push_hubs (40 hubs at low ids) as plain and compressed stores, in
    the input's order and in the degree order (the hubs' rows side by side in the first shard)."""
    from .test_push_hubs import hub_graph
    n, src, dst, w = hub_graph(np.random.default_rng(808))
    tmp = tmp_path_factory.mktemp("pushmerge")
    stores = {}
    for compress in (False, True):
        for reorder in (None, "degree"):
            path = tmp / f"m-{int(compress)}-{reorder}.h5"
            gr.build_shards(sp.coo_matrix((w, (src, dst)), shape=(n, n)), path, num_shards=5, weighted=True,
                            progress=False, compress=compress, reorder=reorder)
            stores[compress, reorder] = gr.open(path)
    return (n, src, dst, w), stores


def _partial_model(program, store, budget=None):
    """The push-only memory model (BFS and SSSP pushed throughout) the session plans with two
    slots, for ``budget`` (None: unbounded)."""
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine.direction import memory_arrays
    from grstream.engine.memory import plan_memory
    spec = type(program).spec
    setup = CudaExecutor.make_setup(store, {"slots": 2}, push=True)
    return plan_memory(store, memory_arrays(spec, "only"), CudaExecutor.footprint(spec, False, setup), budget,
                       pinned=CudaExecutor.pinned, **CudaExecutor.memory_options(spec, setup))


def _partial(program, store):
    """Two slots and a budget for the two smallest shards resident beside them: a push plan's
    table of resident shards with copies after it (cut into chunks between them)."""
    model = _partial_model(program, store)
    regions = sorted(model.regions)
    return {"memory_budget": model.static_bytes + model.scratch_bytes + 2 * regions[-1] + regions[0] + regions[1]}


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("reorder", [None, "degree"])
def test_the_partial_budget_keeps_shards_resident_and_streams_others(tmp_path, compress, reorder):
    """The GPU test's "partial" budget: at least two resident shards and two streamed ones
    through two slots, for BFS and SSSP (what the session plans when every plan pushes)."""
    from .test_push_hubs import hub_graph
    n, src, dst, w = hub_graph(np.random.default_rng(808))
    path = tmp_path / "p.h5"
    gr.build_shards(sp.coo_matrix((w, (src, dst)), shape=(n, n)), path, num_shards=5, weighted=True,
                    progress=False, compress=compress, reorder=reorder)
    store = gr.open(path)
    for cls in (bfs.BFS, sssp.SSSP):
        model = _partial_model(cls(source=0), store, _partial(cls(source=0), store)["memory_budget"])
        assert model.slots == 2 and len(model.resident) >= 2
        assert store.num_shards - len(model.resident) >= 2


@pytest.mark.cuda
@pytest.mark.parametrize("kind,transfer,queue", [("all", "auto", False), ("minimum", "copy", True),
                                                 ("minimum", "zerocopy", False), ("partial", "copy", False)])
@pytest.mark.parametrize("reorder", [None, "degree"])
@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_edge_balanced_push_equals_the_walk_by_rows_and_scipy(gpu, merge_stores, monkeypatch, name, compress,
                                                              reorder, kind, transfer, queue):
    """Pushed throughout, with the edge-balanced walk offered (long rows at any walk size; on
    the plain store in the input's order every shard's) and not: scipy's values, and the same
    changed vertices and walked edges per iteration; resident shards (one launch over a table),
    streamed ones copied (a queue frontier) and read in place (the zero-copy kernels), and
    resident shards with copies (the table cut into chunks between them)."""
    from grstream.backends.cuda import facts
    from .test_push import PROGRAMS, SOURCE, _budget, reference
    monkeypatch.setattr(balance, "MERGE_PUSH_MIN", 1)
    if not compress and reorder is None:
        monkeypatch.setattr(facts, "PUSH_MERGE_DEGREE", 1)
    (n, src, dst, w), stores = merge_stores
    store = stores[compress, reorder]
    cls = {"bfs": bfs.BFS, "sssp": sssp.SSSP}[name]
    field = PROGRAMS[name][1]
    source = int(store.to_internal(np.array([SOURCE]))[0])
    expect = reference(name, n, src, dst, w)
    inner = store.to_internal(np.arange(n))   # each input id's vertex in the store
    runs = {}
    budget = _partial(cls(source=source), store) if kind == "partial" else _budget(kind, cls(source=source), store)
    options = {"transfer": transfer, **({"slots": 2} if kind == "partial" else {})}
    for on in (True, False):
        res = gr.run(cls(source=source), store, device="cuda", direction="push",
                     queue_fraction=1.0 if queue else None, **budget, backend_options={"push_merge": on, **options})
        strategies = {b for st in res.stats for b in st.plan["balance"]}
        assert ("merge" in strategies) == on, strategies
        if kind == "partial":   # resident shards and copies in one plan
            assert any({"resident", "copy"} <= set(st.plan["transfer"]) for st in res.stats)
        np.testing.assert_array_equal(res.values[field][inner], expect, err_msg=f"push_merge={on}")
        runs[on] = [(st.changed_vertices, st.active_edges, st.next_active_vertices) for st in res.stats]
    assert runs[True] == runs[False]
