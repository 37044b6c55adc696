"""A build's plan: its options and input passes, the shard count and the vertex intervals
(sized for the memory limit of an external build)."""
import logging
import math
import sys

import numpy as np
from tqdm import tqdm

from ..errors import MemoryBudgetError
from .edge_chunks import check_chunk, prepare_chunk, split_chunks
from .intervals import choose_intervals
from .renumber import auto_applies, collect_ids, use_ids

log = logging.getLogger("grstream.partition")

#: default shard size when neither num_shards nor shard_size is given
DEFAULT_SHARD_BYTES = 64 * 2 ** 20
#: working bytes per edge while one bucket is sorted (records, packed key, order, outputs),
#: an upper bound measured by tests/partition/test_memory.py
SORT_BYTES_PER_EDGE = 72
#: the same for unweighted edges without edge ids, gathered as packed uint64 keys: the key
#: sorted in place, the neighbour ids cut from it (and a dedup mask and copy), and the
#: previous shard's ids waiting to be written
KEY_SORT_BYTES_PER_EDGE = 32
#: extra per edge when those keys carry weights (float64; float32 measured no smaller): the
#: edge's index packed into the key and cut out again, the weights read, gathered into the
#: keys' order and waiting to be written with the ids
WEIGHTED_KEY_SORT_BYTES_PER_EDGE = 32
#: extra working bytes per edge with edge ids (input index in the records, the (index, CSR
#: position) records routed to the in-edge's shard, their sort order and the ids written)
EDGE_ID_BYTES_PER_EDGE = 56
#: bytes per vertex held during an external build (degrees, cumulative counts, renumber map)
VERTEX_BYTES = 48
#: bytes per vertex held while shards are sorted and written (the store's degree arrays and
#: the renumbering map; the degree counter is gone by then)
SORT_VERTEX_BYTES = 24
#: fewest edges (in + out) a shard's target may hold once the count exceeds UNCAPPED_SHARDS:
#: below it the per-shard costs (HDF5 objects to create and validate, about a millisecond a
#: shard, and a transfer and launches per shard per iteration) outweigh the shard's work
MIN_SHARD_EDGES = 1 << 14
#: shard counts up to this are never capped, so small graphs can still be cut finely
UNCAPPED_SHARDS = 64


class Plan:
    def __init__(self, edges, options, num_shards, shard_size, memory_limit, dedup, chunk_edges,
                 progress, tmp_dir):
        self.edges = edges
        self.options = options
        self.num_shards = num_shards
        self.shard_size = shard_size
        self.memory_limit = memory_limit
        #: the limit as given (``memory_limit`` is what is left of it for the build itself)
        self.memory_limit_given = memory_limit
        self.dedup = dedup
        self.chunk_edges = chunk_edges
        self.progress = progress
        self.tmp_dir = tmp_dir
        self.renumber = False
        self.edge_ids = False
        self.keyed = False
        #: renumber=True applied to the sorted keys of the in-memory build (ids as read until then)
        self.renumber_from_keys = False
        #: threads that read, sort and write (build_shards' ``threads``)
        self.threads = 1
        #: the vertex order of a reordered build, else None; build_shards' ``reorder`` asked
        #: for ``reorder_requested`` (``auto`` may choose no order)
        self.reorder = None
        self.compress = False
        self.reorder_requested = None
        #: a reordered build's input ids were renumbered before they were reordered
        self.renumbered_input = False

    @property
    def sort_bytes_per_edge(self):
        if self.keyed:
            return KEY_SORT_BYTES_PER_EDGE + (WEIGHTED_KEY_SORT_BYTES_PER_EDGE
                                              if self.options.weighted else 0)
        return SORT_BYTES_PER_EDGE + (EDGE_ID_BYTES_PER_EDGE if self.edge_ids else 0)

    def bar(self, desc, total=None, unit="edges"):
        return tqdm(desc=desc, total=total, unit=unit, unit_scale=True, file=sys.stderr,
                    disable=not self.progress, leave=False)

    def raw_chunks(self, even=True):
        """The input's checked chunks of at most ``chunk_edges``; ``even=False``: the reader's
        own pieces (:meth:`.EdgeSource.pieces`), for a consumer that needs no even chunks."""
        edges = self.edges.chunks() if even else self.edges.pieces()
        for src, dst, w in split_chunks(edges, self.chunk_edges):
            check_chunk(src, dst, w, self.edges.name, self.options.weighted)
            yield src, dst, w

    def prepared_chunks(self, bar=None, even=True):
        for src, dst, w in self.raw_chunks(even):
            if bar is not None:
                bar.update(len(src))
            yield self.prepare(src, dst, w)

    def prepare(self, src, dst, w, pool=None):
        """One raw chunk as the store holds it (:func:`.edge_chunks.prepare_chunk`; ``pool``
        shares its lookups)."""
        src, dst, w = prepare_chunk(src, dst, w, self.options, self.edges.name, pool)
        if len(src) and not auto_applies(self) and not self.renumber_from_keys:
            # before any array of one entry per vertex grows to the largest id (the
            # default rule looks at sparse ids first: it may renumber them)
            self.vertices.check(int(max(src.max(), dst.max())) + 1)
        return src, dst, w


def set_renumbering(plan):
    """renumber=True: a pass over the input finds the ids that occur."""
    use_ids(plan, collect_ids(plan, plan.raw_chunks()))


def vertex_count(plan, counted):
    if plan.renumber:
        return len(plan.options.original_ids)
    # every labelled vertex is a vertex, even one whose only edges were dropped (self-loops)
    labelled = len(plan.edges.labels()) if plan.edges.labels is not None else 0
    return max(plan.edges.num_vertices or 0, counted, labelled)


def shard_count(plan, edges_per_vertex, id_dtype):
    total = int(edges_per_vertex.sum())
    if plan.num_shards is not None:
        count = plan.num_shards
    else:
        size = plan.shard_size or DEFAULT_SHARD_BYTES
        per_edge = id_dtype.itemsize + (plan.options.weight_dtype.itemsize if plan.options.weighted else 0)
        count = max(1, math.ceil(total * per_edge / size))
    count = capped_shard_count(count, total)
    if plan.memory_limit is not None:
        budget = plan.memory_limit - SORT_VERTEX_BYTES * len(edges_per_vertex)
        sortable = budget // plan.sort_bytes_per_edge
        if plan.memory_limit < VERTEX_BYTES * len(edges_per_vertex) + plan.sort_bytes_per_edge:
            raise MemoryBudgetError(
                f"memory limit {plan.memory_limit} B is below the {VERTEX_BYTES} B per vertex "
                f"an external build of {len(edges_per_vertex)} vertices holds",
                minimum=VERTEX_BYTES * len(edges_per_vertex) + plan.sort_bytes_per_edge)
        # a shard holds at most twice its target (a non-heavy vertex straddles a cut)
        count = max(count, math.ceil(2 * total / sortable))
    return count


def capped_shard_count(count, total):
    """``count``, or fewer shards when more than UNCAPPED_SHARDS would hold under
    MIN_SHARD_EDGES edges each (logged)."""
    cap = max(UNCAPPED_SHARDS, math.ceil(total / MIN_SHARD_EDGES))
    if count > cap:
        log.warning("%d shards of %d edges (in + out) hold about %d each; using %d shards instead "
                    "(at least %d edges a shard beyond %d shards)", count, total,
                    total // count, cap, MIN_SHARD_EDGES, UNCAPPED_SHARDS)
        return cap
    return count


def plan_intervals(plan, in_degree, out_degree, id_dtype):
    per_vertex = in_degree + out_degree
    intervals, heavy = choose_intervals(per_vertex, shard_count(plan, per_vertex, id_dtype))
    if len(heavy):
        shown = ", ".join(str(v) for v in heavy[:10]) + (" ..." if len(heavy) > 10 else "")
        log.warning("%d vertex(es) hold more edges than a shard's target and got a shard of "
                    "their own: %s", len(heavy), shown)
    if plan.memory_limit is not None and len(heavy):
        # key runs sort a shard's two sides at once, edge records one side at a time
        side = int((in_degree[heavy] + out_degree[heavy]).max() if plan.keyed else
                   max(in_degree[heavy].max(), out_degree[heavy].max()))
        need = max(VERTEX_BYTES * len(per_vertex) + plan.sort_bytes_per_edge,
                   SORT_VERTEX_BYTES * len(per_vertex) + side * plan.sort_bytes_per_edge)
        if need > plan.memory_limit:
            raise MemoryBudgetError(
                f"vertex {int(heavy[np.argmax(np.maximum(in_degree[heavy], out_degree[heavy]))])} "
                f"has {side} edges{'' if plan.keyed else ' in one direction'}; sorting them "
                f"needs {need} B, more than the "
                f"memory limit {plan.memory_limit} B", minimum=need)
    return intervals, heavy
