"""Kernel skeletons of push iterations, spliced by :mod:`.codegen` like :mod:`.skeletons`.

A push plan walks the edges of the vertices that changed in the previous iteration from the
source side and combines each message into the receiving vertex's slot of a per-vertex
accumulator with the gather monoid's atomic (the translator's prelude: native atomicMin / Max /
Add or a compare-and-swap loop); a vertex that receives a message is *touched*. One apply over
the touched vertices follows, which writes the next changed set. Kernels (``grstream_<phase>_<program>``):

``push_{bitmap,queue}_{out,in}``  walk the changed vertices of one shard: ``bitmap`` tests every
                        vertex of the shard's interval in the changed bitmap, ``queue`` reads the
                        shard's segment of the compacted changed queue (no scan of the interval).
                        ``out`` walks the CSR (out-edges: message ``gather_map(u, w)`` to the
                        destination w; programs gathering over in-edges), ``in`` the CSC
                        (in-edges: ``gather_map(w, u)`` to the source w; programs gathering over
                        out-edges). Thread / warp / block mapping by degree as the TWC gather, so a
                        hub does not serialise a warp. Rows of ``huge_min`` edges or more
                        (``huge_min`` > 0) skip the walk: they are appended to the hub list
                        (``hubs``: a counter, then (vertex, beg, end, table row) per row) for
                        push_hubs.
``push_multi_bitmap_{out,in}``  the bitmap kernel over several shards whose arrays stay put
                        (resident, or read in place from mapped host memory) in one launch, driven
                        by a table of shard rows as the multi-shard gathers are
                        (skeletons.MULTI_BODY): one launch per plan unit instead of one per shard.
``push_hubs_{out,in}``  launched right after a push kernel on the same stream, a fixed grid that
                        strides over the listed rows' edges as one range (row by row),
                        so that a shard holding hundreds of hubs (RMAT's low ids) spreads them
                        over the whole GPU instead of walking them one per block in turn (the TWC
                        block phase). Same EDGE code as the push kernels; order is irrelevant to
                        the monoid atomics, so the results are the same. ``push_hubs_multi``
                        finds each row's arrays in the table of the multi launch that listed it.
``push_merge_{out,in}``  the edge-balanced walk (strategy ``"merge"`` of a push unit's shard): the
                        grid covers the shard's edges, not its rows, so that a shard whose changed
                        rows hold most of its edges (a dense level) or whose rows are long side by
                        side (a degree-ordered store's first shards, which the thread/warp/block
                        walk runs on a few blocks) keeps the whole GPU busy. A warp walks a run of
                        ``32 per_thread`` edges from an id block's first, 32 at a time: each lane
                        finds its edge's row by a shuffle search over the next 32 row ends (as
                        the compressed merge split does, blockids.MERGE_WARP), the warp skips
                        the 32 edges where no lane's row changed and otherwise reads their ids
                        together (compressed: decodes the block, ``gr_warp_id``; every read
                        coalesced, also of mapped host memory), and every edge of a changed row
                        sends its message. ``push_merge_multi`` runs it over a table of shards.
``push_apply``          apply over the touched vertices, a warp per 32 words of the touched bitmap
                        (whatever the frontier format: a touched queue cost more than it saved,
                        its appends contending on one counter). It resets the slot to the
                        identity and clears the touched bits, so the next push starts clean
                        without an O(n) fill; changed vertices go into the next frontier and the
                        next changed bitmap; counts changed vertices and the edges a push from
                        them walks (``pdeg``: the degree sum over the push directions).
``queue_start``         exclusive scan of the changed vertices per shard into the queue cursors.
``compact``             changed bitmap -> changed queue, one segment per shard (warp-aggregated
                        atomic append on the shard's cursor).
``activate_bits``       the activation kernel selecting by a bitmap instead of per-interval flags:
                        an activation plan over the previous iteration's changed set.
"""
from string import Template

from .blockids import ROW_SEARCH
from .skeletons import TWC_HEAD, TWC_PHASES

#: rows the hub list holds (a push kernel leaves the rest in its block phase): 96 KiB of device
#: memory; RMAT-24 has about 33,000 rows of 8192 edges or more in all, far fewer per shard
HUB_CAP = 4096
#: push_apply goes a lane per vertex in warps whose non-empty touched words hold this many bits on
#: average (8 of 32 bits: a lane per vertex then reads 8-byte fields in a quarter of the sectors)
DENSE_WORD = 8

#: the push prelude: touching a vertex (read the bit first: most touches are repeats)
PUSH_PRELUDE = Template(r"""
// ---------------- push helpers (grstream/backends/cuda/push_kernels.py) ----------------
#define GR_HUB_CAP ${HUB_CAP}ULL
#define GR_DENSE_WORD ${DENSE_WORD}   // push_apply: bits per non-empty word from which a warp goes a lane per vertex
__device__ __forceinline__ void gr_touch(unsigned* t, long long w) {
  const unsigned bit = 1u << (w & 31);
  if (!(t[w >> 5] & bit)) atomicOr(t + (w >> 5), bit);
}
""").substitute(HUB_CAP=HUB_CAP, DENSE_WORD=DENSE_WORD)

# Thread/warp/block mapping over the edges of the selected rows of one shard: the TWC walk of
# skeletons.py (its head and phases) over row ``r`` instead of ``k``. SELECT sets ``r`` (the row
# inside the shard) and ``todo`` for thread ``k``; EDGE sees j (edge index) and u (the row's vertex
# id). Edges walked are counted into counters[1], one atomic per block (gr_block_count).
_PUSH_SELECT = r"""  long long beg = 0, end = 0, r = 0;
  bool todo = false;
  $SELECT
  if (todo) { beg = indptr[r]; end = indptr[r + 1]; todo = end > beg; }
  gr_block_count(counters + 1, todo ? (unsigned long long)(end - beg) : 0ULL);
  // huge rows go to the hub list (push_hubs walks them with the whole grid); a full list leaves
  // the rest to the block phase, so the list's size bounds memory, never correctness
  if (todo && huge_min > 0 && end - beg >= huge_min) {
    const unsigned long long at = atomicAdd((unsigned long long*)hubs, 1ULL);
    if (at < GR_HUB_CAP) {
      hubs[1 + 4 * at] = lo + r; hubs[2 + 4 * at] = beg; hubs[3 + 4 * at] = end; hubs[4 + 4 * at] = $HUB_ROW;
      todo = false;
    }
  }"""
_SOURCE_VERTEX = "const long long u = v;"
#: slots: BID (the block's index within its shard), HUB_ROW (the shard's row in the launch's table,
#: recorded with each hub row; 0 for a one-shard launch), SELECT, EDGE
PUSH_TWC_BODY = Template(TWC_HEAD + _PUSH_SELECT + Template(TWC_PHASES).safe_substitute(
    ROW="r", BLOCK_BEGIN=_SOURCE_VERTEX, WARP_BEGIN=_SOURCE_VERTEX, THREAD_BEGIN=_SOURCE_VERTEX,
    WARP_END="", THREAD_END="", BLOCK_END="__syncthreads();   // s_job is rewritten by the next round"))
#: one shard per launch (its arrays are parameters)
PUSH_TWC = Template(PUSH_TWC_BODY.safe_substitute(BID="blockIdx.x", HUB_ROW="0"))
#: several shards per launch: the body inside skeletons.MULTI_BODY (a table row per shard)
PUSH_TWC_MULTI = Template(PUSH_TWC_BODY.safe_substitute(BID="bid", HUB_ROW="s_shard"))

SELECT_BITMAP = "if (k < nv && gr_active(chg, lo + k)) { r = k; todo = true; }"
#: the queue kernel spreads its vertices ``spread`` threads apart: packed, a block of 256 changed
#: hubs runs them one after another, three times slower than the bitmap kernel on a level of
#: about 1% density, which leaves about 4 per block (docs/BENCHMARKS.md, "Measured constants")
SELECT_QUEUE = ("if (k % spread == 0 && k / spread < count) "
                "{ r = (long long)queue[qbase + k / spread] - lo; todo = true; }")

#: the hub list's rows walked by the whole grid (launched with a fixed number of blocks): the grid
#: strides over the listed rows' edges as one concatenated range, row by row (``at``: where the row
#: starts in that range, modulo the stride), so that a short row keeps other threads than the row
#: before it busy instead of the first ones of the grid every time; EDGE is the push kernels'
#: (u: the row's vertex)
PUSH_HUBS = Template(r"""
  const unsigned long long listed = *(const unsigned long long*)hubs;
  const long long rows = (long long)(listed < GR_HUB_CAP ? listed : GR_HUB_CAP);
  const long long stride = (long long)gridDim.x * GR_BLOCK;
  const long long t = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  long long at = 0;
  for (long long h = 0; h < rows; ++h) {
    const long long u = hubs[1 + 4 * h], b = hubs[2 + 4 * h], e = hubs[3 + 4 * h];
$ROW_ARRAYS
    const long long first = t >= at ? t - at : t - at + stride;
    for (long long j = b + first; j < e; j += stride) {
      const long long nid = (long long)nbr[j];
      $EDGE
    }
    at = (at + (e - b)) % stride;
  }
""")
#: PUSH_HUBS over compressed ids: the grid's warps stride over the listed rows' id blocks as one
#: concatenated range (each warp decodes a block, blockids.gr_warp_id; lanes outside the row idle)
PUSH_HUBS_BLOCKS = Template(r"""
  const unsigned long long listed = *(const unsigned long long*)hubs;
  const long long rows = (long long)(listed < GR_HUB_CAP ? listed : GR_HUB_CAP);
  const long long warps = (long long)gridDim.x * (GR_BLOCK / 32);
  const long long gw = ((long long)blockIdx.x * GR_BLOCK + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  long long at = 0;
  for (long long h = 0; h < rows; ++h) {
    const long long u = hubs[1 + 4 * h], b = hubs[2 + 4 * h], e = hubs[3 + 4 * h];
$ROW_ARRAYS
    const long long b0 = b >> 5, blocks = ((e - 1) >> 5) - b0 + 1;
    for (long long k = gw >= at ? gw - at : gw - at + warps; k < blocks; k += warps) {
      const long long j = ((b0 + k) << 5) + lane, nid = gr_warp_id(nbr, b0 + k, lane);
      if (j >= b && j < e) {
        $EDGE
      }
    }
    at = (at + blocks) % warps;
  }
""")

#: the edge-balanced push (module docstring, ``push_merge``): it follows skeletons.MERGE_ROWS (the
#: rows of the block's first and last edge, ``s_rows``); each lane's row by blockids.ROW_SEARCH. Every thread reaches the block count at
#: the end (no early return). Slots: $BID, $NID (edge j's id, read by every lane of the warp:
#: :data:`MERGE_NID`), $EDGE (sees j, nid, u)
PUSH_MERGE = Template(Template(r"""
  const int lane = threadIdx.x & 31;
  const long long c0 = ((long long)($BID) * GR_BLOCK + (threadIdx.x & ~31)) * per_thread;
  const long long c1 = min(c0 + 32 * per_thread, ne);
  unsigned long long walked = 0;
  if (c0 < ne) {   // (the whole warp: c0 is the warp's)
    long long base;   // a row starting at or before the current 32 edges' first
    {
      long long a = s_rows[0], b = s_rows[1];
      while (a < b) { const long long mid = (a + b + 1) >> 1; if (indptr[mid] <= c0) a = mid; else b = mid - 1; }
      base = a;
    }
    for (long long j0 = c0; j0 < c1; j0 += 32) {
      const long long j = j0 + lane;
$ROW_SEARCH
      const long long u = lo + er;
      const bool on = j < c1 && gr_active(chg, u);
      if (__any_sync(GR_FULL, on)) {   // (no id read where no row of the 32 edges changed)
        const long long nid = $NID;
        if (on) {
          $EDGE
          ++walked;
        }
      }
      base = __shfl_sync(GR_FULL, er, 31);
    }
  }
  gr_block_count(counters + 1, walked);
""").safe_substitute(ROW_SEARCH=ROW_SEARCH))
#: edge j's id in :data:`PUSH_MERGE`, per id layout (compressed: the warp decodes block j0 / 32)
MERGE_NID = {False: "j < c1 ? (long long)nbr[j] : 0LL", True: "gr_warp_id(nbr, j0 >> 5, lane)"}

#: one edge of a push (``nid``: edge j's neighbour id): the message combined into the receiver's slot with the monoid's atomic.
#: ``SKIP`` (idempotent monoids: min, max, or, and) first reads the slot and leaves out the atomic
#: when the message cannot change it: values only move one way during a push, so a stale read can
#: only cause an unneeded atomic, never a lost one (BFS: every message of a level is equal, so
#: all but the first per receiver are reads)
PUSH_EDGE = Template(r"""const long long w = nid;
      const gr_msg_t x = $GMAP;
      $SKIP$ATOMIC(&pacc[w], x);
      gr_touch(touched, w);""")
SKIP_IDEMPOTENT = "const gr_msg_t old = pacc[w];\n      if (gr_combine_msg(old, x) != old) "

#: the apply of one touched vertex ``v`` (shared by both apply kernels); ``ch`` counts it
PUSH_APPLY_ONE = Template(r"""
      const gr_msg_t a = pacc[v];
      pacc[v] = gr_identity_msg();
      if (grstream_apply(v, a)) {
        $MARK
        ++nch;
        if (pdeg) edges += (unsigned long long)pdeg[v];
      }""")

PUSH_APPLY_TAIL = r"""
  gr_block_count(counters + 0, nch);
  gr_block_count(counters + 2, edges);
"""

#: a warp per 32 words of the touched bitmap (an O(n / 32) pass of threads that skips empty words:
#: cheaper than appending every first touch to a queue, which serialises on one
#: counter), lane k reading word k. A warp whose non-empty words hold fewer than GR_DENSE_WORD
#: bits on average lets each lane apply its own word's vertices; else it takes the non-empty
#: words one at a time with a lane per vertex, so that a dense word's applies run side by side on
#: adjacent addresses (a lane per word is slow on levels whose words are about half full, a lane
#: per vertex throughout on the sparse levels: docs/BENCHMARKS.md, "Measured constants").
#: Each word's next-frontier / changed bits are stored once, by the lane that read it (no other
#: warp writes that word in a push iteration); the counters take one atomic per block
PUSH_APPLY_BITMAP = Template(r"""
  const long long t = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const long long w0 = t - lane;   // the warp's first word
  unsigned long long nch = 0, edges = 0;
  const unsigned word = t < words ? touched[t] : 0u;
  unsigned todo = __ballot_sync(GR_FULL, word != 0u), mine = 0u;
  int bits_all = __popc(word);
  for (int o = 16; o > 0; o >>= 1) bits_all += __shfl_xor_sync(GR_FULL, bits_all, o);
  if (bits_all < GR_DENSE_WORD * __popc(todo)) {   // sparse words: each lane its own
    unsigned bits = word;
    while (bits) {
      const int b = __ffs(bits) - 1;
      bits &= bits - 1u;
      const long long v = (t << 5) + b;
      bool ch = false;
      $ONE
      if (ch) mine |= 1u << b;
    }
  } else {                          // dense words: a lane per vertex, word by word
    while (todo) {
      const int k = __ffs(todo) - 1;
      todo &= todo - 1u;
      const unsigned bits = __shfl_sync(GR_FULL, word, k);
      bool ch = false;
      if ((bits >> lane) & 1u) {
        const long long v = ((w0 + k) << 5) + lane;
        $ONE
      }
      const unsigned out = __ballot_sync(GR_FULL, ch);
      if (lane == k) mine = out;
    }
  }
  if (word) {
    touched[t] = 0u;
    if (mine) { next[t] |= mine; chg_next[t] |= mine; }
  }
$TAIL
""")

QUEUE_START_BODY = r"""
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long at = 0;
    for (int s = 0; s < num_shards; ++s) { cursors[s] = at; at += counts[s]; }
  }
"""

#: changed bitmap -> one queue segment per shard (``cursors`` from queue_start); warps whose words
#: lie in one shard append with one atomic
COMPACT_BODY = r"""
  const long long w = (long long)blockIdx.x * GR_BLOCK + threadIdx.x;
  const long long v0 = w << 5;
  unsigned bits = 0;
  int s = -1;
  if (v0 < n) {
    bits = f[w];
    if (n - v0 < 32) bits &= (1u << (n - v0)) - 1u;
    int a = 0, b = num_shards - 1;
    while (a < b) { const int mid = (a + b + 1) >> 1; if (intervals[mid] <= v0) a = mid; else b = mid - 1; }
    s = a;
  }
  const long long hi0 = s >= 0 ? intervals[s + 1] : 0;
  const bool whole = s >= 0 && hi0 >= v0 + 32;
  const int s_lane0 = __shfl_sync(GR_FULL, s, 0);
  const int lane = threadIdx.x & 31;
  if (__all_sync(GR_FULL, whole && s == s_lane0)) {
    const unsigned c = __popc(bits);
    unsigned x = c;   // inclusive scan of the warp's counts
    for (int o = 1; o < 32; o <<= 1) { const unsigned y = __shfl_up_sync(GR_FULL, x, o); if (lane >= o) x += y; }
    const unsigned total = __shfl_sync(GR_FULL, x, 31);
    unsigned long long base = 0;
    if (lane == 31 && total) base = atomicAdd(&cursors[s], (unsigned long long)total);
    base = __shfl_sync(GR_FULL, base, 31) + (x - c);
    while (bits) {
      const int b = __ffs(bits) - 1;
      bits &= bits - 1u;
      queue[base++] = (gr_id_t)(v0 + b);
    }
    return;
  }
  while (bits) {
    const int b = __ffs(bits) - 1;
    bits &= bits - 1u;
    const long long v = v0 + b;
    while (s + 1 < num_shards && intervals[s + 1] <= v) ++s;
    queue[atomicAdd(&cursors[s], 1ULL)] = (gr_id_t)v;
  }
"""
