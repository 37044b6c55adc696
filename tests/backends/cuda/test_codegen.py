"""Kernel source generation and its nvcc compilation: runs in CI, no GPU needed."""
import inspect

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import bc, bfs, cc, pagerank, predecessors, sssp
from grstream.backends.cuda.compile import module_source, nvcc_check, nvcc_path
from grstream.backends.cuda.codegen import can_hoist, generate
from grstream.backends.cuda.skeletons import c_literal
from grstream.engine.schedule import is_dense
from grstream.errors import KernelCompileError


def builtin_programs():
    out = []
    for mod in (bfs, sssp, pagerank, cc, bc, predecessors):
        for obj in vars(mod).values():
            if inspect.isclass(obj) and getattr(obj, "spec", None) is not None \
                    and obj.__module__ == mod.__name__:
                out.append(obj)
    return out


PROGRAMS = builtin_programs()
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


def test_every_builtin_algorithm_is_covered():
    names = {p.__name__ for p in PROGRAMS}
    assert {"BFS", "SSSP", "PageRank", "PersonalizedPageRank", "WeightedPageRank",
            "ConnectedComponents", "BrandesForward", "BrandesBackward", "DagLevels",
            "WeightedBrandesForward", "WeightedBrandesBackward", "BFSTree", "ShortestPathTree"} <= names


@needs_nvcc
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_builtin_kernels_compile_with_nvcc(program):
    spec = program.spec
    # 64-bit ids once (stores past 2**31 vertices), 32-bit for the rest: nvcc takes seconds each
    id_dtype = np.int64 if program is cc.ConnectedComponents else np.int32
    ks = module_source(spec, id_dtype, {p: np.float64 for p in spec.edge_reads})
    assert nvcc_check(ks.source, arch="sm_90", name=spec.name)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_kernel_set_follows_the_program(program):
    spec = program.spec
    ks = module_source(spec, np.int32, {p: np.float64 for p in spec.edge_reads})
    dirs = {"in": ["in"], "out": ["out"], "all": ["in", "out"]}[spec.gather_edges]
    for d in ("in", "out"):
        assert (f"gather_twc_{d}" in ks.kernels) == (d in dirs)
        assert (f"gather_merge_{d}" in ks.kernels) == (d in dirs)  # every built-in monoid has an atomic
        assert (f"gather_twc_multi_{d}" in ks.kernels) == (d in dirs)
        assert (f"gather_merge_multi_{d}" in ks.kernels) == (d in dirs)
    assert ("hoist" in ks.kernels) == can_hoist(spec)
    # one fused reduction pass for all aggregates, each aggregate's term in it
    assert ("aggregates" in ks.kernels) == bool(spec.aggregates) == ("aggfinal" in ks.kernels)
    for agg in spec.aggregates:
        assert f"grstream_aggregate_{agg}(v)" in ks.source
    # dense programs apply every vertex in one launch that also makes the aggregates' first pass,
    # each term read from the state apply just wrote
    fused = bool(spec.aggregates) and is_dense(spec)
    assert ("apply_agg" in ks.kernels) == fused
    if fused:
        body = ks.source[ks.source.index(ks.kernels["apply_agg"] + "("):]
        assert all(f"grstream_aggnext_{agg}(v)" in body for agg in spec.aggregates)
    for name in ks.kernels.values():
        assert f"void __launch_bounds__(GR_BLOCK)\n{name}(" in ks.source
        assert name.endswith("_" + spec.name)
    # a declared start (no init of its own) is made by one fill kernel per field width
    widths = {dt.itemsize for dt in spec.vertex_fields.values()} if spec.constant_init else set()
    assert {k for k in ks.kernels if k.startswith("constant")} == {f"constant{w}" for w in widths}
    # the translator's contract comes first, untouched
    assert ks.source.startswith(ks.translated.source)


@needs_nvcc
def test_constant_kernels_of_every_width_compile():
    """Fields of 1, 4 and 8 bytes: one fill kernel each, writing the value's bits."""
    from ...engine.test_declared_start import Pair
    ks = module_source(Pair.spec, np.int32, {})
    assert sorted(k for k in ks.kernels if k.startswith("constant")) == ["constant1", "constant4", "constant8"]
    assert [a.name for a in ks.args["constant1"].args] == ["out", "n", "bits"]
    assert nvcc_check(ks.source, arch="sm_90", name="Pair")


def test_hoisting_only_for_source_only_messages():
    assert can_hoist(bfs.BFS.spec) and can_hoist(pagerank.PageRank.spec)
    assert not can_hoist(sssp.SSSP.spec)          # reads edge.weight
    assert not can_hoist(cc.ConnectedComponents.spec)  # reads dst.label
    ks = module_source(bfs.BFS.spec, np.int32)
    assert "hmsg[nid]" in ks.source and "grstream_gather_map(nid" not in ks.source
    ks = module_source(bfs.BFS.spec, np.int32, hoist=False)
    assert "hmsg[nid]" not in ks.source and "hoist" not in ks.kernels


class NoAtomic(gr.GASProgram):
    """prod has no atomic in the translator's prelude: only TWC may gather."""

    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.prod

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        v.x = acc
        return False


def test_merge_path_needs_the_monoid_atomic():
    from grstream.program.cuda import translate
    try:
        ks = generate(translate(NoAtomic.spec), NoAtomic.spec, np.int32)
    except gr.errors.ProgramError:
        pytest.skip("the translator refuses prod without an atomic")
    assert ks.merge_ok == ("grstream_atomic_mul" in ks.translated.source)
    assert ("gather_merge_in" in ks.kernels) == ks.merge_ok
    assert "gather_twc_in" in ks.kernels


@pytest.mark.parametrize("value,dtype,expect", [
    (np.inf, np.float64, "__longlong_as_double(0x7ff0000000000000LL)"),
    (-np.inf, np.float32, "__int_as_float((int)0xff800000u)"),
    (np.iinfo(np.int64).min, np.int64, "(-9223372036854775807LL - 1)"),
    (np.iinfo(np.int64).max, np.int64, "((long long)9223372036854775807LL)"),
    (True, np.bool_, "true"), (0.5, np.float32, "((float)0.5)"),
    (np.iinfo(np.uint64).max, np.uint64, "((unsigned long long)18446744073709551615ULL)"),
])
def test_identity_literals(value, dtype, expect):
    assert c_literal(value, dtype) == expect


@needs_nvcc
def test_nvcc_failure_carries_the_source_and_log():
    ks = module_source(bfs.BFS.spec, np.int32)
    bad = ks.source + "\nextern \"C\" __global__ void broken() { not_declared += 1; }\n"
    with pytest.raises(KernelCompileError) as info:
        nvcc_check(bad, name="broken")
    err = info.value
    assert "not_declared" in err.log and err.source == bad
    numbered = err.numbered_source().splitlines()
    assert len(numbered) == len(bad.splitlines())
    assert numbered[-1].split()[0] == str(len(numbered)) and "broken" in numbered[-1]


@needs_nvcc
def test_scatter_kernels_compile_with_nvcc():
    from ...engine.test_scatter import CountedBFS, EdgeRank, WeightDecay
    for cls in (CountedBFS, EdgeRank, WeightDecay):
        ks = module_source(cls.spec, np.int32, {"weight": np.float64})
        assert "scatter" in ks.kernels and "permute8" in ks.kernels
        assert nvcc_check(ks.source, arch="sm_90", name=cls.spec.name)
    # programs without edge state get neither
    ks = module_source(gr.algorithms.bfs.BFS.spec, np.int32)
    assert "scatter" not in ks.kernels and "permute8" not in ks.kernels


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_push_kernels_follow_the_program(program):
    """Push kernels exist for frontier programs with a gather whose monoid has an atomic (no edge
    state, no scatter); they walk the CSR for in-gathers, the CSC for out-gathers, both for all."""
    from grstream.backends.cuda.codegen import push_walks
    from grstream.engine.schedule import push_arrays
    spec = program.spec
    ks = module_source(spec, np.int32, {p: np.float64 for p in spec.edge_reads})
    walks = push_walks(spec, ks.merge_ok)
    assert ks.push_dirs == walks
    # the walked edges are among the arrays the engine holds for push plans
    assert {f"{d}/indptr" for d in walks} <= set(push_arrays(spec))
    if spec.activate == "all" or not spec.has_gather or spec.edge_state or spec.has_scatter:
        assert walks == ()
    for d in ("in", "out"):
        for fmt in ("bitmap", "queue"):
            assert (f"push_{fmt}_{d}" in ks.kernels) == (d in walks)
        assert (f"push_hubs_{d}" in ks.kernels) == (d in walks)
        assert (f"push_multi_bitmap_{d}" in ks.kernels) == (d in walks)
        assert (f"push_hubs_multi_{d}" in ks.kernels) == (d in walks)
        assert (f"push_merge_{d}" in ks.kernels) == (d in walks)
        assert (f"push_merge_multi_{d}" in ks.kernels) == (d in walks)
    for k in ("push_apply", "queue_start", "compact", "activate_bits"):
        assert (k in ks.kernels) == bool(walks)
    if walks:
        # the message is combined with the monoid's own atomic, never a plain store
        atomic = spec.gather_reduce.cuda_atomic
        # (block, warp and thread phase of the bitmap, the queue and the multi-shard bitmap
        # kernel, the two hub kernels and the two edge-balanced ones)
        assert ks.source.count(f"{atomic}(&pacc[w], x)") == 13 * len(walks)
        # idempotent monoids read the slot first and skip messages that cannot change it
        skips = ks.source.count("if (gr_combine_msg(old, x) != old)")
        assert skips == (13 * len(walks) if spec.gather_reduce.idempotent else 0)


class MaxFloatOut(gr.GASProgram):
    """A push over in-edges (CSC) with a compare-and-swap atomic: max over float32 messages of
    out-neighbours, reading an edge property."""

    vertex = {"x": "float32"}
    gather_edges = "out"
    gather_reduce = gr.monoid.max
    gather_dtype = "float32"
    reads = {"w"}

    def init(self, v):
        v.x = v.id * 0.5
        return v.id == 0

    def gather_map(self, src, dst, edge):
        return dst.x * edge.w

    def apply(self, v, acc):
        new = gr.maximum(v.x, acc)
        changed = new > v.x
        v.x = new
        return changed


@needs_nvcc
def test_push_kernels_compile_with_a_cas_atomic_and_64_bit_ids():
    ks = module_source(MaxFloatOut.spec, np.int64, {"w": np.float32})
    assert ks.push_dirs == ("in",)
    assert "grstream_gather_map(w, u, e_w[j])" in ks.source
    assert "atomicCAS" in ks.source
    assert nvcc_check(ks.source, arch="sm_90", name="maxfloatout")


@pytest.mark.parametrize("weighted", [False, True])
def test_changed_programs_gather_from_the_changed_set_only(weighted):
    """gather_from = "changed": every gather's message is the identity unless the edge's other
    end is in the changed set the executor points ``gr_changed`` at; programs gathering from
    every neighbour have no such test."""
    from grstream.algorithms.pagerank_delta import DeltaPageRank, WeightedDeltaPageRank
    from grstream.backends.cuda.codegen import CHANGED_GLOBAL
    cls = WeightedDeltaPageRank if weighted else DeltaPageRank
    ks = module_source(cls.spec, np.int32, {p: np.float64 for p in cls.spec.edge_reads})
    assert ks.hoisted != weighted and ks.push_dirs == ("out",)
    assert f"__device__ const unsigned* {CHANGED_GLOBAL};" in ks.source
    guard = f"gr_active({CHANGED_GLOBAL}, nid) ?"
    for phase in ("gather_twc_in", "gather_merge_in", "gather_twc_multi_in", "gather_merge_multi_in"):
        body = ks.source.split(ks.kernels[phase] + "(")[1].split("\nextern")[0]
        assert guard in body, phase
    assert CHANGED_GLOBAL not in module_source(pagerank.PageRank.spec, np.int32).source
    if nvcc_path() is not None:
        assert nvcc_check(ks.source, arch="sm_90", name=cls.spec.name)
