"""Device-side planning for the GPU path, free of CUDA calls so CI can test it.

GraphReduce Eq. 1-2: the device holds the static vertex state (every field twice: the values
gather reads and the values apply writes, degrees, two frontier bitmaps, the accumulator of one
interval) and spends the rest of the budget on shard *slots*, each as large as the largest shard's
needed arrays. :func:`plan_device` reuses the backend-neutral :func:`plan_memory`: when the budget
holds every shard, every shard is resident (copied once, in-memory mode); otherwise two slots
(three by default, fewer when the budget is short; one means no overlap) stream the shards that
do not stay resident.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ...engine.schedule import MemoryPlan, plan_memory

ALIGN = 256  # every device sub-array starts on a 256-byte boundary (coalescing, 16-byte loads)
#: bytes kept free below the device's free memory when no budget is given (context, modules,
#: library workspaces and fragmentation).
DEFAULT_MARGIN = 1 << 30


def align(nbytes):
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


def layout(nbytes_by_name: Dict[str, int]):
    """Offsets of a shard's arrays packed into one device region: ({name: offset}, total bytes)."""
    offsets, off = {}, 0
    for name, nb in nbytes_by_name.items():
        offsets[name] = off
        off += align(max(int(nb), 1))
    return offsets, off


def shard_region_bytes(store, names) -> np.ndarray:
    """Device bytes of each shard's needed arrays, aligned as :func:`layout` packs them."""
    out = np.zeros(store.num_shards, dtype=np.int64)
    for i in range(store.num_shards):
        info = store.shard_info(i)
        out[i] = layout({n: info.dataset_nbytes[n] for n in names})[1]
    return out


def static_buffers(n, field_dtypes, degrees, msg_itemsize, max_interval, num_shards, hoisted,
                   agg_itemsizes=(), acc_vertices=None, table_bytes=0, edge_state=None,
                   num_edges=0, permuted=(), max_in=0):
    """Name -> bytes of every device buffer the GPU path allocates at setup and keeps for the run
    (GraphReduce Eq. 1): the state that stays resident whatever the budget. Each buffer appears
    once; the backend allocates exactly these.

    ``field_dtypes`` maps vertex fields to dtypes (lists are numbered), ``degrees`` names the degree
    arrays read; the accumulator covers one interval, or ``acc_vertices`` vertices when given
    (dense programs keep one message per vertex so that a single apply launch follows every
    shard's gather). ``table_bytes`` is the multi-shard gather tables' region; ``edge_state`` maps
    mutable edge properties to dtypes (twice ``num_edges`` each, and one shard's ``max_in``
    in-edges for those in ``permuted``).
    """
    from .skeletons import AGG_BLOCKS
    if not isinstance(field_dtypes, dict):
        field_dtypes = {f"field{k}": dt for k, dt in enumerate(field_dtypes)}
    if not isinstance(degrees, (list, tuple)):
        degrees = [f"degree{k}" for k in range(int(degrees))]
    n, S = int(n), int(num_shards)
    words = (n + 31) // 32
    out = {}
    for f, dt in field_dtypes.items():
        out[f"cur {f}"] = out[f"nxt {f}"] = n * np.dtype(dt).itemsize
    for d in degrees:
        out[d] = 8 * n
    out["frontier 0"] = out["frontier 1"] = 4 * max(words, 1)
    acc = max_interval if acc_vertices is None else max(int(acc_vertices), max_interval)
    out["accumulator"] = msg_itemsize * max(acc, 1)
    out["changed flags"] = max(max_interval, 1)
    if hoisted:
        out["hoisted messages"] = msg_itemsize * n
    out["intervals"] = 8 * (S + 1)
    # counters, then 8 bytes per aggregate, then the active vertices of each shard
    out["readback block"] = 8 * (2 + len(agg_itemsizes) + max(S, 1))
    for k, _ in enumerate(agg_itemsizes):
        out[f"aggregate partials {k}"] = 8 * AGG_BLOCKS
    if table_bytes:
        out["shard tables"] = int(table_bytes)
    for p, dt in (edge_state or {}).items():
        size = np.dtype(dt).itemsize
        out[f"edge state {p}"] = out[f"edge state {p} (next)"] = int(num_edges) * size
        if p in permuted:
            out[f"edge state {p} (CSC)"] = max(int(max_in), 1) * size
    return out


def vertex_state_bytes(*args, **kwargs):
    """Device bytes of :func:`static_buffers` (same arguments), each aligned as allocated."""
    return int(sum(align(max(b, 1)) for b in static_buffers(*args, **kwargs).values()))


def plan_device(region_bytes, vertex_bytes, budget, slots=2, slot_bytes=0):
    """Resident shards and streaming slots for ``budget`` device bytes (MemoryBudgetError below the
    minimum: vertex state plus the largest shard's needed arrays).

    Takes as many of ``slots`` streaming slots as the budget holds (at least one): a third slot
    lets a copy start while two shards' kernels are still queued, so the copy engine never waits.
    With ``slot_bytes`` above the largest shard, slots grow towards it (by at most half of what the
    budget leaves for resident shards) so that several consecutive streamed shards travel as one
    copy: each copy step costs a fixed gap of event hops and host work, fewer steps hide it.
    """
    sizes = np.asarray(region_bytes, dtype=np.int64)
    largest = int(sizes.max()) if sizes.size else 0
    k = max(int(slots), 1)
    if budget is not None:
        while k > 1 and budget < vertex_bytes + k * largest:
            k -= 1
    plan = plan_memory(sizes, int(vertex_bytes), budget, max_buffers=k)
    if plan.all_cached or not plan.num_buffers or int(slot_bytes) <= largest:
        return plan
    k = plan.num_buffers
    spare = int(budget) - int(vertex_bytes) - k * largest
    grow = min(int(slot_bytes) - largest, spare // (2 * k)) // ALIGN * ALIGN
    if grow <= 0:
        return plan
    free = spare - k * grow
    cached = []
    for i, s in enumerate(sizes):
        if s <= free:
            cached.append(i)
            free -= int(s)
    return MemoryPlan(budget=plan.budget, vertex_bytes=plan.vertex_bytes, buffer_bytes=largest + grow,
                      num_buffers=k, cached=cached, shard_bytes=plan.shard_bytes)


def plan_host_cache(region_bytes, streamed, limit):
    """Streamed shards whose arrays stay in pinned host memory after their first read.

    With all of them cached, iterations after the first never touch the store and copies run at
    link speed; the rest are read each time they are needed, through staging buffers.
    """
    cached, used = [], 0
    for i in streamed:
        nb = int(region_bytes[i])
        if limit is None or used + nb <= limit:
            cached.append(int(i))
            used += nb
    return cached


@dataclass(frozen=True)
class Step:
    """One shard of an iteration: where its data lives on the device and whether it moves."""

    shard: int
    resident: bool
    slot: Optional[int]   # streaming slot index, None for resident shards
    copy: bool            # copy host -> device before its kernels


class Residency:
    """Which resident shards are already on the device; turns active shards into ordered steps."""

    def __init__(self, resident, num_slots):
        self.resident = set(int(i) for i in resident)
        self.loaded = set()
        self.num_slots = int(num_slots)
        self._next_slot = 0

    def steps(self, active) -> List[Step]:
        """Steps for the active shards, one shard per copy (see :meth:`units`)."""
        return [s for unit in self.units(active) for s in unit]

    def units(self, active, join=None) -> List[tuple]:
        """Copy units for the active shards (shards with no active vertex never appear: skipped).

        A unit is one resident shard, or consecutive streamed shards sharing one slot and one copy:
        ``join(unit, shard)`` says whether ``shard`` extends the streamed ``unit`` (list of shard
        indices); without it every unit holds one shard. Resident and streamed units alternate, a
        resident one first, so the copy of a streamed unit overlaps a resident shard's kernels;
        streamed units take the slots in turn.
        """
        active = [int(i) for i in active]
        res = [i for i in active if i in self.resident]
        groups = []
        for i in active:
            if i in self.resident:
                continue
            if groups and join is not None and join(groups[-1], i):
                groups[-1].append(i)
            else:
                groups.append([i])
        if groups and self.num_slots == 0:
            raise RuntimeError("shards to stream but no streaming slot")
        out = []
        while res or groups:
            if res:
                i = res.pop(0)
                out.append((Step(i, True, None, i not in self.loaded),))
                self.loaded.add(i)
            if groups:
                slot = self._next_slot
                self._next_slot = (self._next_slot + 1) % self.num_slots
                out.append(tuple(Step(i, False, slot, True) for i in groups.pop(0)))
        return out
