"""CUDA kernel skeletons with named slots, filled from a translated GAS program.

Importable without PyCUDA: CI generates the complete module source for every built-in algorithm and
compiles it with ``nvcc -c`` although it has no GPU.

The generated module is the translator's source (``GasArgs`` struct, ``__constant__ GasArgs g``,
atomics prelude, device functions ``grstream_gather_map`` / ``grstream_apply`` /
``grstream_aggregate_<name>``) followed by these kernels, all ``extern "C"`` and named
``grstream_<phase>_<program>``:

``gather_twc_{in,out}``   degree-binned thread/warp/block mapping (Merrill's TWC): each thread owns
                          one destination; destinations with >= ``GR_BLOCK_MIN`` edges are reduced
                          by the whole block, >= 32 by a warp, the rest by their thread. One owner
                          per destination, so no atomics.
``gather_merge_{in,out}`` edge-balanced split: every thread takes ``per_thread`` consecutive edges,
                          finds its first destination by binary search of ``indptr``; segments
                          wholly inside a thread's range are combined with plain stores, segments
                          cut by a range boundary with the monoid's atomic (the only atomics).
``gather_{twc,merge}_multi_{in,out}``  the same bodies over several resident shards in one
                          launch, driven by a table of shard rows (in-memory mode: one launch per
                          strategy instead of one per shard).
``fill``                  ``acc[k] = identity`` before a merge-path gather.
``hoist``                 ``msg[u] = gather_map(u, u)`` for programs whose message depends on the
                          source alone: gather then reads one value per edge.
``apply``                 ``changed[k] = apply(lo + k, acc[k])`` over the interval's active
                          vertices; counts changed vertices and gathered edges.
``activate``              sets the frontier bit (atomicOr) of every neighbour of a changed vertex.
``count``                 active vertices per shard from the frontier bitmap.
``aggregates`` + ``aggfinal``  every aggregate in one two-pass block reduction (deterministic
                          order), results 8 bytes apart in one buffer.

The "in" variants read the shard's CSC (``in/indptr``, ``in/src``): the owning vertex is the
destination. The "out" variants read its CSR (``out/indptr``, ``out/dst``): the owner is the source.
"""
import hashlib
from dataclasses import dataclass, field
from string import Template
from typing import Dict, List

import numpy as np

BLOCK = 256          # threads per block of every kernel
WARP_MIN = 32        # a destination with at least this many edges is reduced by a warp
BLOCK_MIN = 1024     # ... and with at least this many by a whole block
MERGE_PER_THREAD = 8   # edges per thread of the merge-path split (H100, RMAT 24: 8 beat 4, 16 and 32)
AGG_BLOCKS = 1024    # blocks of the first aggregate pass (fixed: the reduction order is too)

CTYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char", np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int16): "short", np.dtype(np.uint16): "unsigned short",
    np.dtype(np.int32): "int", np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int64): "long long", np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}


def ctype(dtype):
    """The C spelling of a numpy dtype."""
    dt = np.dtype(dtype)
    try:
        return CTYPES[dt]
    except KeyError:
        raise TypeError(f"no CUDA type for dtype {dt}") from None


def c_literal(value, dtype):
    """A C expression of type ``dtype`` for a numpy scalar (infinities included)."""
    dt = np.dtype(dtype)
    c = ctype(dt)
    if dt.kind == "b":
        return "true" if bool(value) else "false"
    if dt.kind == "f":
        x = float(value)
        if np.isinf(x):
            if dt.itemsize == 8:
                bits = "0x7ff0000000000000LL" if x > 0 else "(long long)0xfff0000000000000ULL"
                return f"__longlong_as_double({bits})"
            return f"__int_as_float({'0x7f800000' if x > 0 else '(int)0xff800000u'})"
        return f"(({c}){x!r})"
    x = int(value)
    if dt.kind == "u":
        return f"(({c}){x}ULL)"
    if x == -(2 ** 63):
        return "(-9223372036854775807LL - 1)"
    return f"(({c}){x}LL)"


def _reducers(tag, c, combine, identity):
    """Warp and block reductions of C type ``c`` under a monoid (``combine`` uses {a}, {b})."""
    comb = combine.format(a="a", b="b")
    return Template(r"""
__device__ __forceinline__ $C gr_combine_$T($C a, $C b) { return ($C)($COMB); }
__device__ __forceinline__ $C gr_identity_$T() { return $IDENT; }
__device__ __forceinline__ $C gr_warp_reduce_$T($C x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = gr_combine_$T(x, ($C)__shfl_down_sync(GR_FULL, x, o));
  return x;
}
// Result valid in thread 0; every thread of the block must call it.
__device__ $C gr_block_reduce_$T($C x) {
  __shared__ $C part[32];
  x = gr_warp_reduce_$T(x);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();  // part[] may still be read by a previous call
  if (lane == 0) part[w] = x;
  __syncthreads();
  x = (threadIdx.x < (blockDim.x >> 5)) ? part[lane] : gr_identity_$T();
  if (w == 0) x = gr_warp_reduce_$T(x);
  return x;
}
""").substitute(C=c, T=tag, COMB=comb, IDENT=identity)


PRELUDE = Template(r"""
// ---------------- grstream kernel skeletons (grstream/backends/cuda/skeletons.py) ----------------
typedef $MSG_T gr_msg_t;
typedef $ID_T gr_id_t;
#define GR_FULL 0xffffffffu
#define GR_BLOCK $BLOCK
#define GR_WARP_MIN $WARP_MIN
#define GR_BLOCK_MIN $BLOCK_MIN

// A null frontier means every vertex is active (topology-driven programs, first iterations).
__device__ __forceinline__ bool gr_active(const unsigned* __restrict__ f, long long v) {
  return f == 0 || ((f[v >> 5] >> (v & 31)) & 1u);
}
__device__ __forceinline__ void gr_mark(unsigned* f, long long u) {
  const unsigned bit = 1u << (u & 31);
  if (!(f[u >> 5] & bit)) atomicOr(f + (u >> 5), bit);  // read first: most marks are repeats
}
""")

# Thread/warp/block mapping over the edges of selected vertices. Slots: SELECT (bool expression in k),
# and per phase BEGIN/EDGE/END code; EDGE sees j (edge index) and v (owning vertex id).
TWC = Template(r"""
  __shared__ long long s_job[3];
  __shared__ int s_owner;
  const long long k = (long long)($BID) * GR_BLOCK + threadIdx.x;
  const int lane = threadIdx.x & 31;
  long long beg = 0, end = 0;
  bool todo = false;
  if (k < nv && ($SELECT)) { beg = indptr[k]; end = indptr[k + 1]; todo = true; }
  // block phase: one large vertex at a time, every thread strides over its edges
  while (true) {
    if (threadIdx.x == 0) s_owner = -1;
    __syncthreads();
    if (todo && end - beg >= GR_BLOCK_MIN) s_owner = threadIdx.x;
    __syncthreads();
    const int owner = s_owner;
    if (owner < 0) break;
    if (threadIdx.x == owner) { s_job[0] = beg; s_job[1] = end; s_job[2] = k; todo = false; }
    __syncthreads();
    const long long b = s_job[0], e = s_job[1], kk = s_job[2], v = lo + kk;
    (void)kk; (void)v;
    $BLOCK_BEGIN
    for (long long j = b + threadIdx.x; j < e; j += GR_BLOCK) { $EDGE }
    $BLOCK_END
  }
  // warp phase: medium vertices, one warp each
  while (true) {
    const unsigned m = __ballot_sync(GR_FULL, todo && end - beg >= GR_WARP_MIN);
    if (m == 0) break;
    const int leader = __ffs(m) - 1;
    const long long b = __shfl_sync(GR_FULL, beg, leader), e = __shfl_sync(GR_FULL, end, leader);
    const long long kk = __shfl_sync(GR_FULL, k, leader), v = lo + kk;
    if (lane == leader) todo = false;
    (void)kk; (void)v;
    $WARP_BEGIN
    for (long long j = b + lane; j < e; j += 32) { $EDGE }
    $WARP_END
  }
  // thread phase: small vertices, one thread each
  if (todo) {
    const long long kk = k, v = lo + k;
    (void)kk; (void)v;
    $THREAD_BEGIN
    for (long long j = beg; j < end; ++j) { $EDGE }
    $THREAD_END
  }
""")

KERNELS = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_fill_$NAME(gr_msg_t* __restrict__ acc, long long nv) {
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k < nv) acc[k] = gr_identity_msg();
}

extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_apply_$NAME(long long lo, long long nv, const unsigned* __restrict__ frontier,
                     const gr_msg_t* __restrict__ acc, unsigned char* __restrict__ changed,
                     const long long* __restrict__ ptr_a, const long long* __restrict__ ptr_b,
                     unsigned long long* __restrict__ counters) {
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  bool ch = false;
  unsigned long long edges = 0;
  if (k < nv) {
    if (gr_active(frontier, lo + k)) {
      ch = grstream_apply(lo + k, acc ? acc[k] : (gr_msg_t)0);
      if (ptr_a) edges += (unsigned long long)(ptr_a[k + 1] - ptr_a[k]);
      if (ptr_b) edges += (unsigned long long)(ptr_b[k + 1] - ptr_b[k]);
    }
    if (changed) changed[k] = ch;
  }
  const int c = __syncthreads_count(ch);
  for (int o = 16; o > 0; o >>= 1) edges += __shfl_down_sync(GR_FULL, edges, o);
  if ((threadIdx.x & 31) == 0 && edges) atomicAdd(&counters[1], edges);
  if (threadIdx.x == 0 && c) atomicAdd(&counters[0], (unsigned long long)c);
}

extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_activate_$NAME(const long long* __restrict__ indptr, const gr_id_t* __restrict__ nbr,
                        long long lo, long long nv, const unsigned char* __restrict__ changed,
                        unsigned* __restrict__ next) {
$ACTIVATE_BODY
}

extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_count_$NAME(const unsigned* __restrict__ f, long long n, const long long* __restrict__ intervals,
                     int num_shards, unsigned long long* __restrict__ counts) {
  const long long w = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  const long long v0 = w << 5;
  unsigned bits = 0;
  int s = -1;
  if (v0 < n) {
    bits = f[w];
    if (n - v0 < 32) bits &= (1u << (n - v0)) - 1u;
    int a = 0, b = num_shards - 1;  // the last shard whose interval starts at or before v0
    while (a < b) { const int mid = (a + b + 1) >> 1; if (intervals[mid] <= v0) a = mid; else b = mid - 1; }
    s = a;
  }
  // the common case: the whole warp's words lie in one shard
  const long long hi0 = s >= 0 ? intervals[s + 1] : 0;
  const bool whole = s >= 0 && hi0 >= v0 + 32;
  const int s_lane0 = __shfl_sync(GR_FULL, s, 0);
  if (__all_sync(GR_FULL, whole && s == s_lane0)) {
    unsigned long long c = __popc(bits);
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(GR_FULL, c, o);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(&counts[s], c);
    return;
  }
  while (s >= 0 && s < num_shards && bits) {
    const long long hi = intervals[s + 1];
    unsigned part = bits;
    if (hi < v0 + 32) {
      const long long width = hi - v0;
      part = width <= 0 ? 0u : (bits & ((1u << width) - 1u));
    }
    bits &= ~part;
    if (part) atomicAdd(&counts[s], (unsigned long long)__popc(part));
    ++s;
  }
}
""")

GATHER_TWC = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_gather_twc_${DIR}_$NAME(const long long* __restrict__ indptr, const gr_id_t* __restrict__ nbr$PROPS,
    const gr_msg_t* __restrict__ hmsg, long long lo, long long nv, const unsigned* __restrict__ frontier,
    gr_msg_t* __restrict__ acc, int accumulate) {
$BODY
}
""")

GATHER_MERGE = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_gather_merge_${DIR}_$NAME(const long long* __restrict__ indptr, const gr_id_t* __restrict__ nbr$PROPS,
    const gr_msg_t* __restrict__ hmsg, long long lo, long long nv, long long ne,
    const unsigned* __restrict__ frontier, gr_msg_t* __restrict__ acc, long long per_thread) {
$BODY
}
""")

MERGE_BODY = Template(r"""
  __shared__ long long s_rows[2];
  const long long t = (long long)($BID) * GR_BLOCK + threadIdx.x;
  const long long c0 = t * per_thread;
  // One search per block narrows every thread's search to the block's rows.
  if (threadIdx.x < 2) {
    long long key = (long long)($BID) * GR_BLOCK * per_thread;
    if (threadIdx.x == 1) key = min(key + (long long)GR_BLOCK * per_thread, ne) - 1;
    long long a = 0, b = nv - 1;  // the last row starting at or before key
    while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= key) a = mid; else b = mid - 1; }
    s_rows[threadIdx.x] = a;
  }
  __syncthreads();
  if (c0 >= ne) return;
  const long long c1 = min(c0 + per_thread, ne);
  long long a = s_rows[0], b = s_rows[1];
  while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= c0) a = mid; else b = mid - 1; }
  long long r = a;
  long long j = c0;
  while (j < c1) {
    const long long rb = indptr[r], re = indptr[r + 1];
    const long long stop = re < c1 ? re : c1;
    const long long v = lo + r;
    if (stop > j && gr_active(frontier, v)) {
      gr_msg_t x = gr_identity_msg();
      for (; j < stop; ++j) x = gr_combine_msg(x, $GMAP);
      if (rb >= c0 && re <= c1) acc[r] = gr_combine_msg(acc[r], x);  // this thread owns the row
      else $ATOMIC(&acc[r], x);
    }
    j = stop;
    ++r;
  }
""")

# Several resident shards in one launch: ``tab`` holds a row of TAB_WIDTH(P) longs per shard
# (indptr, neighbour ids, P edge-property arrays, lo, nv, ne, first block); each block finds its
# shard by binary search over the first-block column and runs the per-shard body unchanged.
MULTI = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_gather_${KIND}_multi_${DIR}_$NAME(const long long* __restrict__ tab, int num_shards,
    const gr_msg_t* __restrict__ hmsg, const unsigned* __restrict__ frontier,
    gr_msg_t* __restrict__ acc_all, $EXTRA) {
  __shared__ int s_shard;
  if (threadIdx.x == 0) {
    int a = 0, b = num_shards - 1;
    while (a < b) {
      const int mid = (a + b + 1) >> 1;
      if (tab[(long long)mid * $W + $W - 1] <= (long long)blockIdx.x) a = mid; else b = mid - 1;
    }
    s_shard = a;
  }
  __syncthreads();
  const long long* row = tab + (long long)s_shard * $W;
  const long long* __restrict__ indptr = (const long long*)row[0];
  const gr_id_t* __restrict__ nbr = (const gr_id_t*)row[1];
$PROPS
  const long long lo = row[$W - 4], nv = row[$W - 3], ne = row[$W - 2];
  const long long bid = (long long)blockIdx.x - row[$W - 1];
  gr_msg_t* __restrict__ acc = acc_all + lo;
  (void)ne;
$BODY
}
""")


def tab_width(num_props):
    """Longs per shard row of a multi-shard gather's table."""
    return 6 + int(num_props)

HOIST = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_hoist_$NAME(long long n, gr_msg_t* __restrict__ hmsg) {
  const long long u = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (u < n) hmsg[u] = grstream_gather_map(u, u);
}
""")

# Every aggregate in one pass over the vertices, then one block combining the partials: a program
# with A aggregates costs two launches, not 2A. Results land 8 bytes apart in ``out``.
AGGREGATE_ALL = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_aggregates_$NAME(long long n$PARTIAL_PARAMS) {
$INIT
  for (long long v = (long long)blockIdx.x * GR_BLOCK + threadIdx.x; v < n; v += (long long)gridDim.x * GR_BLOCK) {
$TERMS
  }
$REDUCE
}
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_aggfinal_$NAME(int count, unsigned char* __restrict__ out$CPARTIAL_PARAMS) {
$FINAL
}
""")

def _indent(code, n=2):
    return "\n".join((" " * n + line) if line.strip() else line for line in code.strip("\n").splitlines())


@dataclass
class KernelSource:
    """A complete CUDA module for one program: its source, kernel names and layout facts."""

    source: str
    name: str                      # the program's C identifier (kernel name suffix)
    kernels: Dict[str, str]        # phase -> kernel name, e.g. "gather_twc_in" -> grstream_...
    gather_props: List[str]        # edge properties gather_map takes, in argument order
    hoisted: bool                  # gather reads hmsg[] instead of calling gather_map per edge
    merge_ok: bool                 # the merge-path gather is available (the monoid has an atomic)
    msg_dtype: np.dtype = None
    id_dtype: np.dtype = None
    aggregates: Dict[str, np.dtype] = field(default_factory=dict)
    translated: object = None      # the TranslatedProgram (args layout, pack_args)

    @property
    def key(self):
        return hashlib.sha256(self.source.encode()).hexdigest()

    def numbered_source(self):
        return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(self.source.splitlines()))


#: scatter over the out-edges of a shard's changed vertices (thread per vertex); ``e`` is the
#: edge's global CSR position, ``ebase`` the shard's first one
SCATTER = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
grstream_scatter_$NAME(const long long* __restrict__ indptr, const gr_id_t* __restrict__ nbr$PROPS,
                       long long lo, long long nv, long long ebase,
                       const unsigned char* __restrict__ changed) {
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k >= nv || !changed[k]) return;
  for (long long j = indptr[k]; j < indptr[k + 1]; ++j)
    grstream_scatter(lo + k, (long long)nbr[j], ebase + j$ARGS);
}
""")

#: edge state in a shard's CSC order (out[j] = state[eid[j]]) for gathers over in-edges
PERMUTE = Template(r"""
#define GR_PERMUTE(SIZE, T) \
extern "C" __global__ void __launch_bounds__(GR_BLOCK) \
grstream_permute##SIZE##_$NAME(const long long* __restrict__ eid, const T* __restrict__ state, \
                               T* __restrict__ out, long long ne) { \
  const long long j = (long long)blockIdx.x * GR_BLOCK + threadIdx.x; \
  if (j < ne) out[j] = state[eid[j]]; \
}
GR_PERMUTE(1, unsigned char)
GR_PERMUTE(2, unsigned short)
GR_PERMUTE(4, unsigned int)
GR_PERMUTE(8, unsigned long long)
""")


def skeleton_hash():
    """Hash of the skeleton text: part of every compile-cache key."""
    h = hashlib.sha256()
    for t in (PRELUDE, TWC, KERNELS, GATHER_TWC, GATHER_MERGE, MERGE_BODY, MULTI, HOIST, AGGREGATE_ALL,
              SCATTER, PERMUTE):
        h.update(t.template.encode())
    h.update(repr((BLOCK, WARP_MIN, BLOCK_MIN)).encode())
    return h.hexdigest()


def _c_name(name):
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)


def can_hoist(spec):
    """True when gather_map reads only the source vertex: one message per vertex, not per edge."""
    if not spec.has_gather:
        return False
    uses = getattr(spec.analysis, "gather_uses", None)
    return uses is not None and uses <= {"src"}


def _aggregates(name, aggs):
    """The fused two-pass reduction of every aggregate (``AGGREGATE_ALL``)."""
    tags = list(aggs)
    c = {a: ctype(aggs[a]) for a in tags}
    return AGGREGATE_ALL.substitute(
        NAME=name,
        PARTIAL_PARAMS="".join(f", {c[a]}* __restrict__ p_{a}" for a in tags),
        CPARTIAL_PARAMS="".join(f", const {c[a]}* __restrict__ p_{a}" for a in tags),
        INIT="\n".join(f"  {c[a]} a_{a} = gr_identity_agg_{a}();" for a in tags),
        TERMS="\n".join(f"    a_{a} = gr_combine_agg_{a}(a_{a}, ({c[a]})grstream_aggregate_{a}(v));"
                        for a in tags),
        REDUCE="\n".join(f"  a_{a} = gr_block_reduce_agg_{a}(a_{a});\n"
                         f"  if (threadIdx.x == 0) p_{a}[blockIdx.x] = a_{a};" for a in tags),
        FINAL="\n".join(f"  {{\n    {c[a]} a = gr_identity_agg_{a}();\n"
                        f"    for (int i = threadIdx.x; i < count; i += GR_BLOCK) a = gr_combine_agg_{a}(a, p_{a}[i]);\n"
                        f"    a = gr_block_reduce_agg_{a}(a);\n"
                        f"    if (threadIdx.x == 0) *({c[a]}*)(out + {8 * k}) = a;\n  }}"
                        for k, a in enumerate(tags)))


def generate(translated, spec, id_dtype, edge_dtypes=None, hoist=None):
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

    Returns
    -------
    KernelSource
    """
    edge_dtypes = {k: np.dtype(v) for k, v in (edge_dtypes or {}).items()}
    edge_dtypes.update({k: np.dtype(v) for k, v in spec.edge_state.items()})
    name = _c_name(spec.name)
    msg_dt = np.dtype(spec.gather_dtype)
    id_c = ctype(id_dtype)
    hoist = can_hoist(spec) if hoist is None else (hoist and can_hoist(spec))
    props = list(getattr(translated, "edge_props", {}).get("gather_map", [])) if spec.has_gather else []
    if hoist and props:
        hoist = False
    parts = [translated.source, PRELUDE.substitute(MSG_T=ctype(msg_dt), ID_T=id_c, BLOCK=BLOCK,
                                                   WARP_MIN=WARP_MIN, BLOCK_MIN=BLOCK_MIN)]
    monoid = spec.gather_reduce
    if monoid is not None:
        parts.append(_reducers("msg", ctype(msg_dt), monoid.cuda_combine, c_literal(monoid.identity(msg_dt), msg_dt)))
    else:  # no gather: apply still receives an accumulator (zero, as on the CPU)
        parts.append(_reducers("msg", ctype(msg_dt), "({a})", c_literal(0, msg_dt)))
    for agg, m in spec.aggregates.items():
        dt = spec.aggregate_dtype[agg]
        parts.append(_reducers("agg_" + agg, ctype(dt), m.cuda_combine, c_literal(m.identity(dt), dt)))

    # activation walks the edges of changed vertices; TWC keeps one hub from serialising a warp
    act = TWC.substitute(BID="blockIdx.x", SELECT="changed[k]", BLOCK_BEGIN="", BLOCK_END="", WARP_BEGIN="", WARP_END="",
                         THREAD_BEGIN="", THREAD_END="", EDGE="gr_mark(next, (long long)nbr[j]);")
    parts.append(KERNELS.substitute(NAME=name, ACTIVATE_BODY=act))
    kernels = {"fill": f"grstream_fill_{name}", "apply": f"grstream_apply_{name}",
               "activate": f"grstream_activate_{name}", "count": f"grstream_count_{name}"}

    atomic = monoid.cuda_atomic if monoid is not None else None
    merge_ok = bool(atomic) and atomic in translated.source
    if spec.has_gather:
        prop_params = "".join(f", const {ctype(edge_dtypes.get(p, np.float64))}* __restrict__ e_{p}"
                              for p in props)
        prop_args = "".join(f", e_{p}[j]" for p in props)
        width = tab_width(len(props))
        multi_props = "\n".join(
            f"  const {ctype(edge_dtypes.get(p, np.float64))}* __restrict__ e_{p} = "
            f"(const {ctype(edge_dtypes.get(p, np.float64))}*)row[{2 + k}];" for k, p in enumerate(props))
        directions = ["in", "out"] if spec.gather_edges == "all" else [spec.gather_edges]
        for d in directions:
            if hoist:
                gmap = "hmsg[nbr[j]]" if d == "in" else "hmsg[v]"
            elif d == "in":
                gmap = f"grstream_gather_map((long long)nbr[j], v{prop_args})"
            else:
                gmap = f"grstream_gather_map(v, (long long)nbr[j]{prop_args})"
            store = "acc[kk] = accumulate ? gr_combine_msg(acc[kk], x) : x;"
            twc = dict(
                SELECT="gr_active(frontier, lo + k)", EDGE=f"x = gr_combine_msg(x, {gmap});",
                BLOCK_BEGIN="gr_msg_t x = gr_identity_msg();",
                BLOCK_END=f"x = gr_block_reduce_msg(x);\n    if (threadIdx.x == 0) {store}",
                WARP_BEGIN="gr_msg_t x = gr_identity_msg();",
                WARP_END=f"x = gr_warp_reduce_msg(x);\n    if (lane == 0) {store}",
                THREAD_BEGIN="gr_msg_t x = gr_identity_msg();", THREAD_END=store)
            parts.append(GATHER_TWC.substitute(DIR=d, NAME=name, PROPS=prop_params,
                                               BODY=TWC.substitute(BID="blockIdx.x", **twc)))
            kernels[f"gather_twc_{d}"] = f"grstream_gather_twc_{d}_{name}"
            parts.append(MULTI.substitute(KIND="twc", DIR=d, NAME=name, EXTRA="int accumulate", W=width,
                                          PROPS=multi_props, BODY=TWC.substitute(BID="bid", **twc)))
            kernels[f"gather_twc_multi_{d}"] = f"grstream_gather_twc_multi_{d}_{name}"
            if merge_ok:
                merge = dict(GMAP=gmap, ATOMIC=atomic)
                parts.append(GATHER_MERGE.substitute(DIR=d, NAME=name, PROPS=prop_params,
                                                     BODY=MERGE_BODY.substitute(BID="blockIdx.x", **merge)))
                kernels[f"gather_merge_{d}"] = f"grstream_gather_merge_{d}_{name}"
                parts.append(MULTI.substitute(KIND="merge", DIR=d, NAME=name, EXTRA="long long per_thread",
                                              W=width, PROPS=multi_props,
                                              BODY=MERGE_BODY.substitute(BID="bid", **merge)))
                kernels[f"gather_merge_multi_{d}"] = f"grstream_gather_merge_multi_{d}_{name}"
        if hoist:
            parts.append(HOIST.substitute(NAME=name))
            kernels["hoist"] = f"grstream_hoist_{name}"
    if spec.has_scatter:
        sprops = list(getattr(translated, "edge_props", {}).get("scatter", []))
        parts.append(SCATTER.substitute(
            NAME=name,
            PROPS="".join(f", const {ctype(edge_dtypes.get(p, np.float64))}* __restrict__ e_{p}" for p in sprops),
            ARGS="".join(f", e_{p}[j]" for p in sprops)))
        kernels["scatter"] = f"grstream_scatter_{name}"
    if spec.edge_state:
        parts.append(PERMUTE.substitute(NAME=name))
        for size in (1, 2, 4, 8):
            kernels[f"permute{size}"] = f"grstream_permute{size}_{name}"
    aggs = {a: spec.aggregate_dtype[a] for a in spec.aggregates}
    if aggs:
        parts.append(_aggregates(name, aggs))
        kernels["aggregates"] = f"grstream_aggregates_{name}"
        kernels["aggfinal"] = f"grstream_aggfinal_{name}"
    return KernelSource(source="\n".join(parts), name=name, kernels=kernels, gather_props=props,
                        hoisted=hoist, merge_ok=merge_ok, msg_dtype=msg_dt, id_dtype=np.dtype(id_dtype),
                        aggregates=aggs, translated=translated)
