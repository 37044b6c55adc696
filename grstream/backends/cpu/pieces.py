"""Shard data of the CPU executor: resident runs held as one CSR/CSC each, streamed shards in slots.

A run of consecutive resident shards (memory.resident_runs) is kept as one array per dataset:
the shards' index arrays concatenated, their ``indptr`` shifted into one offset array over the
run's interval. A unit of resident shards is then one numpy pass over slices of it, whatever the
number of shards. Where shards are large (:func:`maps_shards`), each resident shard is a run of
its own instead, its datasets the file's pages mapped (``ShardStore.mapped``): a store read
from the page cache costs no copy and no fresh memory, and a unit per shard costs one pass's
overhead per MAPPED_SHARD_EDGES edges at most. Streamed shards are read into the model's slot
buffers, carved per the model's region layout.
"""
import time

import numpy as np

from ...engine.contract import compaction, resident_runs

#: resident shards are mapped, each a unit of its own, where the store's shards hold this many
#: out-edges on average (fewer: their units' fixed costs add up, and one concatenated run per
#: stretch of shards is one pass)
MAPPED_SHARD_EDGES = 1 << 20


def maps_shards(store):
    """Whether the executor maps the store's resident shards (module docstring): plain ids (a
    compressed store's are decoded into memory) and shards of MAPPED_SHARD_EDGES edges."""
    shards = max(int(store.num_shards), 1)
    return not store.compressed and int(store.num_edges) >= MAPPED_SHARD_EDGES * shards


class Piece:
    """Arrays of one unit: ``indptr`` arrays index vertices from ``lo``; edge positions of the
    out-edges are ``out_base`` + local position in the global CSR order."""

    __slots__ = ("lo", "arrays", "out_base")

    def __init__(self, lo, arrays, out_base):
        self.lo, self.arrays, self.out_base = int(lo), arrays, int(out_base)


class ResidentRuns:
    """The resident runs' arrays (shared between executors of a session through ``shared``)."""

    def __init__(self, store, memory, dtype_of, ledger, shared):
        self.store, self.memory, self.ledger, self.shared = store, memory, ledger, shared
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        S = store.num_shards
        infos = [store.shard_info(i) for i in range(S)]
        self.edge_off = {
            "in": np.concatenate(([0], np.cumsum([x.num_in_edges for x in infos], dtype=np.int64))),
            "out": np.concatenate(([0], np.cumsum([x.num_out_edges for x in infos], dtype=np.int64)))}
        self.run_of = {}
        self.runs = []
        #: each resident shard a run of its own, its datasets mapped on load
        self.mapped = maps_shards(store)
        if self.mapped:
            for k, i in enumerate(sorted(int(i) for i in memory.resident)):
                arrays = {name: shared.get(("cpu-shard", name, i)) for name in memory.names}
                for name in memory.names:
                    ledger.take("device", f"resident {name} {i}", infos[i].dataset_nbytes[name])
                self.runs.append((i, i, int(self.intervals[i]), arrays))
                self.run_of[i] = k
            return
        for k, (first, last) in enumerate(resident_runs(memory.resident)):
            lo, hi = int(self.intervals[first]), int(self.intervals[last + 1])
            arrays = {}
            for name in memory.names:
                key = ("cpu-run", name, first, last)
                d = name.split("/", 1)[0]
                if name.endswith("/indptr"):
                    length, dtype = hi - lo + 1, np.int64
                else:
                    length = int(self.edge_off[d][last + 1] - self.edge_off[d][first])
                    dtype = dtype_of(name)
                arr = shared.get(key)
                if arr is None:
                    arr = shared[key] = np.zeros(length, dtype=dtype)
                ledger.take("device", f"resident {name} {first}-{last}", arr.nbytes)
                arrays[name] = arr
            self.runs.append((first, last, lo, arrays))
            for i in range(first, last + 1):
                self.run_of[i] = k

    def load(self, i):
        """Read shard ``i``'s datasets into its place in its run (mapped: map them, or read
        those the store cannot map)."""
        first, last, lo, arrays = self.runs[self.run_of[i]]
        if self.mapped:
            nbytes = 0
            for name in arrays:
                arrays[name] = self.shared[("cpu-shard", name, i)] = self.store.mapped_or_read(i, name)
                nbytes += arrays[name].nbytes
            return nbytes
        a, b = int(self.intervals[i]) - lo, int(self.intervals[i + 1]) - lo
        nbytes = 0
        for name, arr in arrays.items():
            d = name.split("/", 1)[0]
            base = int(self.edge_off[d][i] - self.edge_off[d][first])
            if name.endswith("/indptr"):
                local = self.store.read(i, name)
                # the shared boundary entry gets the value it already has: safe while a
                # neighbouring unit computes
                arr[a:b + 1] = local + base
                nbytes += local.nbytes
            else:
                count = int(self.edge_off[d][i + 1] - self.edge_off[d][i])
                view = arr[base:base + count]
                self.store.read(i, name, out=view)
                nbytes += view.nbytes
        return nbytes

    def piece(self, shard):
        first, _, lo, arrays = self.runs[self.run_of[shard]]
        return Piece(lo, arrays, self.edge_off["out"][first])


class Slots:
    """The model's streaming slot buffers; a streamed shard is read into one, carved per layout."""

    def __init__(self, store, memory, dtype_of, ledger):
        self.store, self.memory = store, memory
        self.intervals = np.asarray(store.intervals, dtype=np.int64)
        self.dtypes = {n: np.dtype(dtype_of(n)) for n in memory.names}
        self.buffers = []
        for s in range(memory.slots):
            ledger.take("device", f"slot {s}", memory.slot_bytes)
            self.buffers.append(np.empty(memory.slot_bytes, dtype=np.uint8))
        out_counts = [store.shard_info(i).num_out_edges for i in range(store.num_shards)]
        self.out_off = np.concatenate(([0], np.cumsum(out_counts, dtype=np.int64)))
        self.moved, self.pack_s = {}, 0.0   # bytes per transfer mode, packing seconds (report)

    def read(self, i, slot, front_ids=None, transfer="copy"):
        """Shard ``i`` read into slot ``slot``: (Piece, bytes read); ``transfer`` "compact": the
        Piece holds only the rows of the active vertices (``front_ids``, None: every vertex)."""
        buf = self.buffers[slot]
        arrays, nbytes = {}, 0
        offsets, lengths = self.memory.offsets[i], self.memory.lengths[i]
        for name in self.memory.names:
            dt = self.dtypes[name]
            arr = buf[offsets[name]:offsets[name] + lengths[name] * dt.itemsize].view(dt)
            self.store.read(i, name, out=arr)
            arrays[name] = arr
            nbytes += arr.nbytes
        self.moved["copy"] = self.moved.get("copy", 0) + nbytes
        if transfer == "compact":
            arrays = self._compact(i, arrays, front_ids)
        return Piece(self.intervals[i], arrays, self.out_off[i]), nbytes

    def _compact(self, i, arrays, front_ids):
        t0 = time.perf_counter()
        lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
        rows = (np.arange(hi - lo, dtype=np.int64) if front_ids is None
                else compaction.rows_of(front_ids, lo, hi))
        packed = {}

        def out(name, length, dtype):
            packed[name] = np.empty(length, dtype=dtype)   # within the unit temporaries' scratch
            return packed[name]
        nbytes = compaction.pack(arrays, self.memory.names, rows, out)
        self.moved["copy"] -= sum(a.nbytes for a in arrays.values())
        self.moved["compact"] = self.moved.get("compact", 0) + nbytes
        self.pack_s += time.perf_counter() - t0
        return packed

    def report(self, stats):
        """Bytes per transfer mode and packing time since the last report, into ``stats``."""
        for mode, nbytes in self.moved.items():
            if not nbytes:
                continue
            stats.transfer_bytes[mode] = stats.transfer_bytes.get(mode, 0) + nbytes
        stats.time_pack += self.pack_s
        self.moved, self.pack_s = {}, 0.0


def unit_spans(intervals, shards):
    """The vertex ranges [a, b) of a unit's shards (ascending), consecutive shards merged: a
    unit of resident shards may skip shards of its run, whose data need not be loaded."""
    out = []
    for i in shards:
        a, b = int(intervals[i]), int(intervals[i + 1])
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
