"""CUDA kernel skeletons with named slots, filled from a translated GAS program (by :mod:`.codegen`).

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
``mark``                  sets the frontier bit of a range of neighbour ids (a seed vertex's edges).
``aggregates`` + ``aggfinal``  every aggregate in one two-pass block reduction (deterministic
                          order), results 8 bytes apart in one buffer.
``apply_agg``             a dense apply over every vertex fused with the first pass of
                          ``aggregates`` (programs with aggregates): each vertex's terms are taken
                          from the state its apply just wrote (``grstream_aggnext_<name>``), in
                          the grid-stride order of ``aggregates``; ``aggfinal`` follows.

Every kernel is ``KERNEL`` around one body: its parameter list comes from the kernel's
:class:`~.kernelargs.KernelArgs` (:mod:`.codegen`), never from the template text.

The "in" variants read the shard's CSC (``in/indptr``, ``in/src``): the owning vertex is the
destination. The "out" variants read its CSR (``out/indptr``, ``out/dst``): the owner is the source.
"""
import hashlib
from string import Template

import numpy as np

from .blockids import LOOPS, MERGE_WARP, PRELUDE as IDS_PRELUDE, IdsArg, loops
from .kernelargs import ctype

BLOCK = 256          # threads per block of every kernel
WARP_MIN = 32        # a destination with at least this many edges is reduced by a warp
BLOCK_MIN = 1024     # ... and with at least this many by a whole block
#: edges per thread of the merge-path split (docs/BENCHMARKS.md, "Measured constants")
MERGE_PER_THREAD = 8
AGG_BLOCKS = 1024    # blocks of the first aggregate pass (fixed: the reduction order is too)


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
// Adds every thread's x into *counter with one atomic per block (every thread of the block must
// call it): a counter taking an atomic per warp serialises hundreds of thousands of them on one
// address in a dense pass (an RMAT-24 BFS level pushed: 524,288 warps)
__device__ __forceinline__ void gr_block_count(unsigned long long* counter, unsigned long long x) {
  __shared__ unsigned long long s_count;
  for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(GR_FULL, x, o);
  if (threadIdx.x == 0) s_count = 0ULL;
  __syncthreads();
  if ((threadIdx.x & 31) == 0 && x) atomicAdd(&s_count, x);
  __syncthreads();
  if (threadIdx.x == 0 && s_count) atomicAdd(counter, s_count);
}
""")

#: the declarations every thread/warp/block walk starts with (the gathers', the activation's and
#: push_kernels.PUSH_TWC's): thread ``k`` of the launch, its lane
TWC_HEAD = r"""
  __shared__ long long s_job[3];
  __shared__ int s_owner;
  const long long k = (long long)($BID) * GR_BLOCK + threadIdx.x;
  const int lane = threadIdx.x & 31;
"""

#: the walk's three phases over the rows whose thread holds ``todo`` and the row's edge range
#: [beg, end): $ROW names the row inside the shard (``k`` here; the push kernels select another);
#: per phase BEGIN/EDGE/END code, EDGE sees j (edge index), nid (edge j's neighbour id), v (owning
#: vertex id) and kk (its row); the $*_LOOP slots are the id layout's loops (:func:`walk`)
TWC_PHASES = r"""
  // block phase: one large vertex at a time, every thread strides over its edges
  while (true) {
    if (threadIdx.x == 0) s_owner = -1;
    __syncthreads();
    if (todo && end - beg >= GR_BLOCK_MIN) s_owner = threadIdx.x;
    __syncthreads();
    const int owner = s_owner;
    if (owner < 0) break;
    if (threadIdx.x == owner) { s_job[0] = beg; s_job[1] = end; s_job[2] = $ROW; todo = false; }
    __syncthreads();
    const long long b = s_job[0], e = s_job[1], kk = s_job[2], v = lo + kk;
    (void)kk; (void)v;
    $BLOCK_BEGIN
    $BLOCK_LOOP
    $BLOCK_END
  }
  // warp phase: medium vertices, one warp each
  while (true) {
    const unsigned m = __ballot_sync(GR_FULL, todo && end - beg >= GR_WARP_MIN);
    if (m == 0) break;
    const int leader = __ffs(m) - 1;
    const long long b = __shfl_sync(GR_FULL, beg, leader), e = __shfl_sync(GR_FULL, end, leader);
    const long long kk = __shfl_sync(GR_FULL, $ROW, leader), v = lo + kk;
    if (lane == leader) todo = false;
    (void)kk; (void)v;
    $WARP_BEGIN
    $WARP_LOOP
    $WARP_END
  }
  // thread phase: small vertices, one thread each
  if (todo) {
    const long long kk = $ROW, v = lo + $ROW;
    (void)kk; (void)v;
    $THREAD_BEGIN
    $THREAD_LOOP
    $THREAD_END
  }
"""

# Thread/warp/block mapping over the edges of selected vertices. Slots: SELECT (bool expression in k),
# and per phase BEGIN/EDGE/END code; EDGE sees j (edge index) and v (owning vertex id).
TWC = Template(TWC_HEAD + r"""  long long beg = 0, end = 0;
  bool todo = false;
  if (k < nv && ($SELECT)) { beg = indptr[k]; end = indptr[k + 1]; todo = true; }"""
               + Template(TWC_PHASES).safe_substitute(ROW="k"))

#: every kernel: the parameter list comes from its KernelArgs descriptor
KERNEL = Template(r"""
extern "C" __global__ void __launch_bounds__(GR_BLOCK)
$KNAME($PARAMS) {
$BODY
}
""")

FILL_BODY = r"""
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k < nv) acc[k] = gr_identity_msg();
"""

APPLY_BODY = r"""
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  bool ch = false;
  unsigned long long edges = 0, pushed = 0;
  if (k < nv) {
    if (gr_active(frontier, lo + k)) {
      ch = grstream_apply(lo + k, acc ? acc[k] : (gr_msg_t)0);
      if (ptr_a) edges += (unsigned long long)(ptr_a[k + 1] - ptr_a[k]);
      if (ptr_b) edges += (unsigned long long)(ptr_b[k + 1] - ptr_b[k]);
      if (ch && chg_next) gr_mark(chg_next, lo + k);   // the changed set a push plan walks next
      if (ch && pdeg) pushed = pdeg[lo + k];           // ... and the edges it would walk
    }
    if (changed) changed[k] = ch;
  }
  const int c = __syncthreads_count(ch);
  gr_block_count(counters + 1, edges);
  gr_block_count(counters + 2, pushed);
  if (threadIdx.x == 0 && c) atomicAdd(&counters[0], (unsigned long long)c);
"""

#: seeding: marks the neighbours ``nbr[first .. first + count)`` of one seed vertex, a thread per
#: edge (a hub's edges spread over the whole grid instead of one block)
MARK_BODY = Template(r"""
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k < count) {
    const long long j = first + k;
    $CURSOR
    gr_mark(next, $NID);
  }
""")

COUNT_BODY = r"""
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
"""

#: the merge split's first step: the rows of the block's first and last edge (``s_rows``), one
#: search per block that narrows every thread's (or warp's) search to the block's rows
MERGE_ROWS = r"""
  __shared__ long long s_rows[2];
  if (threadIdx.x < 2) {
    long long key = (long long)($BID) * GR_BLOCK * per_thread;
    if (threadIdx.x == 1) key = min(key + (long long)GR_BLOCK * per_thread, ne) - 1;
    long long a = 0, b = nv - 1;  // the last row starting at or before key
    while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= key) a = mid; else b = mid - 1; }
    s_rows[threadIdx.x] = a;
  }
  __syncthreads();
"""

MERGE_BODY = Template(MERGE_ROWS + r"""
  const long long t = (long long)($BID) * GR_BLOCK + threadIdx.x;
  const long long c0 = t * per_thread;
  if (c0 >= ne) return;
  const long long c1 = min(c0 + per_thread, ne);
  long long a = s_rows[0], b = s_rows[1];
  while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= c0) a = mid; else b = mid - 1; }
  long long r = a;
  long long j = c0;
  $CURSOR
  while (j < c1) {
    const long long rb = indptr[r], re = indptr[r + 1];
    const long long stop = re < c1 ? re : c1;
    const long long v = lo + r;
    if (stop > j && gr_active(frontier, v)) {
      gr_msg_t x = gr_identity_msg();
      for (; j < stop; ++j) { const long long nid = $NID; x = gr_combine_msg(x, $GMAP); }
      if (rb >= c0 && re <= c1) acc[r] = gr_combine_msg(acc[r], x);  // this thread owns the row
      else $ATOMIC(&acc[r], x);
    }
    j = stop;
    ++r;
  }
""")

def merge_body(compressed):
    """The merge split's kernel body (slots $BID, $GMAP, $ATOMIC, $CURSOR, $NID): the threads'
    walks of :data:`MERGE_BODY`, or over compressed ids the warps' (blockids.MERGE_WARP)."""
    return Template(MERGE_ROWS + MERGE_WARP.template) if compressed else MERGE_BODY


# Several resident shards in one launch: ``tab`` holds a row of tab_width(P, I) longs per shard
# (indptr, the I columns of neighbour ids -- one array, or a compressed array's four parts --, P
# edge-property arrays, lo, nv, ne, first block); each block finds its shard by binary search over
# the first-block column and runs the per-shard body unchanged. $IDS declares ``nbr`` from row + 1
# (:data:`MULTI_IDS`).
MULTI_BODY = Template(r"""
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
  $IDS
$PROPS
  const long long lo = row[$W - 4], nv = row[$W - 3], ne = row[$W - 2];
  const long long bid = (long long)blockIdx.x - row[$W - 1];
  $LOCALS
  (void)ne;
$BODY
""")


#: the declaration of a table row's neighbour ids (row + 1 on), per id layout (compressed or not)
MULTI_IDS = {False: "const gr_id_t* __restrict__ nbr = (const gr_id_t*)row[1];",
             True: "const gr_ids_t nbr = gr_ids_row(row + 1);"}


def id_columns(compressed):
    """Table columns (and launch pointers) of one id array: 1, or a compressed array's 4 parts."""
    return IdsArg.parts if compressed else 1


def tab_width(num_props, compressed=False):
    """Longs per shard row of a multi-shard gather's table."""
    return 5 + id_columns(compressed) + int(num_props)


def walk(template, compressed):
    """``template`` (a Template with the $*_LOOP slots of the walks) with the edge loops of the
    id layout filled in (blockids.LOOPS), as a Template of the remaining slots ($EDGE ...)."""
    return Template(template.safe_substitute(**loops(compressed)))


HOIST_BODY = r"""
  const long long u = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (u < n) hmsg[u] = grstream_gather_map(u, u);
"""

# Every aggregate in one pass over the vertices, then one block combining the partials: a program
# with A aggregates costs two launches, not 2A. Results land 8 bytes apart in ``out``.
AGGREGATE_BODY = Template(r"""
$INIT
  for (long long v = (long long)blockIdx.x * GR_BLOCK + threadIdx.x; v < n; v += (long long)gridDim.x * GR_BLOCK) {
$TERMS
  }
$REDUCE
""")

# A dense apply and the aggregates' first pass in one pass over the vertices: the vertex state is
# read once, not once to apply and again (published) to reduce. The grid-stride loop is that of
# AGGREGATE_BODY, so a grid of the same size combines the terms in the same order; changed
# vertices are counted as APPLY_BODY counts them (counters[0]). Not unrolled: apply's stores may
# alias the next vertex's loads (the state's pointers are not restrict), so an unrolled loop gains
# no reads in flight, and its registers would cost resident threads.
APPLY_AGG_BODY = Template(r"""
$INIT
  unsigned long long ch = 0;
#pragma unroll 1
  for (long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x; k < nv; k += (long long)gridDim.x * GR_BLOCK) {
    const long long v = lo + k;
    if (grstream_apply(v, acc ? acc[k] : (gr_msg_t)0)) ++ch;
$TERMS
  }
  gr_block_count(counters, ch);
$REDUCE
""")

#: scatter over the out-edges of a shard's changed vertices (thread per vertex); ``e`` is the
#: edge's global CSR position, ``ebase`` the shard's first one
SCATTER_BODY = Template(r"""
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k >= nv || !changed[k]) return;
  $CURSOR
  for (long long j = indptr[k]; j < indptr[k + 1]; ++j)
    grstream_scatter(lo + k, $NID, ebase + j$ARGS);
""")

#: edge state in a shard's CSC order (out[j] = state[eid[j]]) for gathers over in-edges
PERMUTE_BODY = r"""
  const long long j = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (j < ne) out[j] = state[eid[j]];
"""

#: one value in every entry of a vertex field (its bits, ``out``'s width): a declared initial state
CONSTANT_BODY = r"""
  const long long k = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  if (k < n) out[k] = bits;
"""


def skeleton_hash():
    """Hash of the skeleton text: part of every compile-cache key."""
    from . import push_kernels as pk
    h = hashlib.sha256()
    for t in (pk.PUSH_TWC, pk.PUSH_EDGE, pk.PUSH_MERGE, pk.PUSH_APPLY_ONE, pk.PUSH_APPLY_BITMAP):
        h.update(t.template.encode())
    for body in (pk.PUSH_PRELUDE, pk.PUSH_APPLY_TAIL, pk.QUEUE_START_BODY, pk.COMPACT_BODY,
                 pk.SELECT_BITMAP, pk.SELECT_QUEUE, pk.SKIP_IDEMPOTENT):
        h.update(body.encode())
    for t in (PRELUDE, TWC, KERNEL, MERGE_BODY, MULTI_BODY, AGGREGATE_BODY, APPLY_AGG_BODY, SCATTER_BODY,
              MARK_BODY, pk.PUSH_HUBS_BLOCKS):
        h.update(t.template.encode())
    h.update(repr((LOOPS, MULTI_IDS, IDS_PRELUDE, MERGE_WARP.template, pk.MERGE_NID)).encode())
    for body in (FILL_BODY, APPLY_BODY, COUNT_BODY, HOIST_BODY, PERMUTE_BODY, CONSTANT_BODY):
        h.update(body.encode())
    h.update(repr((BLOCK, WARP_MIN, BLOCK_MIN)).encode())
    return h.hexdigest()
