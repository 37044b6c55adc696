"""The hub path of the push kernels (issue 8): rows of ``push_hub_edges`` edges or more are listed
by the push kernels and walked by the whole grid (``push_hubs_<d>``, push_kernels.py).

Source, argument lists, the host-side launch sequence and nvcc compilation run without a GPU;
the results against the hub path off and scipy need one (``cuda`` mark).
"""
import shutil
import subprocess

import numpy as np
import pytest

import grstream as gr
from grstream.errors import UsageError
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.sssp import SSSP
from grstream.backends.cuda.compile import module_source, nvcc_check, nvcc_path
from grstream.backends.cuda.movement import DeviceArrays
from grstream.backends.cuda.push_kernels import HUB_CAP
from grstream.backends.cuda.pushes import Pushes, hub_shards
from grstream.backends.cuda.zerocopy import zerocopy_source

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
PUSHED = {"bfs": BFS, "sssp": SSSP, "cc": ConnectedComponents}


def _source(cls, id_dtype=np.int32):
    return module_source(cls.spec, id_dtype, {p: np.float64 for p in cls.spec.edge_reads})


@pytest.mark.parametrize("name", list(PUSHED))
def test_hub_kernels_share_the_push_edge_and_take_the_list(name):
    """One hub kernel per walk direction, its parameters from its KernelArgs; the push kernels
    take the list and the threshold; the hub kernel runs the push kernels' EDGE code."""
    ks = _source(PUSHED[name])
    assert ks.push_dirs
    for d in ks.push_dirs:
        hub = ks.args[f"push_hubs_{d}"]
        assert hub.names[0] == "nbr" and hub.names[-3:] == ["hubs", "pacc", "touched"]
        assert hub.names[1:-3] == [f"e_{p}" for p in ks.gather_props]
        assert f"grstream_push_hubs_{d}_{ks.name}({hub.c_params()})" in ks.source
        for fmt in ("bitmap", "queue"):
            names = ks.args[f"push_{fmt}_{d}"].names
            assert names[names.index("hubs") + 1] == "huge_min"
    atomic = PUSHED[name].spec.gather_reduce.cuda_atomic
    body = ks.source.split(f"grstream_push_hubs_{ks.push_dirs[0]}_{ks.name}(")[1].split("extern")[0]
    assert f"{atomic}(&pacc[w], x)" in body and "gr_touch(touched, w)" in body
    assert f"#define GR_HUB_CAP {HUB_CAP}ULL" in ks.source


@needs_nvcc
@pytest.mark.parametrize("name,id_dtype", [("bfs", np.int32), ("sssp", np.int64), ("cc", np.int32)])
def test_hub_kernels_compile_with_nvcc(name, id_dtype):
    """BFS (atomicMin), SSSP (double min: a compare-and-swap loop, 64-bit ids) and CC (both walk
    directions): the module and its zero-copy variant, which keeps the hub kernels unchanged
    (their grid-stride loop is not the TWC block loop it rewrites)."""
    ks = _source(PUSHED[name], id_dtype)
    if name == "sssp":
        assert "atomicCAS" in ks.source
    if name == "cc":
        assert ks.push_dirs == ("out", "in")
    assert nvcc_check(ks.source, arch="sm_90", name=f"hubs_{name}")
    zc = zerocopy_source(ks.source)
    # the one-shard and the multi-shard hub kernel per walk direction
    assert zc.count("hubs[1 + 4 * h]") == 2 * len(ks.push_dirs)
    assert nvcc_check(zc, arch="sm_90", name=f"hubs_zc_{name}")


def test_hub_shards_marks_shards_holding_a_huge_row():
    intervals = np.array([0, 3, 3, 6, 9])
    degrees = np.array([1, 20, 2, 0, 0, 0, 5, 5, 19])
    assert hub_shards(intervals, degrees, 19).tolist() == [20, 0, 0, 19]
    assert hub_shards(intervals, degrees, 5).tolist() == [20, 0, 0, 29]
    assert hub_shards(intervals, degrees, 21).tolist() == [0] * 4
    assert hub_shards(intervals, degrees, 0).tolist() == [0] * 4   # the path off


class _Fn:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def launch(self, grid, block, stream, *args):
        self.log.append((self.name, grid, args))


def _fake_dev(push_degree):
    """A DeviceState's surface that Pushes.shard uses, recording launches and memsets in order."""
    log = []

    class Cuda:
        device_attribute = type("A", (), {"MULTIPROCESSOR_COUNT": "sms"})

        def memset_d32_async(self, addr, value, words, stream):
            log.append(("memset", addr, value, words))

    class Dev:
        n, S = 8, 2
        intervals = np.array([0, 4, 8])
        cuda, ex = Cuda(), type("Ex", (), {"compute": "s"})
        device = type("D", (), {"get_attribute": staticmethod(lambda a: 132 if a == "sms" else None)})
        pacc, touched, rb_dev, hubs, chg, cq = 11, 12, 13, 14, [15, 16], 17
        fn = {"push_hubs_out": _Fn(log, "hubs")}

        def launch(self, name, count, *args):
            log.append((name, count, args))

    Dev.push_degree = np.asarray(push_degree, np.int64)
    return Dev(), log


def _push_shard(huge_min, shard, push_degree=(1, 900, 3, 0, 2, 2, 2, 2), hubs=True):
    dev, log = _fake_dev(push_degree)
    ks = type("Ks", (), {"push_dirs": ("out",), "gather_props": ()})
    pushes = Pushes(dev, ks, huge_min)
    pushes.changed = np.array([2, 2])
    arrays = DeviceArrays(shard, {"out/indptr": 21, "out/dst": 22}, {"out/dst": 10})
    plan = type("Plan", (), {"frontier_format": "bitmap"})
    pushes.shard(plan, arrays, None, "hubs" if hubs else "twc")
    return pushes, log


def test_a_shard_with_a_hub_resets_the_list_then_launches_the_hub_kernel():
    """Stream order: reset the counter, the push kernel lists the hubs, the hub kernel walks them
    with a fixed grid (4 blocks per SM, enough edges here) through dev.fn, the table a zero-copy unit swaps in."""
    pushes, log = _push_shard(512, 0, (1, 900000, 3, 0, 2, 2, 2, 2))
    assert pushes.hub.tolist() == [900000, 0] and pushes.hub_blocks.tolist() == [4 * 132, 0]
    assert [e[0] for e in log] == ["memset", "push_bitmap_out", "hubs"]
    assert log[0][1:] == (14, 0, 2)   # the 8-byte counter at the list's head
    args = log[1][2]
    assert args[-5:] == (14, 512, 11, 12, 13)   # hubs, huge_min, pacc, touched, counters
    assert log[2][1] == (4 * 132, 1) and log[2][2] == (22, 14, 11, 12)


def test_a_small_hub_list_gets_a_block_per_256_edges():
    pushes, log = _push_shard(512, 0, (1, 900, 3, 0, 2, 2, 2, 2))
    assert pushes.hub_blocks.tolist() == [4, 0] and log[2][1] == (4, 1)


def test_shards_without_hubs_and_the_path_off_launch_the_push_kernel_alone():
    for huge_min, shard in ((512, 1), (0, 0), (901, 0)):   # (degrees: 900 at vertex 1, then < 4)
        _, log = _push_shard(huge_min, shard)
        assert [e[0] for e in log] == ["push_bitmap_out"]
        assert log[0][2][-4] == 0   # huge_min 0: no row is listed


def test_a_hub_shard_whose_plan_says_twc_launches_the_push_kernel_alone():
    """The planner gives a push unit "twc" in light iterations (engine/balance.py hub_walk): the
    shard's hub rows then stay in the push kernel's block phase, no hub launch."""
    _, log = _push_shard(512, 0, (1, 900000, 3, 0, 2, 2, 2, 2), hubs=False)
    assert [e[0] for e in log] == ["push_bitmap_out"] and log[0][2][-4] == 0


def test_push_hub_edges_is_an_executor_option():
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.backends.cuda.options import CudaOptions
    from grstream.backends.cuda.pushes import HUB_EDGES
    assert "push_hub_edges" in CudaOptions.names() and HUB_EDGES == 8192
    # the planner reads it from the capabilities (engine/balance.py hub_walk)
    assert CudaExecutor.capabilities(CudaExecutor.make_setup()).push.hub_edges == HUB_EDGES
    assert CudaExecutor.capabilities(CudaExecutor.make_setup(options={"push_hub_edges": 0})).push.hub_edges == 0
    CudaOptions.of({"push_hub_edges": 16})
    CudaOptions.of({"push_hub_edges": 0})   # the hub path off
    for bad in (-1, 1.5, True, "8192"):
        with pytest.raises(UsageError, match="push_hub_edges"):
            CudaOptions.of({"push_hub_edges": bad})


# ---------------------------------------------------------------- on the GPU

def hub_graph(rng, n=5000, m=30000):
    """RMAT-like skew: 40 hubs at low ids with 150..1500 out- and in-edges each (shards' first
    rows hold many hubs, as RMAT's), random edges, self-loops and duplicates; more vertices than
    the hub list holds (push_kernels.HUB_CAP), so that a threshold of 1 on one shard fills it."""
    src, dst = [rng.integers(0, n, m)], [rng.integers(0, n, m)]
    for h in range(40):
        d = int(rng.integers(150, 1500))
        src += [np.full(d, h), rng.integers(0, n, d)]
        dst += [rng.integers(0, n, d), np.full(d, h)]
    src, dst = np.concatenate(src + [np.arange(0, n, 5)]), np.concatenate(dst + [np.arange(0, n, 5)])
    return n, src, dst, rng.integers(1, 9, len(src)).astype(np.float64)


@pytest.fixture(scope="module")
def hub_stores(tmp_path_factory):
    from .test_cuda_backend import build
    rng = np.random.default_rng(808)
    n, src, dst, w = hub_graph(rng)
    tmp = tmp_path_factory.mktemp("hubs")
    return (n, src, dst, w), {(S, c): build(tmp, n, src, dst, w, num_shards=S, compress=c)
                              for S in (1, 5) for c in (False, True)}


@pytest.mark.cuda
@pytest.mark.parametrize("num_shards,kind,transfer", [(1, "all", "auto"), (5, "all", "auto"),
                                                      (5, "minimum", "copy"), (5, "minimum", "zerocopy")])
@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", list(PUSHED))
def test_hub_path_equals_no_hub_path_and_scipy(gpu, hub_stores, name, num_shards, kind, transfer, compress):
    """Pushed throughout with the hub path forced on (a threshold of 100 edges: the hubs; of 1:
    every row, past a full list on one shard, whose rest stays in the TWC walk), at the default
    (no row qualifies: off) and off: the same values as scipy, and the same walked edges and
    changed counts per iteration (the push kernels count a listed row's edges)."""
    from .test_push import PROGRAMS, SOURCE, _budget, reference
    (n, src, dst, w), by_shards = hub_stores
    store = by_shards[num_shards, compress]
    make, field = PROGRAMS[name]
    assert SOURCE < 40   # the source is a hub: level 1 pushes from a listed row
    expect = reference(name, n, src, dst, w)
    runs = {}
    for hub_edges in (100, 1, 8192, 0):
        res = gr.run(make(), store, device="cuda", direction="push", **_budget(kind, make(), store),
                     backend_options={"push_hub_edges": hub_edges, "transfer": transfer})
        assert {st.plan["plan_direction"] for st in res.stats} == {"push"}
        np.testing.assert_array_equal(res.values[field], expect, err_msg=f"push_hub_edges={hub_edges}")
        runs[hub_edges] = [(st.changed_vertices, st.active_edges, st.next_active_vertices) for st in res.stats]
    assert runs[100] == runs[1] == runs[0] == runs[8192]


def test_hub_graph_has_hubs_past_the_forced_threshold():
    """The GPU test's graph: its 40 hubs pass the forced threshold (100 edges) out and in, and
    some pass a block's worth (skeletons.BLOCK_MIN), where the hub path replaces the block phase;
    no other row reaches the threshold; more vertices than the hub list holds."""
    from grstream.backends.cuda.skeletons import BLOCK_MIN
    n, src, dst, _ = hub_graph(np.random.default_rng(808))
    out = np.bincount(src, minlength=n)
    inn = np.bincount(dst, minlength=n)
    assert (out[:40] >= 150).all() and (inn[:40] >= 150).all()
    assert (out[40:] < 100).all() and (inn[40:] < 100).all()
    assert (out[:40] >= BLOCK_MIN).any() and (inn[:40] >= BLOCK_MIN).any()
    assert n > HUB_CAP


_HOST_WALK = r"""
#include <cstdio>
struct Dim { long long x; };
static Dim blockIdx, threadIdx, gridDim;
#define GR_BLOCK 32
#define GR_HUB_CAP 4096ULL
static int seen[8192], per_thread[8192], nbr[8192];   // nbr: the ids the loop reads
static void walk(const long long* hubs) {
$BODY
}
int main() {
  // rows of 1..150 edges at scattered edge ranges (a gap between rows), then one of 1000
  long long hubs[1 + 4 * 41] = {41};
  long long beg = 3;
  for (int h = 0; h < 41; ++h) {
    const long long len = h == 40 ? 1000 : 1 + (h * 37) % 150;
    hubs[1 + 4 * h] = h; hubs[2 + 4 * h] = beg; hubs[3 + 4 * h] = beg + len; hubs[4 + 4 * h] = 0;
    beg += len + 2;
  }
  gridDim.x = 5;
  for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
    for (threadIdx.x = 0; threadIdx.x < GR_BLOCK; ++threadIdx.x) walk(hubs);
  for (long long j = 0; j < beg; ++j) printf("%d ", seen[j]);
  printf("\n");
  for (int t = 0; t < 5 * GR_BLOCK; ++t) printf("%d ", per_thread[t]);
  printf("\n");
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
def test_hub_walk_visits_every_listed_edge_once_and_spreads_them_evenly(tmp_path):
    """The hub kernel's loop (push_kernels.PUSH_HUBS, its EDGE counting visits) run on the host
    for every thread of a 5-block grid: each listed edge once, none outside the rows, and every
    thread within one edge of the others although most rows are shorter than the grid."""
    from grstream.backends.cuda.push_kernels import PUSH_HUBS
    body = PUSH_HUBS.substitute(EDGE="++seen[j]; ++per_thread[t]; (void)u;", ROW_ARRAYS="")
    src = tmp_path / "walk.cpp"
    src.write_text(_HOST_WALK.replace("$BODY", body))
    exe = tmp_path / "walk"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True)
    seen_line, threads_line = subprocess.run([str(exe)], check=True, capture_output=True,
                                             text=True).stdout.splitlines()
    seen = np.array(seen_line.split(), int)
    lens = [1000 if h == 40 else 1 + (h * 37) % 150 for h in range(41)]
    expect = np.zeros(len(seen), int)
    beg = 3
    for n_edges in lens:
        expect[beg:beg + n_edges] = 1
        beg += n_edges + 2
    np.testing.assert_array_equal(seen, expect)
    per_thread = np.array(threads_line.split(), int)
    assert per_thread.sum() == sum(lens) and per_thread.max() - per_thread.min() <= 1

