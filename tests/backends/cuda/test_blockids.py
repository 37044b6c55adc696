"""Compressed ids on the GPU path without a GPU: the kernels' thread cursor run on the host
against the reference decoder, the kernel arguments, the memory model of an executor that decodes
(parts, compressed bytes, edge counts), the mover's delivery of the parts and the generated
modules (nvcc, where present)."""
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
