"""One memory model for executor ("device") bytes, pinned host bytes and scratch.

``memory_budget`` bounds the executor's memory: device memory on a GPU, host memory on the CPU
path. It is spent in this order (GraphReduce Eq. 1-2):

1. *static* state the executor declares for the program (:class:`Footprint`): vertex fields
   (``cur`` and ``nxt``), degrees, frontiers, accumulators, edge state, readback blocks;
2. *scratch*: temporaries and tables the executor declares (the GPU's seed buffer and
   multi-shard tables, the CPU's per-unit index arrays), bounded here, not allocated ad hoc;
3. *streaming slots*, each as large as the largest shard region (or larger, ``slot_bytes``, so
   that consecutive streamed shards travel as one copy);
4. *resident* shards, lowest index first, with what remains. When every shard fits, every shard is
   resident and no slot is needed (in-memory mode).

``pinned_budget`` bounds page-locked host memory (GPU executors only; the CPU path pins nothing):
first the staging buffers through which shards read from the store are copied (at least one),
then a cache that keeps streamed shards after their first read, lowest index first. Host memory
is a tier of its own, sized from the host, not from the device: by default (``None``) the budget
is what the streamed shards, the staging buffers and the staged vertex state need (so never more
than the store), at most :func:`host_pinned_limit` -- the host's ``MemAvailable`` less a reserve
(:data:`HOST_RESERVE_SHARE` of it, at least :data:`HOST_RESERVE_MIN`), since pinned pages cannot
be swapped or reclaimed and every other process needs the rest. Where the host does not say
(no ``/proc/meminfo``), the default follows the device budget, at most :data:`PINNED_CAP`. ``0``
keeps only the staging buffers. A budget below the minimum raises MemoryBudgetError stating the
minimum. ``MemoryModel.pinned_rule`` records which rule sized it ("given", "host", "device").

Each shard is then served from one tier per iteration (:func:`shard_tier`): "resident" (executor
memory), "pinned" (the host cache, once filled) or "store" (read from the file: shards outside the
cache, a cached shard's first read, a resident shard's load); plans and statistics count them.

Every allocation an executor makes goes through a :class:`Ledger` that refuses to exceed the
model's bytes; tests assert the executors stay inside it.
"""
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np

from ..errors import MemoryBudgetError
from .schedule import ID_NAMES, stored_names

#: the pinned host default where the host's available memory is unknown: the device budget, at
#: most this many bytes
PINNED_CAP = 8 << 30
#: host memory the default pinned budget leaves to everything else: this share of MemAvailable ...
HOST_RESERVE_SHARE = 0.25
#: ... and at least this many bytes
HOST_RESERVE_MIN = 2 << 30
#: where the host's available memory is read from
MEMINFO = "/proc/meminfo"
#: the tiers a shard is served from in an iteration, nearest first
TIERS = ("resident", "pinned", "store")


def host_available(path=None) -> Optional[int]:
    """The host's available memory in bytes (``MemAvailable`` of ``/proc/meminfo``), or None
    where the file or the field is missing or unreadable."""
    try:
        with open(path or MEMINFO) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key == "MemAvailable":
                    value, *unit = rest.split()
                    return int(value) * (1024 if unit and unit[0].lower() == "kb" else 1)
    except (OSError, ValueError):
        return None
    return None


def host_pinned_limit(available=None) -> Optional[int]:
    """The most pinned bytes the default budget takes from a host with ``available`` bytes
    (None: :func:`host_available`): what the reserve leaves, 0 at least; None when unknown."""
    available = host_available() if available is None else int(available)
    if available is None:
        return None
    return max(available - max(int(available * HOST_RESERVE_SHARE), HOST_RESERVE_MIN), 0)


def align(nbytes, to):
    """``nbytes`` rounded up to a multiple of ``to`` (>= 1)."""
    to = max(int(to), 1)
    return (int(nbytes) + to - 1) // to * to


def region_layout(nbytes_by_name, alignment) -> Tuple[Dict[str, int], int]:
    """Offsets of one shard's arrays packed into one region: ({name: offset}, region bytes).

    Every array starts on an ``alignment`` boundary; an empty array still takes one unit so that
    every name has a distinct address.
    """
    offsets, off = {}, 0
    for name, nb in nbytes_by_name.items():
        offsets[name] = off
        off += align(max(int(nb), 1), alignment)
    return offsets, off


class _Sizes:
    """The byte totals of ``static`` and ``scratch`` (a Footprint's and a MemoryModel's)."""

    @property
    def static_bytes(self):
        return int(sum(self.static.values()))

    @property
    def scratch_bytes(self):
        return int(sum(self.scratch.values()))


@dataclass(frozen=True)
class Footprint(_Sizes):
    """What an executor needs for one program on one store, besides shard data.

    ``static``: name -> bytes held for the whole run; ``scratch``: name -> the most bytes of
    temporaries held at once; ``alignment``: of every shard array inside a region (device: 256).
    """

    static: Dict[str, int]
    scratch: Dict[str, int] = field(default_factory=dict)
    alignment: int = 1
    #: host bytes of the initial vertex state a GPU executor would stage in pinned memory (an async
    #: upload at link speed instead of a pageable one); planned from what the pinned budget leaves
    host_state: int = 0
    #: the executor reads a compressed store's id datasets as their stored parts and decodes them
    #: itself (the GPU's kernels): its regions hold the parts (schedule.stored_names), not ids
    codec_parts: bool = False


@dataclass(frozen=True)
class MemoryModel(_Sizes):
    """How the budgets are spent; plain data (see the module docstring)."""

    names: Tuple[str, ...]                 # shard datasets the program reads, in region order
    device_budget: Optional[int]           # None: unbounded (everything resident)
    pinned_budget: int
    static: Dict[str, int]
    scratch: Dict[str, int]
    alignment: int
    regions: Tuple[int, ...]               # bytes of each shard's region
    offsets: Tuple[Dict[str, int], ...]    # each shard's array offsets inside its region
    lengths: Tuple[Dict[str, int], ...]    # each shard's array lengths (elements)
    resident: Tuple[int, ...]              # shards kept in executor memory once loaded
    slots: int                             # streaming slots (0 in in-memory mode)
    slot_bytes: int                        # bytes of one slot
    pinned: Tuple[int, ...]                # streamed shards cached in pinned host memory
    pinned_offsets: Dict[int, int]         # their offsets inside the one pinned cache block
    staging: int                           # pinned staging buffers (store -> host -> device)
    staging_bytes: int                     # bytes of one staging buffer
    state_pinned: int = 0                  # pinned bytes for the initial vertex state (0: pageable)
    pinned_rule: str = ""                  # how pinned_budget was sized: "given", "host", "device"
    others: Tuple[int, ...] = ()           # shards other MPI ranks own: no memory here
    edges: Tuple[Tuple[int, int], ...] = ()   # each shard's (in-edges, out-edges)

    def edge_count(self, shard, direction, lengths=None):
        """Edges of ``shard``'s ``direction`` ("in", "out"): the id array's length where
        ``lengths`` (default: the model's) hold it plain, else the store's count."""
        lengths = self.lengths[shard] if lengths is None else lengths
        name = ID_NAMES[direction]
        if name in lengths:
            return int(lengths[name])
        return int(self.edges[shard][direction == "out"])

    @property
    def resident_bytes(self):
        return int(sum(self.regions[i] for i in self.resident))

    @property
    def device_bytes(self):
        """Executor bytes held: static + scratch + slots + resident shards (<= device_budget)."""
        return self.static_bytes + self.scratch_bytes + self.slots * self.slot_bytes + self.resident_bytes

    @property
    def pinned_cache_bytes(self):
        return int(sum(self.regions[i] for i in self.pinned))

    @property
    def pinned_bytes(self):
        """Pinned host bytes held: the cache, the staging buffers and the staged vertex state
        (<= pinned_budget)."""
        return self.pinned_cache_bytes + self.staging * self.staging_bytes + self.state_pinned

    @property
    def in_memory(self):
        return len(self.resident) + len(self.others) == len(self.regions)

    @property
    def mode(self):
        return "in-memory" if self.in_memory else ("partial" if self.resident else "streaming")

    def to_dict(self):
        return {"budget": self.device_budget, "pinned_budget": self.pinned_budget,
                "static_bytes": self.static_bytes, "scratch_bytes": self.scratch_bytes,
                "device_bytes": self.device_bytes, "pinned_bytes": self.pinned_bytes,
                "residency": self.mode, "resident_shards": len(self.resident),
                "num_shards": len(self.regions), "slots": self.slots, "slot_bytes": self.slot_bytes,
                "pinned_shards": len(self.pinned), "staging": self.staging,
                "state_pinned": self.state_pinned, "pinned_rule": self.pinned_rule,
                "pinned_cache_bytes": self.pinned_cache_bytes,
                "tier_shards": {t: len(v) for t, v in self.tiers().items()}}

    def tiers(self):
        """Tier -> shards served from it once the pinned cache is filled (``shard_tier``)."""
        out = {t: [] for t in TIERS}
        for i in sorted(set(range(len(self.regions))) - set(self.others)):
            out[shard_tier(self, i, filled=True)].append(i)
        return out


def shard_tier(model: MemoryModel, shard, filled):
    """The tier shard ``shard`` is served from under ``model``: "resident", "pinned" (in the
    pinned cache and ``filled``: read there before) or "store"."""
    if shard in model.resident:
        return "resident"
    return "pinned" if filled and shard in model.pinned_offsets else "store"


def shard_arrays(store, names, dtype_of):
    """(bytes, lengths) of ``names`` per shard: two tuples of dicts."""
    nbytes, lengths = [], []
    for i in range(store.num_shards):
        info = store.shard_info(i)
        nb = {n: int(info.dataset_nbytes[n]) for n in names}
        nbytes.append(nb)
        lengths.append({n: nb[n] // dtype_of(n).itemsize for n in names})
    return tuple(nbytes), tuple(lengths)


def plan_memory(store, names, footprint: Footprint, budget=None, pinned_budget=None, *,
                pinned=True, slots=2, slot_bytes=0, staging=3, dtype_of=None,
                host=None, owned=None) -> MemoryModel:
    """Spend ``budget`` executor bytes and ``pinned_budget`` pinned host bytes (module docstring).

    Parameters
    ----------
    store : ShardStore
    names : list of str
        Shard datasets the program reads (:func:`grstream.engine.schedule.needed_arrays`).
    footprint : Footprint
        The executor's static and scratch bytes and its array alignment.
    budget : int, optional
        Executor bytes; None: unbounded (every shard resident).
    pinned_budget : int, optional
        Pinned host bytes (None: sized from the host, see the module docstring); ignored when
        ``pinned`` is False (executors whose memory is host memory).
    slots : int
        Streaming slots wanted when not everything is resident (fewer when the budget is short;
        at least one).
    slot_bytes : int
        Target slot size; slots grow from the largest region towards it by at most half of what
        the budget leaves for resident shards, so consecutive streamed shards can share a copy.
    staging : int
        Pinned staging buffers wanted for shards read from the store each time (read-ahead depth).
    host : int, optional
        The host's available bytes for the default pinned budget (None: :func:`host_available`).
    owned : array of 0/1 per shard, optional
        The shards this process plans (an MPI rank's own); the others take no memory here
        (``MemoryModel.others``). Default: every shard.
    """
    if dtype_of is None:
        from .schedule import dataset_dtype

        def dtype_of(name):
            return dataset_dtype(store, name)
    names = tuple(stored_names(store, names) if footprint.codec_parts else names)
    nbytes, lengths = shard_arrays(store, names, dtype_of)
    layouts = [region_layout(nb, footprint.alignment) for nb in nbytes]
    offsets = tuple(o for o, _ in layouts)
    regions = np.array([r for _, r in layouts], dtype=np.int64)
    S = len(regions)
    mine = list(range(S)) if owned is None else [i for i in range(S) if owned[i]]
    largest = int(regions[mine].max()) if mine else 0
    fixed = footprint.static_bytes + footprint.scratch_bytes
    common = dict(names=names, static=dict(footprint.static), scratch=dict(footprint.scratch),
                  alignment=footprint.alignment, regions=tuple(int(r) for r in regions),
                  offsets=offsets, lengths=lengths,
                  others=tuple(sorted(set(range(S)) - set(mine))),
                  edges=tuple((int(x.num_in_edges), int(x.num_out_edges))
                              for x in (store.shard_info(i) for i in range(S))))
    if budget is None or int(budget) >= fixed + int(regions[mine].sum()):
        resident, k, size = mine, 0, 0
        budget = None if budget is None else int(budget)
    else:
        budget = int(budget)
        minimum = fixed + largest
        if budget < minimum:
            raise MemoryBudgetError(
                f"memory budget {budget:,} B is below the minimum {minimum:,} B (vertex state and "
                f"scratch {fixed:,} B + largest shard {largest:,} B)", minimum=minimum)
        k = max(int(slots), 1)
        while k > 1 and budget < fixed + k * largest:
            k -= 1
        spare = budget - fixed - k * largest
        size = largest
        step = max(footprint.alignment, 1)
        grow = min(int(slot_bytes) - largest, spare // (2 * k)) // step * step
        if grow > 0:
            size, spare = largest + grow, spare - k * grow
        resident = []
        for i in mine:
            if regions[i] <= spare:
                resident.append(i)
                spare -= int(regions[i])
    streamed = [i for i in mine if i not in set(resident)]
    if not pinned or not S:
        return MemoryModel(device_budget=budget, pinned_budget=0, resident=tuple(resident),
                           slots=k, slot_bytes=size, pinned=(), pinned_offsets={}, staging=0,
                           staging_bytes=0, **common)
    if pinned_budget is None:
        host_limit = host_pinned_limit(host)
        if host_limit is None:
            rule, limit = "device", max(min(PINNED_CAP if budget is None else budget, PINNED_CAP), largest)
        else:
            # what the streamed shards, the staging buffers and the staged state need at most
            # (the staging buffers go again below when every streamed shard is cached)
            wanted = (int(sum(int(regions[i]) for i in streamed)) + max(int(staging), 1) * largest
                      + int(footprint.host_state))
            rule, limit = "host", max(min(host_limit, wanted), largest)
    else:
        rule, limit = "given", int(pinned_budget)
        if limit < largest:
            raise MemoryBudgetError(f"pinned host budget {limit:,} B is below one staging buffer "
                                    f"({largest:,} B, the largest shard region)", minimum=largest)
    n_staging = max(1, min(int(staging), limit // largest)) if largest else 0
    free = limit - n_staging * largest
    cached, offs, off = [], {}, 0
    for i in streamed:
        if regions[i] <= free:
            cached.append(i)
            offs[i] = off
            off += int(regions[i])
            free -= int(regions[i])
    if streamed and len(cached) == len(streamed) and not resident:
        free += n_staging * largest
        n_staging = 0   # every read lands in the cache: no staging buffer
    # the vertex state is staged only from what shard data leaves: shards first, as they move
    # every iteration and the state once a run
    state = int(footprint.host_state) if footprint.host_state <= free else 0
    return MemoryModel(device_budget=budget, pinned_budget=limit, resident=tuple(resident), slots=k,
                       slot_bytes=size, pinned=tuple(cached), pinned_offsets=offs,
                       staging=n_staging, staging_bytes=largest if n_staging else 0,
                       state_pinned=state, pinned_rule=rule, **common)


def resident_runs(resident):
    """Maximal runs of consecutive resident shards, as (first, last) pairs in ascending order."""
    runs = []
    for i in sorted(int(i) for i in resident):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [tuple(r) for r in runs]


def residency_key(model: MemoryModel, shard, name):
    """The session-wide key of resident dataset ``name`` of ``shard`` under ``model``: equal keys
    mean the same data in the same place (same run of resident shards), so executors of one
    session may share it and the planner need not load it again."""
    for first, last in resident_runs(model.resident):
        if first <= shard <= last:
            return ("resident", name, first, last, int(shard))
    return None


class Ledger:
    """Counts what an executor holds against a model; refuses to go past it.

    ``take(kind, name, nbytes)`` with kind "device", "pinned" or "scratch" (scratch counts inside
    the device bytes too) raises MemoryBudgetError when the kind's total would exceed the model;
    ``give`` returns bytes. ``peak`` holds the largest total reached per kind.
    """

    def __init__(self, model: MemoryModel, limits=None):
        self.model = model
        self.limits = dict(limits or {"device": model.device_bytes - model.scratch_bytes,
                                      "scratch": model.scratch_bytes, "pinned": model.pinned_bytes})
        self.held = {k: 0 for k in self.limits}
        self.peak = dict(self.held)
        self.items = {}

    def take(self, kind, name, nbytes):
        nbytes = int(nbytes)
        if self.held[kind] + nbytes > self.limits[kind]:
            raise MemoryBudgetError(f"{name}: {nbytes:,} B of {kind} memory would exceed the plan "
                                    f"({self.held[kind]:,} of {self.limits[kind]:,} B held)",
                                    minimum=self.held[kind] + nbytes)
        self.held[kind] += nbytes
        self.peak[kind] = max(self.peak[kind], self.held[kind])
        self.items[(kind, name)] = self.items.get((kind, name), 0) + nbytes

    def give(self, kind, name, nbytes):
        self.held[kind] -= int(nbytes)
        left = self.items.get((kind, name), 0) - int(nbytes)
        if left > 0:
            self.items[(kind, name)] = left
        else:
            self.items.pop((kind, name), None)
