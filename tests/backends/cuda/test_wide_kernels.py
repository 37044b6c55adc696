"""64-bit index arithmetic in every generated kernel, checked in the source (no GPU needed), and
compiled by nvcc with 64-bit ids where nvcc exists."""
import re

import numpy as np
import pytest

from grstream.algorithms import bfs, pagerank
from grstream.backends.cuda.buffers import push_degree_words
from grstream.backends.cuda.compile import module_source, nvcc_check

from .test_codegen import PROGRAMS, needs_nvcc

#: 32-bit integers a kernel may declare: lanes, warp votes and bit words, shard numbers, block
#: partials, launch parameters that count shards or blocks -- never a vertex, an edge or an offset
NARROW_OK = {"lane", "w", "o", "leader", "owner", "s_owner", "s_shard", "s", "s_lane0", "a", "b",
             "mid", "c", "k", "bits_all", "bit", "bits", "m", "out", "part", "todo", "mine",
             "total", "word", "x", "y", "i", "count", "num_shards", "spread", "accumulate",
             # the warps' row search over 32 row ends (blockids.ROW_SEARCH): offsets within 64
             "top", "at", "d", "cnt", "d31"}
#: names bound to a warp intrinsic when declared 32-bit (the same names hold 64-bit indices elsewhere)
INTRINSIC = {"k": "__ffs", "b": "__ffs", "c": ("__popc", "__syncthreads_count")}
#: parameters that hold offsets, edge positions, vertex ids or counts of them
WIDE_POINTERS = ("indptr", "tab", "intervals", "hubs", "ptr_a", "ptr_b", "eid")
WIDE_SCALARS = ("lo", "nv", "n", "ne", "first", "qbase", "huge_min", "ebase", "words", "per_thread")
NARROW = re.compile(r"\b(?:const\s+)?(?:__shared__\s+)?(int|unsigned|unsigned int|short|unsigned short)"
                    r"\s+([A-Za-z_]\w*)\s*(=[^;,]*|;|,|\))")


def sources():
    for program in PROGRAMS:
        spec = program.spec
        for id_dtype in (np.int32, np.int64):
            yield program.__name__, id_dtype, module_source(
                spec, id_dtype, {p: np.float32 for p in spec.edge_reads}).source


@pytest.mark.parametrize("name,id_dtype,source", list(sources()),
                         ids=lambda v: v if isinstance(v, str) and len(v) < 40 else "")
def test_kernel_index_arithmetic_is_64_bit(name, id_dtype, source):
    ids = "long long" if id_dtype is np.int64 else "int"
    assert f"typedef {ids} gr_id_t;" in source
    body = source.replace(f"typedef {ids} gr_id_t;", "")
    for kind, var, rest in NARROW.findall(body):
        assert var in NARROW_OK, f"{name}: 32-bit {kind} {var} {rest}"
        want = INTRINSIC.get(var)
        if want and rest.startswith("="):
            assert any(w in rest for w in ((want,) if isinstance(want, str) else want)), (var, rest)
    # thread and block numbers become 64-bit before they are scaled
    for m in re.finditer(r"blockIdx\.x\)?\s*\*", body):
        head = body[max(m.start() - 13, 0):m.start()]
        assert head.endswith("(long long)(") or head.endswith("(long long)"), body[m.start() - 40:m.end() + 20]
    assert not re.search(r"for \((?:int|unsigned) (?:j|v|u|e)\b", body)
    for p in WIDE_POINTERS:
        for decl in re.findall(rf"([\w ]+)\*\s*(?:__restrict__\s*)?{p}\b", body):
            assert "long long" in decl, f"{name}: {decl} {p}"
    for p in WIDE_SCALARS:
        for decl in re.findall(rf"(\w[\w ]*?)\s+{p}\s*[,)]", body):
            assert decl.split()[-1] in ("long", "double"), f"{name}: {decl} {p}"


@needs_nvcc
@pytest.mark.parametrize("program", [bfs.BFS, pagerank.PageRank], ids=lambda p: p.__name__)
def test_kernels_with_64_bit_ids_compile_with_nvcc(program):
    ks = module_source(program.spec, np.int64, {p: np.float32 for p in program.spec.edge_reads})
    assert "typedef long long gr_id_t;" in ks.source
    assert nvcc_check(ks.source, arch="sm_90", name=program.spec.name)


def test_push_degrees_saturate_instead_of_wrapping():
    deg = np.array([0, 7, 2 ** 32 - 1, 2 ** 32, 2 ** 33 + 5], dtype=np.int64)
    words = push_degree_words(deg)
    assert words.dtype == np.uint32
    assert words.tolist() == [0, 7, 2 ** 32 - 1, 2 ** 32 - 1, 2 ** 32 - 1]
