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


def loops(compressed):
    """The loop slots of :data:`LOOPS` for plain (False) or compressed (True) ids."""
    return LOOPS[bool(compressed)]


def prelude(id_bits):
    """The decoder's C source for ids of ``id_bits`` bits (grstream.store.codec.id_bits)."""
    from string import Template
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
        return tuple(_POINTER.convert(v) for v in value)


#: the check of each part's address (a device pointer's)
_POINTER = VectorArg("unsigned", "part")
