"""Compressed ids on the GPU path without a GPU: the kernels' thread cursor run on the host
against the reference decoder, the kernel arguments, the memory model of an executor that decodes
(parts, compressed bytes, edge counts), the mover's delivery of the parts and the generated
modules (nvcc, where present)."""
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import grstream as gr
from grstream.algorithms import bfs, cc, pagerank, sssp
from grstream.backends.cuda.blockids import IdsArg, prelude
from grstream.backends.cuda.compile import module_source, nvcc_check, nvcc_path
from grstream.backends.cuda.facts import CudaFacts, id_bits
from grstream.backends.cuda.kernelargs import KernelArgs, KernelArgumentError, VectorArg
from grstream.backends.cuda.zerocopy import zerocopy_source
from grstream.engine import costs
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.schedule import needed_arrays, push_arrays, select
from grstream.store import codec

from .warp_host import WARP_HOST

#: reads ids of a compressed array through the kernels' cursor (gr_at) at the positions given
_HOST = r"""
#include <cstdio>
#include <cstdlib>
$PRELUDE
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  long long h[4];   // blocks, words, queries
  if (fread(h, 8, 3, f) != 3) return 1;
  const long long nb = h[0], nw = h[1], q = h[2];
  unsigned* off = (unsigned*)malloc(4 * (nb + 1));
  unsigned* mask = (unsigned*)malloc(4 * nb + 4);
  unsigned char* wid = (unsigned char*)malloc(nb + 1);
  unsigned* words = (unsigned*)malloc(4 * nw + 4);
  long long* js = (long long*)malloc(8 * q + 8);
  if (fread(off, 4, nb + 1, f) != (size_t)(nb + 1) || fread(mask, 4, nb, f) != (size_t)nb ||
      fread(wid, 1, nb, f) != (size_t)nb || fread(words, 4, nw, f) != (size_t)nw ||
      fread(js, 8, q, f) != (size_t)q) return 1;
  gr_ids_t ids = {off, mask, wid, words};
  gr_cursor c = gr_cursor_none();
  for (long long k = 0; k < q; ++k) printf("%lld\n", gr_at(ids, c, js[k]));
  return 0;
}
"""


def _cursor_ids(tmp_path, ids, n, positions):
    """The ids at ``positions`` as the kernels' cursor reads them (nvcc host build)."""
    parts = codec.encode(ids, n)
    exe = tmp_path / "cursor"
    src = tmp_path / "cursor.cu"
    src.write_text(_HOST.replace("$PRELUDE", prelude(codec.id_bits(n))))
    subprocess.run([nvcc_path(), "-O1", "-arch=sm_90", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    data = tmp_path / "in.bin"
    with open(data, "wb") as fh:
        fh.write(np.array([len(parts["masks"]), len(parts["words"]), len(positions)], np.int64).tobytes())
        for p in ("offsets", "masks", "widths", "words"):
            fh.write(np.ascontiguousarray(parts[p]).tobytes())
        fh.write(np.asarray(positions, np.int64).tobytes())
    out = subprocess.run([str(exe), str(data)], check=True, capture_output=True, text=True).stdout
    return np.array(out.split(), dtype=np.int64)


def _rows(rng, n, rows, hub=0):
    """CSC-like ids: each row's sorted sources (duplicates kept), one-edge rows, a hub."""
    out = []
    for r in range(rows):
        k = hub if r == 3 and hub else int(rng.integers(0, 40)) if r % 5 else 1
        out.append(np.sort(rng.integers(0, n, k)))
    return np.concatenate(out).astype(np.int64)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
@pytest.mark.parametrize("n", [1, 1000, 2 ** 31 - 1, 2 ** 40])
def test_cursor_reads_every_id_as_the_reference(tmp_path, n):
    """Sequential runs (one field a step), seeks into any lane (rows starting mid-block) and
    repeats, over row starts, one-edge rows, a hub row, duplicates and ids near the top."""
    rng = np.random.default_rng(n % 977)
    ids = _rows(rng, n, 300, hub=2000)
    ids[::97] = n - 1
    e = len(ids)
    walk = np.arange(e)
    jumps = rng.integers(0, e, 500)
    runs = np.concatenate([np.arange(j, min(j + int(rng.integers(1, 70)), e)) for j in jumps[:100]])
    positions = np.concatenate([walk, jumps, runs, jumps[:5], jumps[:5]])
    np.testing.assert_array_equal(_cursor_ids(tmp_path, ids, n, positions), ids[positions])


def test_ids_argument_is_one_struct_of_four_pointers():
    args = KernelArgs("k", (VectorArg("long long", "indptr"), IdsArg("nbr"), VectorArg("unsigned", "f")))
    assert args.c_params(", ") == ("const long long* __restrict__ indptr, gr_ids_t nbr, "
                                   "const unsigned* __restrict__ f")
    assert args.signature == "PPPPPP" and IdsArg.parts == len(codec.PARTS)
    assert args.convert((1, (2, 3, 4, 5), 6)) == [1, 2, 3, 4, 5, 6]
    assert args.convert((1, 0, None)) == [1, 0, 0, 0, 0, 0]   # the null array
    for bad in (7, (1, 2, 3), (1, 2, 3, -4), (1, 2, 3, 4.5)):
        with pytest.raises(KernelArgumentError, match="nbr"):
            args.convert((1, bad, 6))


def _store(tmp_path, compress, n=500, m=6000, shards=4, name="g"):
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:800] = 3   # a hub
    w = rng.integers(1, 9, m).astype(np.float64)
    path = tmp_path / f"{name}-{int(compress)}.h5"
    gr.build_shards(sp.coo_matrix((w, (src, dst)), shape=(n, n)), path, num_shards=shards, weighted=True,
                    progress=False, compress=compress)
    return gr.open(path)


@pytest.mark.parametrize("spec", [bfs.BFS.spec, sssp.SSSP.spec, pagerank.PageRank.spec])
def test_memory_model_of_a_decoding_executor_holds_the_parts(tmp_path, spec):
    plain, packed = _store(tmp_path, False), _store(tmp_path, True)
    names = needed_arrays(spec, push=True)
    fp = Footprint(static={"state": 1000}, alignment=256, codec_parts=True)
    a, b = plan_memory(plain, names, fp), plan_memory(packed, names, fp)
    assert a.names == tuple(names)
    ids = [n for n in names if n in ("in/src", "out/dst")]
    assert set(b.names) == (set(names) - set(ids)) | {f"{n}.{p}" for n in ids for p in codec.PARTS}
    assert b.edges == a.edges and all(sum(e) for e in b.edges)
    for i in range(packed.num_shards):
        info = packed.shard_info(i)
        for n in b.names:
            assert b.lengths[i][n] * np.dtype(packed.read(i, n).dtype).itemsize == info.dataset_nbytes[n]
    assert sum(b.regions) < sum(a.regions)
    # the cost model: the same edges, fewer bytes; a push unit's arrays are its walk's parts
    for whole, part in ((costs.shard_shapes(a), costs.shard_shapes(b)),
                        (costs.shard_shapes(a, names=select(a.names, push_arrays(spec))),
                         costs.shard_shapes(b, names=select(b.names, push_arrays(spec))))):
        assert [s.edges for s in part] == [s.edges for s in whole]
        assert [s.indptr_bytes for s in part] == [s.indptr_bytes for s in whole]
        assert all(p.edge_bytes < w.edge_bytes for p, w in zip(part, whole))
    # an executor reading decoded ids (the CPU's) keeps the datasets as named
    assert plan_memory(packed, names, Footprint(static={"state": 1000})).names == tuple(names)


def test_gpu_kernels_follow_the_store(tmp_path):
    plain, packed = _store(tmp_path, False), _store(tmp_path, True)
    assert id_bits(plain) == 0 and id_bits(packed) == codec.id_bits(packed.num_vertices) == 9
    assert CudaFacts._buffers(packed, sssp.SSSP.spec, False)[0].id_bits == 9
    assert CudaFacts._buffers(plain, sssp.SSSP.spec, False)[0].id_bits == 0


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
@pytest.mark.parametrize("program", [sssp.SSSP, cc.ConnectedComponents, pagerank.PageRank],
                         ids=lambda p: p.__name__)
def test_compressed_modules_compile(program):
    """Every kernel of a compressed store's module and of its zero-copy variant compiles; none
    but the push seed's marks (a plain list of seed ids) reads an id array: every read of a
    shard's ids goes through the decoder."""
    ks = module_source(program.spec, np.int32, {p: np.float64 for p in program.spec.edge_reads}, id_bits=24)
    assert ks.source.count("nbr[") == ("mark_ids" in ks.kernels) and "gr_warp_id(nbr" in ks.source
    ids = {phase: x for phase, a in ks.args.items() for x in a.args if x.name == "nbr"}
    # every shard walk reads blocks; a push's seed ids stay a plain list on the device
    assert ids and all(isinstance(x, IdsArg) for phase, x in ids.items() if phase != "mark_ids")
    assert ("mark_ids" in ids) == bool(ks.push_dirs) and not isinstance(ids.get("mark_ids"), IdsArg)
    zc = zerocopy_source(ks.source)
    assert "#define GR_WARP_MIN 1" in zc
    assert nvcc_check(ks.source, name=program.__name__ + "_packed")
    assert nvcc_check(zc, name=program.__name__ + "_packed_zc")


def test_compressed_shards_take_every_transfer_mode(tmp_path):
    """The transfer policy of a model holding compressed parts offers zero-copy (the kernels
    decode the blocks read in place) and compaction (the packer decodes the active rows' blocks
    and encodes them again), as for plain ids."""
    from grstream.engine.capabilities import Capabilities
    from grstream.engine.plan import Unit
    from grstream.engine.transfers import TransferPolicy
    caps = Capabilities("cuda", transfers=("resident", "load", "copy", "compact", "zerocopy"))
    names = needed_arrays(sssp.SSSP.spec)
    fp = Footprint(static={"state": 1000}, alignment=256, codec_parts=True)
    for compress in (False, True):
        store = _store(tmp_path, compress)
        full = plan_memory(store, names, fp)
        model = plan_memory(store, names, fp, 1000 + 2 * max(full.regions) + sum(full.regions) // 3, 10 ** 9,
                            slots=2)   # some resident: a staging buffer to pack into
        streamed = [i for i in range(store.num_shards) if i in model.pinned]
        assert streamed and model.staging
        policy = TransferPolicy(sssp.SSSP.spec, model, caps)
        assert policy.allowed(Unit((streamed[0],), "copy", ("twc",), slot=0)) == ("copy", "compact", "zerocopy")


def _kernel_text(source, kname):
    """The text of kernel ``kname`` in a module's source (to the next kernel)."""
    at = source.index(f"{kname}(")
    end = source.find('extern "C"', at)
    return source[at:end if end >= 0 else len(source)]


@pytest.mark.parametrize("program", [cc.ConnectedComponents, pagerank.PageRank], ids=lambda p: p.__name__)
def test_compressed_merge_split_decodes_by_warps(program):
    """A compressed store's merge split (single shard and multi-shard table) walks its edge
    ranges by warps, one id block at a time: no thread cursor; the plain store's keeps its
    threads' walks over plain ids."""
    packed = module_source(program.spec, np.int32, {}, id_bits=24)
    plain = module_source(program.spec, np.int32, {})
    for d in ("in", "out") if program is cc.ConnectedComponents else ("in",):
        for phase in (f"gather_merge_{d}", f"gather_merge_multi_{d}"):
            text = _kernel_text(packed.source, packed.kernels[phase])
            assert "gr_warp_id(nbr, j0 >> 5, lane)" in text and "gr_at(" not in text
            assert "__shfl_up_sync" in text   # (the segmented scan of the rows' messages)
            assert "gr_warp_id" not in _kernel_text(plain.source, plain.kernels[phase])
    # the same parameters as the plain merge split's but the ids (the launches do not change)
    names = [a.name for a in packed.args["gather_merge_in"].args]
    assert names == [a.name for a in plain.args["gather_merge_in"].args]


def test_compressed_dense_shards_take_the_merge_split(tmp_path):
    """On a compressed store a dense shard's gather takes the merge split (its warps decode
    whole blocks), whatever its degrees; sparse frontiers, forced strategies, monoids without
    an atomic and plain stores keep their rules."""
    from grstream.backends.cuda import loadbalance
    from grstream.backends.cuda.executor import CudaExecutor
    from grstream.engine import balance
    flat = loadbalance.degree_stats(np.full(10_000, 16))
    assert loadbalance.choose(flat, 1.0) == "twc"
    assert loadbalance.choose(flat, 1.0, compressed=True) == "merge"
    assert loadbalance.choose(flat, 0.1, compressed=True) == "twc"          # sparse frontier
    assert loadbalance.choose(flat, 1.0, "twc", compressed=True) == "twc"    # forced
    assert loadbalance.choose(flat, 1.0, merge_ok=False, compressed=True) == "twc"
    empty = loadbalance.degree_stats(np.zeros(100, np.int64))
    assert loadbalance.choose(empty, 1.0, compressed=True) == "twc"          # no edges to walk
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup(options={}))
    facts = [balance.ShardFacts(0, 10_000, (("in", 160_000),), (("in", 16),), (("in", 4096),))]
    spec = pagerank.PageRank.spec
    for compress, want in ((False, "twc"), (True, "merge")):
        store = _store(tmp_path, compress)
        policy = CudaExecutor.policies(CudaExecutor.make_setup(store=store)).balance
        assert policy(facts, [10_000], spec, caps) == (want,)
        assert policy(facts, [100], spec, caps) == ("twc",)
    forced = CudaExecutor.capabilities(CudaExecutor.make_setup(options={"load_balance": "twc"}))
    assert CudaExecutor.policies(CudaExecutor.make_setup(store=store)).balance(facts, [10_000], spec, forced) == ("twc",)


#: the compressed merge split's kernel body on the host: a block of GR_BLOCK threads (two warps),
#: one std::thread each, the shuffles exchanged through a warp's buffer between two barriers (so
#: every lane must reach each shuffle, as on the GPU), a sum monoid with a message of the source
#: and the row; it counts the reads of ``indptr`` (printed to stderr)
_MERGE_HOST = WARP_HOST + r"""
$PRELUDE
void kernel(gr_counted indptr, gr_ids_t nbr, const double* hmsg, long long lo, long long nv,
            long long ne, const unsigned* frontier, double* acc, long long per_thread) {
$BODY
}
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  long long h[7];   // nv, ne, blocks, words, messages, lo, per_thread
  if (fread(h, 8, 7, f) != 7) return 1;
  const long long nv = h[0], ne = h[1], nb = h[2], nw = h[3], n = h[4], lo = h[5], per = h[6];
  auto indptr = take<long long>(f, nv + 1);
  auto off = take<unsigned>(f, nb + 1);
  auto mask = take<unsigned>(f, nb);
  auto wid = take<unsigned char>(f, nb);
  auto words = take<unsigned>(f, nw);
  auto hmsg = take<double>(f, n);
  auto front = take<unsigned>(f, (lo + nv + 31) / 32);
  const bool use_front = argc > 2;
  gr_ids_t ids = {off.data(), mask.data(), wid.data(), words.data()};
  std::vector<double> acc(nv + 1, 0.0);
  const long long threads = (ne + per - 1) / per, blocks = (threads + GR_BLOCK - 1) / GR_BLOCK;
  gr_run_blocks(blocks, [&] {
    kernel(gr_counted{indptr.data()}, ids, hmsg.data(), lo, nv, ne, use_front ? front.data() : 0, acc.data(), per);
  });
  for (long long r = 0; r < nv; ++r) printf("%.17g\n", acc[r]);
  fprintf(stderr, "%lld\n", t_reads.load());
  return 0;
}
"""


def _merge_rows(rng, rows):
    """Row degrees: empty rows (runs of them too), one-edge rows, short rows, rows of several
    blocks and a hub."""
    deg = rng.choice([0, 0, 1, 2, 5, 13, 31, 33, 70], rows)
    deg[rng.integers(0, rows, 3)] = 0
    deg[rows // 3: rows // 3 + 40] = 0          # a run of empty rows longer than a round of 32
    deg[rows // 2] = 1500                       # a hub: many runs
    return deg


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
@pytest.mark.parametrize("n", [5000, 2 ** 31 - 1])
def test_merge_split_over_blocks_on_the_host(tmp_path, n):
    """The compressed merge split's warps (skeletons.merge_body(True), the text the modules hold) run on
    the host, ids of 13 and 31 bits: every row's combined message equals the sum over its edges, for runs of 1, 3 and 8
    edges a thread (rows cut by runs, carried across blocks, empty rows between and inside
    blocks, the last block partial) and with a frontier (inactive rows keep the fill); empty rows
    after the shard's last edge (a degree-ordered store's isolated vertices) cost no row reads
    beyond a longer search."""
    from grstream.backends.cuda.skeletons import merge_body
    rng = np.random.default_rng(11)
    lo, k = 1000, 1009   # messages hmsg[id % k]
    deg = _merge_rows(rng, 400)
    ids = np.concatenate([np.sort(rng.integers(0, n, d)) for d in deg]).astype(np.int64)
    hmsg = rng.integers(0, 1000, k).astype(np.float64)
    body = merge_body(True).substitute(BID="blockIdx.x", GMAP="hmsg[nid % 1009] * (double)(1 + v % 5)",
                                       ATOMIC="gr_atomic_add")
    src = tmp_path / f"merge{n}.cpp"
    src.write_text(_MERGE_HOST.replace("$PRELUDE", prelude(codec.id_bits(n))).replace("$BODY", body))
    exe = tmp_path / f"merge{n}"
    subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-o", str(exe), str(src)], check=True,
                   capture_output=True)
    parts = codec.encode(ids, n)
    reads = {}
    for tail in (0, 20_000):   # empty rows after the last edge
        rows = len(deg) + tail
        d = np.concatenate((deg, np.zeros(tail, deg.dtype)))
        indptr = np.concatenate(([0], np.cumsum(d))).astype(np.int64)
        v = lo + np.repeat(np.arange(rows), d)
        front = rng.random(lo + rows + 32) < 0.6
        bits = np.packbits(front[:(lo + rows + 31) // 32 * 32].reshape(-1, 8), axis=1, bitorder="little")
        want = np.zeros(rows)
        np.add.at(want, np.repeat(np.arange(rows), d), hmsg[ids % k] * (1 + v % 5))
        for per in (1, 3, 8) if not tail else (8,):
            data = tmp_path / f"in{per}-{tail}-{n}.bin"
            with open(data, "wb") as fh:
                fh.write(np.array([rows, len(ids), len(parts["masks"]), len(parts["words"]), k, lo, per],
                                  np.int64).tobytes())
                fh.write(indptr.tobytes())
                for p in codec.PARTS:
                    fh.write(np.ascontiguousarray(parts[p]).tobytes())
                fh.write(hmsg.tobytes())
                fh.write(bits.tobytes())
            for with_front in (False, True):
                run = subprocess.run([str(exe), str(data)] + (["f"] * with_front), check=True,
                                     capture_output=True, text=True, timeout=300)
                got = np.array(run.stdout.split(), dtype=np.float64)
                expect = np.where(front[lo:lo + rows], want, 0.0) if with_front else want
                np.testing.assert_array_equal(got, expect, err_msg=f"per_thread {per}, frontier {with_front}")
                reads[tail, per, with_front] = int(run.stderr.split()[-1])
    # (the binary searches over 20,400 rows take a few more steps than over 400)
    assert reads[20_000, 8, False] < 1.5 * reads[0, 8, False]
