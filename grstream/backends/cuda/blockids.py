"""Neighbour ids decoded inside the kernels: the device side of compressed stores' id blocks.

A compressed store (docs/FORMAT.md, "Compressed ids") keeps each shard direction's ids as four
arrays (block offsets, reset masks, widths, the packed words) of blocks of 32 consecutive edge
positions. Edge positions do not change, so ``indptr``, the edge properties and every row range
stay as they are; only the read of edge ``j``'s id changes. A module generated for such a store
(:func:`.codegen.generate` with ``id_bits``) takes, where a plain module takes the id array
``nbr``, a ``gr_ids_t`` of the four part pointers (:class:`IdsArg`: one C struct parameter, four
pointers in the launch), and every edge walk reads its ids in one of three ways:

``gr_warp_id(nbr, b, lane)``  the whole warp decodes block ``b``, lane ``k`` edge ``32 b + k``
                              (one field per lane, a shuffle scan of the differences): the warp
                              and block phases of the thread/warp/block walks and the hub kernels
                              walk their rows block by block from the block holding the row's
                              first edge, lanes outside the row idle (:data:`LOOPS`).
``gr_at(nbr, cur, j)``        a thread's cursor: edge ``j`` from the last reset at or before it
                              (a seek), then one field per following edge (the thread phase, the
                              merge split's edge ranges, scatter, a seed's marks).

Importable without PyCUDA.
"""
from dataclasses import dataclass
from string import Template

from .kernelargs import VectorArg, _is_integer

#: the device decoder; $ID_BITS: the store's bits per whole id (codec.id_bits)
PRELUDE = r"""
// ---------------- compressed ids (grstream/backends/cuda/blockids.py) ----------------
#define GR_ID_BITS $ID_BITS
#ifdef __CUDA_ARCH__
#define GR_POPC(x) __popc(x)
#define GR_LAST(x) (31 - __clz(x))
#else
#define GR_POPC(x) __builtin_popcount(x)
#define GR_LAST(x) (31 - __builtin_clz(x))
#endif
struct gr_ids_t { const unsigned* off; const unsigned* mask; const unsigned char* wid; const unsigned* words; };
// differences within a block sum below 2**32 when ids fit 32 bits (modular sums stay exact)
#if GR_ID_BITS <= 32
typedef unsigned gr_sum_t;
#else
typedef unsigned long long gr_sum_t;
#endif
// the n (0..32) bits of the stream w from bit `bit`; reads no word past the field
__host__ __device__ __forceinline__ unsigned long long gr_bits(const unsigned* w, long long bit, int n) {
  if (n == 0) return 0ULL;
  const long long i = bit >> 5;
  const int s = (int)(bit & 31);
  unsigned long long v = (unsigned long long)w[i] >> s;
  if (s + n > 32) v |= (unsigned long long)w[i + 1] << (32 - s);
  return v & ((1ULL << n) - 1ULL);
}
// a whole id (GR_ID_BITS bits) from bit `bit`
__host__ __device__ __forceinline__ long long gr_whole(const unsigned* w, long long bit) {
#if GR_ID_BITS <= 32
  return (long long)gr_bits(w, bit, GR_ID_BITS);
#else
  return (long long)(gr_bits(w, bit, 32) | (gr_bits(w, bit + 32, GR_ID_BITS - 32) << 32));
#endif
}
// every lane of the warp calls it for block b; lane k gets the id of edge 32 b + k
__device__ __forceinline__ long long gr_warp_id(const gr_ids_t& ids, long long b, int lane) {
  const unsigned* w = ids.words + ids.off[b];
  const unsigned m = ids.mask[b];
  const int wd = ids.wid[b], r = GR_POPC(m), q = GR_POPC(m & ((1u << lane) - 1u));
  const bool reset = (m >> lane) & 1u;
#if GR_ID_BITS <= 32
  // 32-bit arithmetic throughout: a field lies within its block's stream (under 2048 bits), and
  // ids, their differences and the sums of these fit 32 bits
  const int bit = reset ? q * GR_ID_BITS : r * GR_ID_BITS + (lane - q) * wd, nb = reset ? GR_ID_BITS : wd;
  unsigned v = 0u;
  if (nb) {   // (no read for a 0-bit field: it may lie past the stream's last word)
    const int s = bit & 31;
    v = w[bit >> 5] >> s;
    if (s + nb > 32) v |= w[(bit >> 5) + 1] << (32 - s);
    if (nb < 32) v &= (1u << nb) - 1u;
  }
  unsigned sum = reset ? 0u : v;   // inclusive scan of the differences
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned y = __shfl_up_sync(0xffffffffu, sum, o);
    if (lane >= o) sum += y;
  }
  const int s = GR_LAST(m & (0xffffffffu >> (31 - lane)));   // the last reset at or before lane
  return (long long)(__shfl_sync(0xffffffffu, v, s) + (sum - __shfl_sync(0xffffffffu, sum, s)));
#else
  const long long v = reset ? gr_whole(w, (long long)q * GR_ID_BITS)
                            : (long long)gr_bits(w, (long long)r * GR_ID_BITS + (long long)(lane - q) * wd, wd);
  gr_sum_t sum = reset ? (gr_sum_t)0 : (gr_sum_t)v;   // inclusive scan of the differences
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const gr_sum_t y = __shfl_up_sync(0xffffffffu, sum, o);
    if (lane >= o) sum += y;
  }
  const int s = GR_LAST(m & (0xffffffffu >> (31 - lane)));   // the last reset at or before lane
  const long long base = __shfl_sync(0xffffffffu, v, s);
  const gr_sum_t at = __shfl_sync(0xffffffffu, sum, s);
  return base + (long long)(gr_sum_t)(sum - at);
#endif
}
// a thread's position in one id array: the id of edge j and its block's header
struct gr_cursor { long long j, id; const unsigned* w; unsigned m; int wd, r; };
__host__ __device__ __forceinline__ gr_cursor gr_cursor_none() {
  gr_cursor c; c.j = -2; c.id = 0; c.w = 0; c.m = 0u; c.wd = 0; c.r = 0; return c;
}
// edge j from its block alone: the last reset at or before it, then the differences after it
__host__ __device__ __forceinline__ void gr_seek(const gr_ids_t& ids, gr_cursor& c, long long j) {
  const long long b = j >> 5;
  const int k = (int)(j & 31);
  c.w = ids.words + ids.off[b];
  c.m = ids.mask[b];
  c.wd = ids.wid[b];
  c.r = GR_POPC(c.m);
  const unsigned upto = c.m & (0xffffffffu >> (31 - k));
  const int s = GR_LAST(upto), qs = GR_POPC(upto) - 1;
  long long id = gr_whole(c.w, (long long)qs * GR_ID_BITS);
  long long bit = (long long)c.r * GR_ID_BITS + (long long)(s - qs) * c.wd;
  for (int l = s + 1; l <= k; ++l, bit += c.wd) id += (long long)gr_bits(c.w, bit, c.wd);
  c.j = j;
  c.id = id;
}
// the id of edge j: one field after edge j - 1 of the same block, else a seek
__host__ __device__ __forceinline__ long long gr_at(const gr_ids_t& ids, gr_cursor& c, long long j) {
  if (j == c.j) return c.id;
  const int k = (int)(j & 31);
  if (j != c.j + 1 || k == 0) {
    gr_seek(ids, c, j);
    return c.id;
  }
  const int q = GR_POPC(c.m & ((1u << k) - 1u));
  if ((c.m >> k) & 1u) c.id = gr_whole(c.w, (long long)q * GR_ID_BITS);
  else c.id += (long long)gr_bits(c.w, (long long)c.r * GR_ID_BITS + (long long)(k - q) * c.wd, c.wd);
  c.j = j;
  return c.id;
}
// the ids of a multi-shard table row from its column `at` on (4 pointers)
__device__ __forceinline__ gr_ids_t gr_ids_row(const long long* at) {
  gr_ids_t ids;
  ids.off = (const unsigned*)at[0]; ids.mask = (const unsigned*)at[1];
  ids.wid = (const unsigned char*)at[2]; ids.words = (const unsigned*)at[3];
  return ids;
}
"""

#: the edge loops of the walks, per id layout (False: plain ids, True: compressed blocks).
#: ``WARP`` / ``BLOCK`` walk [b, e) with a warp / the whole block, ``THREAD`` walks [beg, end)
#: with one thread; ``CURSOR`` declares what ``NID`` (edge j's id, in any thread-sequential loop)
#: reads from; every loop gives its body ``j`` and ``nid`` (edge j's id) and runs ``$EDGE``.
#: The plain warp and block loops begin as zerocopy.py expects them.
LOOPS = {
    False: dict(
        WARP_LOOP="for (long long j = b + lane; j < e; j += 32) { const long long nid = (long long)nbr[j]; $EDGE }",
        BLOCK_LOOP="for (long long j = b + threadIdx.x; j < e; j += GR_BLOCK) { const long long nid = (long long)nbr[j]; $EDGE }",
        THREAD_LOOP="for (long long j = beg; j < end; ++j) { const long long nid = (long long)nbr[j]; $EDGE }",
        CURSOR="", NID="(long long)nbr[j]"),
    True: dict(
        WARP_LOOP=("for (long long j0 = b & ~31LL; j0 < e; j0 += 32) {\n"
                   "      const long long j = j0 + lane, nid = gr_warp_id(nbr, j0 >> 5, lane);\n"
                   "      if (j >= b && j < e) { $EDGE }\n    }"),
        BLOCK_LOOP=("for (long long j0 = (b & ~31LL) + (threadIdx.x & ~31); j0 < e; j0 += GR_BLOCK) {\n"
                    "      const long long j = j0 + (threadIdx.x & 31), nid = gr_warp_id(nbr, j0 >> 5, threadIdx.x & 31);\n"
                    "      if (j >= b && j < e) { $EDGE }\n    }"),
        THREAD_LOOP=("gr_cursor gr_c = gr_cursor_none();\n"
                     "    for (long long j = beg; j < end; ++j) { const long long nid = gr_at(nbr, gr_c, j); $EDGE }"),
        CURSOR="gr_cursor gr_c = gr_cursor_none();", NID="gr_at(nbr, gr_c, j)"),
}


#: edges per thread of the compressed merge split (its warps' runs: 1024 edges), the default of
#: the ``merge_items`` option over compressed ids (docs/BENCHMARKS.md, "Measured constants")
MERGE_WARP_ITEMS = 32

#: the row search of the warps' walks over runs of edges (:data:`MERGE_WARP`,
#: push_kernels.PUSH_MERGE): for the 32 edges from ``j0`` (the warp's current block; ``c1`` the
#: run's end, ``base`` a row starting at or before ``j0``), ``er``: lane's edge's row
ROW_SEARCH = r"""    // edge j's row (past the run's end: the run's last edge's): base + the rows after base that
    // end at or before it, counted among 32 row ends a round (ends as offsets from j0, in 0..64)
    const int top = (int)min(c1 - 1 - j0, 31LL), at = min(lane, top);   // (top: the last lane's)
    long long er = -1;
    for (long long rb = base;; rb += 32) {
      const long long ix = rb + 1 + lane;
      const long long e = ix <= nv ? indptr[ix] : j0 + 64;
      const int d = (int)max(min(e - j0, 64LL), 0LL);
      if (__shfl_sync(GR_FULL, d, 0) > top) {   // row rb holds the rest of the block (long rows)
        if (er < 0) er = rb;
        break;
      }
      int cnt = 0;
#pragma unroll
      for (int s = 16; s > 0; s >>= 1)
        if (__shfl_sync(GR_FULL, d, cnt + s - 1) <= at) cnt += s;
      const int d31 = __shfl_sync(GR_FULL, d, 31);
      if (cnt == 31 && d31 <= at) cnt = 32;
      if (er < 0 && cnt < 32) er = rb + cnt;
      // the 32nd row ends past the last lane's edge: every lane has its row (a partial last
      // block stops there, not after the empty rows that may follow the shard's last edge)
      if (d31 > top) break;
    }"""

#: the merge split (skeletons.MERGE_BODY's edge ranges: thread ``t`` of the launch owns edges
#: ``[t per_thread, (t + 1) per_thread)``) over compressed ids, walked by warps: a warp's 32
#: ranges are one run of ``32 per_thread`` edges that starts at an id block, so the warp decodes
#: it block by block (``gr_warp_id``: lane ``k`` edge ``32 b + k``, every id read coalesced, one
#: header a block) instead of 32 cursors each seeking into a block of its own. Lane ``k`` finds
#: its edge's row among the next 32 row ends (``indptr``, one coalesced read a round, a search
#: over the lanes by shuffles: the rows after ``base`` that end at or before the edge), the lanes
#: combine their messages by row (a segmented shuffle scan) and the last lane of each row writes:
#: a plain combine where the row lies inside the warp's run, the monoid's atomic where the run
#: cuts it. A row that goes on into the next block of the run is carried there in registers.
#: Slots: $BID, $GMAP (edge j's message: nid, v, j), $ATOMIC; it follows the block's row search
#: (``s_rows``, skeletons.MERGE_ROWS: skeletons.merge_body).
MERGE_WARP = Template(Template(r"""
  const int lane = threadIdx.x & 31;
  const long long c0 = ((long long)($BID) * GR_BLOCK + (threadIdx.x & ~31)) * per_thread;
  if (c0 >= ne) return;   // (the whole warp: c0 is the warp's)
  const long long c1 = min(c0 + 32 * per_thread, ne);
  long long base;         // a row starting at or before the current block's first edge
  {
    long long a = s_rows[0], b = s_rows[1];
    while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= c0) a = mid; else b = mid - 1; }
    base = a;
  }
  gr_msg_t carry = gr_identity_msg();
  long long carry_row = -1;
  for (long long j0 = c0; j0 < c1; j0 += 32) {
    const long long j = j0 + lane;
    const bool in = j < c1;
    const long long nid = gr_warp_id(nbr, j0 >> 5, lane);
$ROW_SEARCH
    const long long v = lo + er;
    gr_msg_t x = gr_identity_msg();
    if (in && gr_active(frontier, v)) x = (gr_msg_t)($GMAP);
    if (lane == 0 && er == carry_row) x = gr_combine_msg(carry, x);
    // combine by row: rows ascend over the lanes, so a segment is a run of lanes
    const long long r0 = __shfl_sync(GR_FULL, er, 0), last = __shfl_sync(GR_FULL, er, 31);
    int rel = 0, next = 0;
    if (r0 == last) {   // one row (long rows): a reduction, its result in every lane
      x = (gr_msg_t)__shfl_sync(GR_FULL, gr_warp_reduce_msg(x), 0);
    } else {
      rel = (int)(er - r0);
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const gr_msg_t y = (gr_msg_t)__shfl_up_sync(GR_FULL, x, o);
        const int ry = __shfl_up_sync(GR_FULL, rel, o);
        if (lane >= o && ry == rel) x = gr_combine_msg(y, x);
      }
      next = __shfl_down_sync(GR_FULL, rel, 1);
    }
    // the last lane's row goes on in the run's next block: carried, written there
    const bool goes_on = j0 + 32 < c1 && indptr[last + 1] > j0 + 32;
    if ((lane == 31 ? !goes_on : next != rel) && gr_active(frontier, v)) {
      if (indptr[er] >= c0 && indptr[er + 1] <= c1) acc[er] = gr_combine_msg(acc[er], x);  // the warp's own row
      else $ATOMIC(&acc[er], x);
    }
    carry = (gr_msg_t)__shfl_sync(GR_FULL, x, 31);
    carry_row = goes_on ? last : -1;
    base = last;
  }
""").safe_substitute(ROW_SEARCH=ROW_SEARCH))


def loops(compressed):
    """The loop slots of :data:`LOOPS` for plain (False) or compressed (True) ids."""
    return LOOPS[bool(compressed)]


def prelude(id_bits):
    """The decoder's C source for ids of ``id_bits`` bits (grstream.store.codec.id_bits)."""
    if not 1 <= int(id_bits) <= 63:
        raise ValueError(f"compressed ids of {id_bits} bits")
    return Template(PRELUDE).substitute(ID_BITS=int(id_bits))


@dataclass(frozen=True)
class IdsArg:
    """A compressed id array parameter: ``gr_ids_t name`` in C, four device addresses (the
    parts of grstream.store.codec.PARTS in its order: offsets, masks, widths, words; as a
    tuple) in a launch; an all-zero tuple is the null array."""

    name: str
    struct_char = "PPPP"
    parts = 4
    ctype = "gr_ids_t"

    def declarator(self):
        return f"gr_ids_t {self.name}"

    def convert(self, value):
        if value is None or (_is_integer(value) and int(value) == 0):
            return (0,) * self.parts
        if not isinstance(value, tuple) or len(value) != self.parts:
            raise TypeError(f"a tuple of {self.parts} device addresses (offsets, masks, widths, words)")
        convert = _POINTER.convert
        return (convert(value[0]), convert(value[1]), convert(value[2]), convert(value[3]))


#: the check of each part's address (a device pointer's)
_POINTER = VectorArg("unsigned", "part")
