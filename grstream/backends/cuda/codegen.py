"""Splice a translated GAS program into the kernel skeletons: one CUDA module per program.

Every kernel is declared by a :class:`~.kernelargs.KernelArgs` (``kernel_args``); its C
parameter list in the source, its prepared signature and its launch checking come from that one
list. Importable without PyCUDA.
"""
import hashlib
from dataclasses import dataclass, field
from string import Template
from typing import Dict, List

import numpy as np

from ...engine.contract import is_dense
from .blockids import IdsArg, loops, prelude as ids_prelude
from .kernelargs import KernelArgs, ScalarArg, VectorArg, ctype
from .push_kernels import (COMPACT_BODY, MERGE_NID, PUSH_APPLY_BITMAP, PUSH_APPLY_ONE, PUSH_APPLY_TAIL, PUSH_EDGE,
                           PUSH_HUBS, PUSH_HUBS_BLOCKS, PUSH_MERGE, PUSH_PRELUDE, PUSH_TWC, PUSH_TWC_MULTI, QUEUE_START_BODY,
                           SELECT_BITMAP, SELECT_QUEUE, SKIP_IDEMPOTENT)
from .skeletons import (APPLY_BODY, BLOCK, BLOCK_MIN, CONSTANT_BODY, COUNT_BODY, FILL_BODY, HOIST_BODY, KERNEL,
                        MARK_BODY, MERGE_ROWS, MULTI_BODY, MULTI_IDS, PERMUTE_BODY, PRELUDE, SCATTER_BODY, TWC,
                        WARP_MIN, AGGREGATE_BODY, APPLY_AGG_BODY, _reducers, c_literal, id_columns, merge_body, tab_width, walk)

I32, I64 = np.int32, np.int64
#: element C types of the permute kernels, by element size
PERMUTE_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


def V(c, name, const=True):
    return VectorArg(c, name, const)


def S(dtype, name):
    return ScalarArg(dtype, name)


def kernel_args(kernel, phase, props=(), prop_ctypes=None, aggregates=None, compressed=False):
    """The typed parameter list of the kernel ``kernel`` (C name) of ``phase``.

    ``props`` are the edge properties the kernel reads per edge (gather_map's or scatter's),
    ``prop_ctypes`` their C types; ``aggregates`` maps aggregate name -> C type; ``compressed``:
    the neighbour ids ``nbr`` are a compressed array's four parts (:class:`.blockids.IdsArg`).
    """
    prop_ctypes = prop_ctypes or {}
    edge = [V(prop_ctypes.get(p, "double"), f"e_{p}") for p in props]
    nbr = IdsArg("nbr") if compressed else V("gr_id_t", "nbr")
    shard = [V("long long", "indptr"), nbr]
    if phase == "fill":
        args = [V("gr_msg_t", "acc", False), S(I64, "nv")]
    elif phase == "apply":
        args = [S(I64, "lo"), S(I64, "nv"), V("unsigned", "frontier"), V("gr_msg_t", "acc"),
                V("unsigned char", "changed", False), V("long long", "ptr_a"), V("long long", "ptr_b"),
                V("unsigned", "chg_next", False), V("unsigned", "pdeg"),
                V("unsigned long long", "counters", False)]
    elif phase.startswith("push_bitmap") or phase.startswith("push_queue"):
        select = ([S(I64, "lo"), S(I64, "nv"), V("unsigned", "chg")] if "bitmap" in phase
                  else [S(I64, "lo"), S(I64, "count"), V("gr_id_t", "queue"), S(I64, "qbase"), S(I32, "spread")])
        args = shard + edge + select + [V("long long", "hubs", False), S(I64, "huge_min"),
                                        V("gr_msg_t", "pacc", False), V("unsigned", "touched", False),
                                        V("unsigned long long", "counters", False)]
    elif phase.startswith("push_merge_multi"):
        args = [V("long long", "tab"), S(I32, "num_shards"), V("unsigned", "chg"), S(I64, "per_thread"),
                V("gr_msg_t", "pacc", False), V("unsigned", "touched", False),
                V("unsigned long long", "counters", False)]
    elif phase.startswith("push_merge"):
        args = shard + edge + [S(I64, "lo"), S(I64, "nv"), S(I64, "ne"), V("unsigned", "chg"), S(I64, "per_thread"),
                               V("gr_msg_t", "pacc", False), V("unsigned", "touched", False),
                               V("unsigned long long", "counters", False)]
    elif phase.startswith("push_multi_bitmap"):
        args = [V("long long", "tab"), S(I32, "num_shards"), V("unsigned", "chg"), V("long long", "hubs", False),
                S(I64, "huge_min"), V("gr_msg_t", "pacc", False), V("unsigned", "touched", False),
                V("unsigned long long", "counters", False)]
    elif phase.startswith("push_hubs_multi"):
        args = [V("long long", "tab"), V("long long", "hubs"), V("gr_msg_t", "pacc", False),
                V("unsigned", "touched", False)]
    elif phase.startswith("push_hubs"):
        args = [nbr] + edge + [V("long long", "hubs"), V("gr_msg_t", "pacc", False),
                                               V("unsigned", "touched", False)]
    elif phase == "push_apply":
        args = [S(I64, "words"), V("unsigned", "touched", False), V("gr_msg_t", "pacc", False),
                        V("unsigned", "next", False), V("unsigned", "chg_next", False),
                        V("unsigned", "pdeg"), V("unsigned long long", "counters", False)]
    elif phase == "queue_start":
        args = [V("unsigned long long", "counts"), S(I32, "num_shards"),
                V("unsigned long long", "cursors", False)]
    elif phase == "compact":
        args = [V("unsigned", "f"), S(I64, "n"), V("long long", "intervals"), S(I32, "num_shards"),
                V("unsigned long long", "cursors", False), V("gr_id_t", "queue", False)]
    elif phase == "activate_bits":
        args = shard + [S(I64, "lo"), S(I64, "nv"), V("unsigned", "chg"), V("unsigned", "next", False)]
    elif phase == "activate":
        args = shard + [S(I64, "lo"), S(I64, "nv"), V("unsigned char", "changed"), V("unsigned", "next", False)]
    elif phase in ("mark", "mark_ids"):   # mark_ids: from a plain id list (a push's seed ids)
        args = [nbr if phase == "mark" else V("gr_id_t", "nbr"), S(I64, "first"), S(I64, "count"),
                V("unsigned", "next", False)]
    elif phase == "count":
        args = [V("unsigned", "f"), S(I64, "n"), V("long long", "intervals"), S(I32, "num_shards"),
                V("unsigned long long", "counts", False)]
    elif phase.startswith("gather_twc_multi") or phase.startswith("gather_merge_multi"):
        last = S(I32, "accumulate") if "twc" in phase else S(I64, "per_thread")
        args = [V("long long", "tab"), S(I32, "num_shards"), V("gr_msg_t", "hmsg"), V("unsigned", "frontier"),
                V("gr_msg_t", "acc_all", False), last]
    elif phase.startswith("gather_twc"):
        args = shard + edge + [V("gr_msg_t", "hmsg"), S(I64, "lo"), S(I64, "nv"), V("unsigned", "frontier"),
                               V("gr_msg_t", "acc", False), S(I32, "accumulate")]
    elif phase.startswith("gather_merge"):
        args = shard + edge + [V("gr_msg_t", "hmsg"), S(I64, "lo"), S(I64, "nv"), S(I64, "ne"),
                               V("unsigned", "frontier"), V("gr_msg_t", "acc", False), S(I64, "per_thread")]
    elif phase == "hoist":
        args = [S(I64, "n"), V("gr_msg_t", "hmsg", False)]
    elif phase == "aggregates":
        args = [S(I64, "n")] + [V(c, f"p_{a}", False) for a, c in aggregates.items()]
    elif phase == "apply_agg":
        args = ([S(I64, "lo"), S(I64, "nv"), V("gr_msg_t", "acc"), V("unsigned long long", "counters", False)]
                + [V(c, f"p_{a}", False) for a, c in aggregates.items()])
    elif phase == "aggfinal":
        args = [S(I32, "count"), V("unsigned char", "out", False)] + [V(c, f"p_{a}") for a, c in aggregates.items()]
    elif phase == "scatter":
        args = shard + edge + [S(I64, "lo"), S(I64, "nv"), S(I64, "ebase"), V("unsigned char", "changed")]
    elif phase.startswith("permute"):
        t = PERMUTE_TYPES[int(phase[len("permute"):])]
        args = [V("long long", "eid"), V(t, "state"), V(t, "out", False), S(I64, "ne")]
    elif phase.startswith("constant"):
        t = PERMUTE_TYPES[int(phase[len("constant"):])]
        args = [V(t, "out", False), S(I64, "n"), S(np.uint64, "bits")]
    else:
        raise KeyError(f"no kernel phase {phase!r}")
    return KernelArgs(kernel, tuple(args))


@dataclass
class KernelSource:
    """A complete CUDA module for one program: its source, kernels and layout facts."""

    source: str
    name: str                      # the program's C identifier (kernel name suffix)
    kernels: Dict[str, str]        # phase -> kernel name, e.g. "gather_twc_in" -> grstream_...
    gather_props: List[str]        # edge properties gather_map takes, in argument order
    hoisted: bool                  # gather reads hmsg[] instead of calling gather_map per edge
    merge_ok: bool                 # the merge-path gather is available (the monoid has an atomic)
    push_dirs: tuple = ()          # edge directions push kernels walk ("out": CSR, "in": CSC); () no push
    msg_dtype: np.dtype = None
    id_dtype: np.dtype = None
    aggregates: Dict[str, np.dtype] = field(default_factory=dict)
    translated: object = None      # the TranslatedProgram (args layout, pack_args)
    args: Dict[str, KernelArgs] = field(default_factory=dict)   # phase -> parameter list
    id_bits: int = 0               # > 0: the ids are compressed blocks of ids of this many bits

    @property
    def key(self):
        return hashlib.sha256(self.source.encode()).hexdigest()

    def numbered_source(self):
        return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(self.source.splitlines()))


def _c_name(name):
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


#: the multi-shard gathers' accumulator: the per-vertex one at the row's interval
_ACC_LOCAL = "gr_msg_t* __restrict__ acc = acc_all + lo;"


def _row_arrays(row, props, pc, compressed=False):
    """C declarations of a table row's edge arrays: the edge properties only (``row`` None: the
    row pointer ``row`` exists), or ``row`` = the row's address and its neighbour ids too."""
    pad = "  " if row is None else "    "
    lines = [] if row is None else [f"{pad}const long long* row = {row};", pad + MULTI_IDS[compressed]]
    first = 1 + id_columns(compressed)
    lines += [f"{pad}const {pc[p]}* __restrict__ e_{p} = (const {pc[p]}*)row[{first + k}];"
              for k, p in enumerate(props)]
    return "\n".join(lines)


def can_hoist(spec):
    """True when gather_map reads only the source vertex: one message per vertex, not per edge."""
    if not spec.has_gather:
        return False
    uses = getattr(spec.analysis, "gather_uses", None)
    return uses is not None and uses <= {"src"}


#: the previous iteration's changed set (a bitmap of n bits) a gather_from "changed" program's
#: gathers read: an edge whose other end is not in it contributes the identity. A module global
#: set by the executor before each iteration (its address changes as the two sets swap)
CHANGED_GLOBAL = "gr_changed"


def from_changed(gmap):
    """A gather message expression of a gather_from "changed" program: ``gmap`` where the edge's
    other end (``nid``) changed in the previous iteration, the identity elsewhere."""
    return f"(gr_active({CHANGED_GLOBAL}, nid) ? ({gmap}) : gr_identity_msg())"


def push_walks(spec, merge_ok=True):
    """The edge directions a push of ``spec`` walks from a changed vertex (``"out"``: its CSR
    out-edges, for programs gathering over in-edges; ``"in"``: its CSC in-edges, for programs
    gathering over out-edges), or () when the GPU cannot push it: no gather, topology-driven
    (dense) programs, no atomic for the monoid and message dtype (``merge_ok``), or mutable edge
    state (scatter / edge-state reads stay with pull). Whether pushing gives pull's result is
    the engine's judgement (the program's push_ok); this is what the kernels can do."""
    if not (spec.has_gather and spec.activate == "frontier" and merge_ok) or spec.edge_state or spec.has_scatter:
        return ()
    return {"in": ("out",), "out": ("in",), "all": ("out", "in")}[spec.gather_edges]


def _aggregate_bodies(aggs):
    """Bodies of the fused two-pass reduction of every aggregate (``aggregates``, ``aggfinal``) and
    of the dense apply that makes the first pass as it applies (``apply_agg``)."""
    tags = list(aggs)
    c = {a: ctype(aggs[a]) for a in tags}
    slots = dict(INIT="\n".join(f"  {c[a]} a_{a} = gr_identity_agg_{a}();" for a in tags),
                 REDUCE="\n".join(f"  a_{a} = gr_block_reduce_agg_{a}(a_{a});\n"
                                  f"  if (threadIdx.x == 0) p_{a}[blockIdx.x] = a_{a};" for a in tags))

    def terms(fn):   # every vertex's terms: of the published state, or of the state apply wrote
        return "\n".join(f"    a_{a} = gr_combine_agg_{a}(a_{a}, ({c[a]}){fn}_{a}(v));" for a in tags)
    first = AGGREGATE_BODY.substitute(TERMS=terms("grstream_aggregate"), **slots)
    fused = APPLY_AGG_BODY.substitute(TERMS=terms("grstream_aggnext"), **slots)
    final = "\n".join(f"  {{\n    {c[a]} a = gr_identity_agg_{a}();\n"
                      f"    for (int i = threadIdx.x; i < count; i += GR_BLOCK) a = gr_combine_agg_{a}(a, p_{a}[i]);\n"
                      f"    a = gr_block_reduce_agg_{a}(a);\n"
                      f"    if (threadIdx.x == 0) *({c[a]}*)(out + {8 * k}) = a;\n  }}"
                      for k, a in enumerate(tags))
    return first, fused, final


class _Module:
    """Collects kernels: each one's source is KERNEL around its body with its KernelArgs' params."""

    def __init__(self, name, prop_ctypes, aggregates, compressed=False):
        self.name, self.prop_ctypes, self.aggregates = name, prop_ctypes, aggregates
        self.compressed = compressed
        self.parts, self.kernels, self.args = [], {}, {}

    def add(self, phase, body, props=()):
        kname = f"grstream_{phase}_{self.name}"
        args = kernel_args(kname, phase, props, self.prop_ctypes, self.aggregates, self.compressed)
        self.parts.append(KERNEL.substitute(KNAME=kname, PARAMS=args.c_params(), BODY=body.strip("\n")))
        self.kernels[phase], self.args[phase] = kname, args


def generate(translated, spec, id_dtype, edge_dtypes=None, hoist=None, id_bits=0):
    """Splice a translated program into the skeletons.

    Parameters
    ----------
    translated : TranslatedProgram
        ``grstream.program.cuda.translate(spec)``'s result.
    spec : ProgramSpec
        The program's spec (gather direction, monoid, aggregates, activation).
    id_dtype : numpy dtype
        The store's vertex-id dtype (``int32`` or ``int64``).
    edge_dtypes : dict, optional
        Edge property name -> dtype, as the store declares them (for the array parameters).
    hoist : bool, optional
        Force (or forbid) hoisting of source-only messages; default :func:`can_hoist`.
    id_bits : int, optional
        > 0: the store's ids are compressed (docs/FORMAT.md, "Compressed ids"), whole ids of this
        many bits; every kernel decodes them as it reads (:mod:`.blockids`). 0: plain id arrays.

    Returns
    -------
    KernelSource
    """
    edge_dtypes = {k: np.dtype(v) for k, v in (edge_dtypes or {}).items()}
    edge_dtypes.update({k: np.dtype(v) for k, v in spec.edge_state.items()})
    name = _c_name(spec.name)
    msg_dt = np.dtype(spec.gather_dtype)
    hoist = can_hoist(spec) if hoist is None else (hoist and can_hoist(spec))
    props = list(getattr(translated, "edge_props", {}).get("gather_map", [])) if spec.has_gather else []
    if hoist and props:
        hoist = False
    aggs = {a: spec.aggregate_dtype[a] for a in spec.aggregates}
    prop_ctypes = {p: ctype(edge_dtypes.get(p, np.float64)) for p in edge_dtypes}
    packed = int(id_bits) > 0
    mod = _Module(name, prop_ctypes, {a: ctype(dt) for a, dt in aggs.items()}, packed)
    parts = [translated.source, PRELUDE.substitute(MSG_T=ctype(msg_dt), ID_T=ctype(id_dtype), BLOCK=BLOCK,
                                                   WARP_MIN=WARP_MIN, BLOCK_MIN=BLOCK_MIN)]
    if packed:
        parts.append(ids_prelude(id_bits))
    twc_walk, ids = walk(TWC, packed), loops(packed)   # the edge loops of this id layout
    monoid = spec.gather_reduce
    if spec.gather_from == "changed":
        parts.append(f"__device__ const unsigned* {CHANGED_GLOBAL};")
    if monoid is not None:
        parts.append(_reducers("msg", ctype(msg_dt), monoid.cuda_combine, c_literal(monoid.identity(msg_dt), msg_dt)))
    else:  # no gather: apply still receives an accumulator (zero, as on the CPU)
        parts.append(_reducers("msg", ctype(msg_dt), "({a})", c_literal(0, msg_dt)))
    for agg, m in spec.aggregates.items():
        dt = spec.aggregate_dtype[agg]
        parts.append(_reducers("agg_" + agg, ctype(dt), m.cuda_combine, c_literal(m.identity(dt), dt)))

    mod.add("fill", FILL_BODY)
    mod.add("apply", APPLY_BODY)
    # activation walks the edges of changed vertices; TWC keeps one hub from serialising a warp
    mod.add("activate", twc_walk.substitute(BID="blockIdx.x", SELECT="changed[k]", BLOCK_BEGIN="", BLOCK_END="",
                                            WARP_BEGIN="", WARP_END="", THREAD_BEGIN="", THREAD_END="",
                                            EDGE="gr_mark(next, nid);"))
    mod.add("mark", MARK_BODY.substitute(CURSOR=ids["CURSOR"], NID=ids["NID"]))
    mod.add("count", COUNT_BODY)

    # multi-shard launches: a table row per shard (indptr, ids, edge properties, lo, nv, ne, first block)
    width = tab_width(len(props), packed)
    pc = {p: prop_ctypes.get(p, "double") for p in props}
    multi_props = _row_arrays(None, props, pc, packed)
    multi = dict(W=width, PROPS=multi_props, IDS=MULTI_IDS[packed])
    atomic = monoid.cuda_atomic if monoid is not None else None
    merge_ok = bool(atomic) and atomic in translated.source
    walks = push_walks(spec, merge_ok)
    if walks:
        parts.append(PUSH_PRELUDE)
        mod.add("activate_bits", twc_walk.substitute(
            BID="blockIdx.x", SELECT="gr_active(chg, lo + k)", BLOCK_BEGIN="", BLOCK_END="", WARP_BEGIN="",
            WARP_END="", THREAD_BEGIN="", THREAD_END="", EDGE="gr_mark(next, nid);"))
        hubs = PUSH_HUBS_BLOCKS if packed else PUSH_HUBS
        # the seed ids of a push (a plain id list on the device, whatever the store's layout)
        mod.add("mark_ids", MARK_BODY.substitute(**{k: v for k, v in loops(False).items() if k in ("CURSOR", "NID")}))
        for d in walks:
            prop_args = "".join(f", e_{p}[j]" for p in props)
            gmap = (f"grstream_gather_map(u, w{prop_args})" if d == "out"
                    else f"grstream_gather_map(w, u{prop_args})")
            edge = PUSH_EDGE.substitute(ATOMIC=atomic, GMAP=gmap,
                                        SKIP=SKIP_IDEMPOTENT if monoid.idempotent else "")
            for fmt, select in (("bitmap", SELECT_BITMAP), ("queue", SELECT_QUEUE)):
                mod.add(f"push_{fmt}_{d}", walk(PUSH_TWC, packed).substitute(SELECT=select, EDGE=edge), props)
            mod.add(f"push_hubs_{d}", hubs.substitute(EDGE=edge, ROW_ARRAYS=""), props)
            # the edge-balanced walk: a grid over the shard's edges (push_kernels.PUSH_MERGE)
            merged = Template(MERGE_ROWS + PUSH_MERGE.safe_substitute(NID=MERGE_NID[packed], EDGE=edge))
            mod.add(f"push_merge_{d}", merged.substitute(BID="blockIdx.x"), props)
            mod.add(f"push_merge_multi_{d}", MULTI_BODY.substitute(LOCALS="", BODY=merged.substitute(BID="bid"),
                                                                   **multi))
            mod.add(f"push_multi_bitmap_{d}", MULTI_BODY.substitute(
                LOCALS="", BODY=walk(PUSH_TWC_MULTI, packed).substitute(SELECT=SELECT_BITMAP, EDGE=edge), **multi))
            mod.add(f"push_hubs_multi_{d}", hubs.substitute(EDGE=edge, ROW_ARRAYS=_row_arrays(
                f"tab + hubs[4 + 4 * h] * {width}", props, pc, packed)))
        mod.add("push_apply", PUSH_APPLY_BITMAP.substitute(
            ONE=PUSH_APPLY_ONE.substitute(MARK="ch = true;"), TAIL=PUSH_APPLY_TAIL))
        mod.add("queue_start", QUEUE_START_BODY)
        mod.add("compact", COMPACT_BODY)
    if spec.has_gather:
        prop_args = "".join(f", e_{p}[j]" for p in props)
        directions = ["in", "out"] if spec.gather_edges == "all" else [spec.gather_edges]
        for d in directions:
            if hoist:
                gmap = "hmsg[nid]" if d == "in" else "hmsg[v]"
            elif d == "in":
                gmap = f"grstream_gather_map(nid, v{prop_args})"
            else:
                gmap = f"grstream_gather_map(v, nid{prop_args})"
            if spec.gather_from == "changed":
                gmap = from_changed(gmap)
            store = "acc[kk] = accumulate ? gr_combine_msg(acc[kk], x) : x;"
            twc = dict(
                SELECT="gr_active(frontier, lo + k)", EDGE=f"x = gr_combine_msg(x, {gmap});",
                BLOCK_BEGIN="gr_msg_t x = gr_identity_msg();",
                BLOCK_END=f"x = gr_block_reduce_msg(x);\n    if (threadIdx.x == 0) {store}",
                WARP_BEGIN="gr_msg_t x = gr_identity_msg();",
                WARP_END=f"x = gr_warp_reduce_msg(x);\n    if (lane == 0) {store}",
                THREAD_BEGIN="gr_msg_t x = gr_identity_msg();", THREAD_END=store)
            mod.add(f"gather_twc_{d}", twc_walk.substitute(BID="blockIdx.x", **twc), props)
            mod.add(f"gather_twc_multi_{d}", MULTI_BODY.substitute(LOCALS=_ACC_LOCAL,
                                                                  BODY=twc_walk.substitute(BID="bid", **twc), **multi))
            if merge_ok:
                # compressed ids: the same edge ranges, each warp's decoded block by block
                merge = dict(GMAP=gmap, ATOMIC=atomic, CURSOR=ids["CURSOR"], NID=ids["NID"])
                body = merge_body(packed)
                mod.add(f"gather_merge_{d}", body.substitute(BID="blockIdx.x", **merge), props)
                mod.add(f"gather_merge_multi_{d}", MULTI_BODY.substitute(
                    LOCALS=_ACC_LOCAL, BODY=body.substitute(BID="bid", **merge), **multi))
        if hoist:
            mod.add("hoist", HOIST_BODY)
    if spec.has_scatter:
        sprops = list(getattr(translated, "edge_props", {}).get("scatter", []))
        mod.add("scatter", SCATTER_BODY.substitute(ARGS="".join(f", e_{p}[j]" for p in sprops),
                                                   CURSOR=ids["CURSOR"], NID=ids["NID"]), sprops)
    if spec.edge_state:
        for size in PERMUTE_TYPES:
            mod.add(f"permute{size}", PERMUTE_BODY)
    if spec.constant_init:   # the declared start, made in place (DeviceState.fill_state)
        for size in sorted({dt.itemsize for dt in spec.vertex_fields.values()}):
            mod.add(f"constant{size}", CONSTANT_BODY)
    if aggs:
        first, fused, final = _aggregate_bodies(aggs)
        mod.add("aggregates", first)
        mod.add("aggfinal", final)
        if is_dense(spec):   # (dense plans apply every vertex in one launch)
            mod.add("apply_agg", fused)
    return KernelSource(source="\n".join(parts + mod.parts), name=name, kernels=mod.kernels, gather_props=props,
                        hoisted=hoist, merge_ok=merge_ok, push_dirs=tuple(walks), msg_dtype=msg_dt, id_dtype=np.dtype(id_dtype),
                        aggregates=aggs, translated=translated, args=mod.args, id_bits=int(id_bits))
