"""Push launches of the GPU executor: a plan with ``direction == "push"``.

State kept between iterations (allocated by :class:`.device.DeviceState` when the kernels can
push the program, ``ks.push_dirs``):

- ``chg[0]``: the changed set of the previous iteration (bitmap), which a push walks from and
  an activation plan over "changed" activates from; ``chg[1]``: the one this iteration writes
  (pull applies mark it too, so a push may follow any iteration). ``publish`` swaps them after
  a computing iteration. The seed mask (or every vertex, unseeded) is the changed set before
  iteration 1 (executor contract: "vertices treated as changed before iteration 1").
- ``pacc``: a per-vertex accumulator holding the monoid's identity between iterations, and
  ``touched``: a bitmap that is all zero between iterations; the apply over the touched vertices
  restores both for the vertices it visits, so a push costs O(touched), not O(n) fills.
- frontier_format "queue": the changed set compacted into one queue segment per shard
  (``queue_start`` + ``compact`` at ``begin``), a thread per queued vertex; "bitmap": the push
  kernels test the shard interval's bits, a thread per vertex of the interval. Either way the
  apply walks the touched bitmap's words.

Hub rows (``huge_min`` edges or more in a walk direction, the executor's ``push_hub_edges``) are
walked by ``push_hubs_<d>`` with a fixed grid after each push kernel (push_kernels.py) where the
plan gives the shard the strategy ``"hubs"`` (the planner's choice per iteration,
engine/balance.py ``hub_walk``); a shard none of whose vertices reaches ``huge_min`` push degree
launches neither the hub kernel nor the counter reset (the push kernel gets ``huge_min`` 0).

A shard the plan gives the strategy ``"merge"`` (balance.merge_pushes: its changed rows hold a
large share of its edges, or its rows are long) takes ``push_merge_<d>``, a grid over its edges
(``merge_items`` edges a thread, a warp's run 32 times that), and no hub list: its long rows are
spread over the grid already.

Counts per shard of the changed set are read back every iteration (``Readback.shard_changed``);
the host keeps them to size the queue launches of the next push (no extra synchronisation).
"""
import numpy as np

from ...engine.contract import ID_NAMES
from .skeletons import BLOCK

#: threads per queued vertex of the queue push kernel (push_kernels.SELECT_QUEUE): one warp each,
#: so that a block holds 8 changed vertices, not 256 hubs in a row
QUEUE_SPREAD = 32
#: the executor option push_hub_edges' default: rows of 8192 edges or more take 32 rounds of a
#: 256-thread block in the TWC block phase, enough to keep a block busy while most of the GPU
#: waits for it (a first guess, not yet measured)
HUB_EDGES = 8192
#: blocks per multiprocessor of the hub kernel's fixed grid (8 resident blocks of 256 threads fill
#: an SM of 2048 threads; 4 leave room for the next shard's push kernel)
HUB_BLOCKS_PER_SM = 4
#: seed ids copied from a page-locked buffer of this many ids (allocated once per executor)
SEED_PINNED = 4096
#: multi-shard push tables the scratch region holds at once, each of every shard (the distinct
#: units of a BFS run: the resident table's chunks of each level with copies, grstream/engine/
#: grouping.py ``_spread_table``, and the read-in-place groups, each no larger than S shards, by
#: walk strategy: a full region costs a synchronisation and the tables' uploads again)
PUSH_TABLES = 16


def hub_shards(intervals, degrees, huge_min):
    """Per shard, the edges of its rows of ``huge_min`` or more edges in ``degrees`` (per
    vertex): 0 where it has none, everywhere when ``huge_min`` is 0 (hub path off)."""
    bounds = np.asarray(intervals, dtype=np.int64)
    if huge_min <= 0:
        return np.zeros(len(bounds) - 1, np.int64)
    deg = np.asarray(degrees, np.int64)
    # the few hub rows, summed per shard: no array of n partial sums (a second of fresh pages
    # at a billion edges)
    hubs = np.flatnonzero(deg >= huge_min)
    big = np.concatenate(([0], np.cumsum(deg[hubs])))
    at = np.searchsorted(hubs, bounds)
    return big[at[1:]] - big[at[:-1]]


class Pushes:
    """Launches of push plans over the shards the mover delivered."""

    def __init__(self, dev, ks, huge_min=0, merge_items=32):
        self.dev, self.ks = dev, ks
        self.merge_items = int(merge_items)
        self.walks = tuple(ks.push_dirs)
        self.huge_min = int(huge_min)
        # by the push degree (the sum over the walks): exact for one walk, for two a shard may
        # launch a hub kernel whose list stays empty (one launch, no wrong result)
        self.hub = hub_shards(dev.intervals, dev.push_degree if dev.push_degree is not None else [],
                              self.huge_min if dev.push_degree is not None else 0)
        # the hub kernel's grid: a fixed number of blocks per SM, fewer where the shard's hub rows
        # cannot give every block a block's worth of edges (a small list exits sooner)
        self.hub_blocks = np.zeros(len(self.hub), np.int64)
        self.hub_grid = 0
        if self.hub.any():
            sms = dev.device.get_attribute(dev.cuda.device_attribute.MULTIPROCESSOR_COUNT)
            self.hub_grid = HUB_BLOCKS_PER_SM * int(sms)
            self.hub_blocks = np.minimum(self.hub_grid, (self.hub + BLOCK - 1) // BLOCK)
        self.props = list(ks.gather_props)
        self.words = (dev.n + 31) // 32
        self.changed = np.zeros(dev.S, np.int64)   # changed vertices per shard of chg[0] (host copy)
        self.qbase = np.zeros(dev.S, np.int64)
        self.edges = -1   # edges a push from chg[0] walks (the degree sum over the walks)
        self._total = None
        self._ids = self._ids_big = None

    @property
    def available(self):
        return bool(self.walks) and self.dev.pacc is not None

    # ------------------------------------------------------------------ per run
    def reset(self):
        """A run starts: the accumulator at the identity, nothing touched, no changed set."""
        dev, cuda, s = self.dev, self.dev.cuda, self.dev.ex.compute
        dev.launch("fill", dev.n, dev.pacc, dev.n)
        for bits in (dev.touched, dev.chg[0], dev.chg[1]):
            cuda.memset_d32_async(bits, 0, self.words, s)

    def seed(self, ids, sizes):
        """The changed set before iteration 1: the seed ids (sorted int64), or every vertex (None)."""
        dev, cuda, s = self.dev, self.dev.cuda, self.dev.ex.compute
        if ids is None:
            cuda.memset_d32_async(dev.chg[0], 0xFFFFFFFF, self.words, s)
            self.changed = np.asarray(sizes, dtype=np.int64).copy()
            self.edges = self._degree_total()
            return
        self.edges = int(self._degree()[np.asarray(ids, dtype=np.int64)].sum())
        cuda.memset_d32_async(dev.chg[0], 0, self.words, s)
        if len(ids):
            # in stream order, from page-locked memory (an asynchronous copy from pageable memory
            # synchronises the stream first); the seeding plan's read back syncs before the next
            # seed may overwrite the buffer
            if len(ids) <= SEED_PINNED:
                if self._ids is None:
                    self._ids = cuda.pagelocked_empty(SEED_PINNED, dev.ks.id_dtype)
                host = self._ids[:len(ids)]
                host[...] = ids
            else:   # many seeds: pageable, kept referenced until the copy ran
                self._ids_big = host = np.ascontiguousarray(ids, dtype=dev.ks.id_dtype)
            cuda.memcpy_htod_async(dev.cq, host, s)
            dev.launch("mark_ids", len(host), dev.cq, 0, len(host), dev.chg[0])
        self.changed = np.diff(np.searchsorted(ids, dev.intervals)).astype(np.int64)

    def release(self):
        """Drop the host buffers (before the context goes)."""
        self._ids = self._ids_big = None

    # ------------------------------------------------------------------ per iteration
    def begin(self, plan, computing):
        """Clear this iteration's changed bitmap; a queue plan compacts the previous changed set."""
        dev, cuda, s = self.dev, self.dev.cuda, self.dev.ex.compute
        if computing:
            cuda.memset_d32_async(dev.chg[1], 0, self.words, s)
        if plan.direction == "push" and plan.frontier_format == "queue":
            self.qbase = np.concatenate(([0], np.cumsum(self.changed)[:-1])).astype(np.int64)
            dev.fn["queue_start"].launch((1, 1), (32, 1, 1), s, dev.counts_addr(1), dev.S, dev.cursors)
            dev.launch("compact", self.words, dev.chg[0], dev.n, dev.mem["intervals"], dev.S,
                       dev.cursors, dev.cq)

    def shard(self, plan, arrays, edge_prop, strategy="hubs"):
        """Push from the changed vertices of one delivered shard, every walk direction, with the
        plan's strategy for the shard: "hubs" (balance.hub_walk), "merge" (the edge-balanced
        walk, balance.merge_pushes) or the thread/warp/block walk alone."""
        dev = self.dev
        i = arrays.shard
        count = int(self.changed[i])
        if count == 0:
            return
        lo, nv = int(dev.intervals[i]), int(dev.intervals[i + 1] - dev.intervals[i])
        hubs = strategy == "hubs"
        for d in self.walks:
            ids = arrays.ids(ID_NAMES[d])
            ne = int(arrays.edges[d])
            props = [edge_prop(arrays, d, p, i, ne) for p in self.props]
            head = (arrays[f"{d}/indptr"], ids, *props)
            if strategy == "merge":
                dev.launch(f"push_merge_{d}", (ne + self.merge_items - 1) // self.merge_items, *head, lo, nv, ne,
                           dev.chg[0], self.merge_items, dev.pacc, dev.touched, dev.rb_dev)
                continue
            huge = self.huge_min if hubs and self.hub[i] else 0
            if huge:   # an empty hub list for this launch (stream order: the last hub kernel ran)
                dev.cuda.memset_d32_async(dev.hubs, 0, 2, dev.ex.compute)
            tail = (dev.hubs, huge, dev.pacc, dev.touched, dev.rb_dev)
            if plan.frontier_format == "queue":
                dev.launch(f"push_queue_{d}", count * QUEUE_SPREAD, *head, lo, count, dev.cq, int(self.qbase[i]),
                           QUEUE_SPREAD, *tail)
            else:
                dev.launch(f"push_bitmap_{d}", nv, *head, lo, nv, dev.chg[0], *tail)
            if huge:   # dev.fn: the zero-copy variant's while a zero-copy unit runs
                dev.fn[f"push_hubs_{d}"].launch((int(self.hub_blocks[i]), 1), (BLOCK, 1, 1), dev.ex.compute,
                                                ids, *props, dev.hubs, dev.pacc, dev.touched)

    def several(self, data, transfer, strategies, table):
        """Push from the changed vertices of several delivered shards whose arrays never move
        (``transfer`` "resident" or "zerocopy"), bitmap frontier: one launch per walk direction
        over a table of the shards (``table(d, data, transfer)``: Gathers.table), and one hub
        launch where the plan gives the hub path and any of them has hub rows; the shards whose
        strategy is "merge" take one launch of the edge-balanced walk per direction over a table
        of their own (``table(d, data, transfer, "merge")``: its blocks cover their edges)."""
        dev, s = self.dev, self.dev.ex.compute
        merged = [a for a, b in zip(data, strategies) if b == "merge"]
        if merged:
            for d in self.walks:
                addr, rows, blocks = table(d, merged, transfer, "merge")
                if rows:
                    dev.fn[f"push_merge_multi_{d}"].launch((blocks, 1), (BLOCK, 1, 1), s, addr, rows, dev.chg[0],
                                                           self.merge_items, dev.pacc, dev.touched, dev.rb_dev)
            rest = [(a, b) for a, b in zip(data, strategies) if b != "merge"]
            if not rest:
                return
            data, strategies = [a for a, _ in rest], [b for _, b in rest]
        hub = int(self.hub[[a.shard for a in data]].sum()) if any(b == "hubs" for b in strategies) else 0
        huge = self.huge_min if hub else 0
        for d in self.walks:
            addr, rows, blocks = table(d, data, transfer)
            if not rows:
                continue
            if huge:   # an empty hub list for this launch (stream order: the last hub kernel ran)
                dev.cuda.memset_d32_async(dev.hubs, 0, 2, s)
            dev.fn[f"push_multi_bitmap_{d}"].launch((blocks, 1), (BLOCK, 1, 1), s, addr, rows, dev.chg[0],
                                                    dev.hubs, huge, dev.pacc, dev.touched, dev.rb_dev)
            if huge:   # dev.fn: the zero-copy variant's while a zero-copy unit runs
                grid = min(self.hub_grid, (hub + BLOCK - 1) // BLOCK)
                dev.fn[f"push_hubs_multi_{d}"].launch((grid, 1), (BLOCK, 1, 1), s, addr, dev.hubs, dev.pacc,
                                                      dev.touched)

    def apply(self, plan):
        """Apply over the touched vertices; the changed ones form the next frontier."""
        dev = self.dev
        dev.launch("push_apply", self.words, self.words, dev.touched, dev.pacc, dev.front[1],
                   dev.chg[1], dev.pdeg, dev.rb_dev)

    def publish(self, computing):
        """After a computing iteration this iteration's changed set becomes the previous one;
        count it per shard into the readback block."""
        dev = self.dev
        if computing:
            dev.chg.reverse()
        dev.count_frontier(dev.chg[0], which=1)

    def _degree(self):
        """Edges a push walks per vertex: DeviceState's host copy of its push degree array."""
        return self.dev.push_degree

    def _degree_total(self):
        if self._total is None:
            self._total = int(self._degree().sum())
        return self._total

    def read_back(self, computing):
        """(changed vertices per shard, edges a push from them walks) after the readback; an
        activation-only plan leaves the changed set as it was."""
        self.changed = self.dev.shard_counts(1)
        if computing:
            self.edges = int(self.dev.rb_host[2])
        return self.changed.copy(), self.edges
