"""Gather launches of the GPU executor: one shard at a time, or several resident shards at once.

The strategy of each shard's gather comes from the plan (``unit.balance``: ``"twc"`` or
``"merge"``, chosen by the executor's policy, :func:`.loadbalance.cuda_policy`, which gives the
merge split only where the generated kernels have it): a plan asking for a strategy the kernels
do not run is an internal error, never a silent change of strategy.
"""
import numpy as np

from ...engine.contract import ID_NAMES
from ...errors import InternalError

from .skeletons import BLOCK, tab_width


class Gathers:
    """Gather kernels over the shards the mover delivered (``DeviceArrays``)."""

    def __init__(self, dev, store, spec, ks, dirs, merge_items, table_bytes):
        self.dev, self.spec, self.ks = dev, spec, ks
        self.dirs = list(dirs)
        self.merge_items = int(merge_items)
        self.intervals = dev.intervals
        self.msg_size = ks.msg_dtype.itemsize
        counts = [store.shard_info(i).num_out_edges for i in range(store.num_shards)]
        self.out_offset = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        # multi-shard tables: the region counted as scratch at setup; host rows are pageable
        # (a few KiB, copied in stream order before the launch that reads them)
        self.tab_dev = dev.mem.get("shard tables")
        self.tab_words = int(table_bytes) // 8
        self.tab_used = 0
        self.tables = {}   # (direction, strategy, shards) -> (device address, rows, blocks)
        self.counts = {"twc": 0, "merge": 0, "batched": 0}

    def strategy(self, wanted):
        """``wanted`` (the plan's strategy) when these kernels run it."""
        if wanted == "twc" or (wanted == "merge" and self.ks.merge_ok):
            return wanted
        raise InternalError(f"{self.spec.name}: the plan gathers with {wanted!r}, which the "
                            f"generated kernels do not run (merge split: {self.ks.merge_ok})")

    def edge_prop(self, arrays, d, p, i, ne):
        """Device address of edge property ``p`` of shard ``i``'s ``d``-edges, in their order.

        Mutable edge state lives in the global CSR order: out-edges find shard i's part at its
        offset, in-edges get it permuted through ``in/eid`` into a scratch buffer first.
        """
        dev = self.dev
        if p not in dev.estate:
            return arrays[f"{d}/{p}"]
        size = dev.estate[p].itemsize
        if d == "out":
            return int(dev.ecur[p]) + int(self.out_offset[i]) * size
        dev.launch(f"permute{size}", ne, arrays["in/eid"], dev.ecur[p], dev.escratch[p], ne)
        return int(dev.escratch[p])

    def shard(self, arrays, wanted, front, hmsg, dense):
        """Gather of one delivered shard, every direction; the accumulator is the per-vertex one
        at the shard's offset (dense) or the per-interval one."""
        dev, ks = self.dev, self.ks
        i = arrays.shard
        lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
        nv = hi - lo
        if nv == 0:
            return
        acc = int(dev.acc) + lo * self.msg_size if dense else int(dev.acc)
        acc_valid = dense  # dense: acc was filled for every vertex in begin()
        for d in self.dirs:
            indptr, nbr = arrays[f"{d}/indptr"], arrays.ids(ID_NAMES[d])
            ne = int(arrays.edges[d])
            props = [self.edge_prop(arrays, d, p, i, ne) for p in ks.gather_props]
            strategy = self.strategy(wanted)
            self.counts[strategy] += 1
            if strategy == "merge":
                if not acc_valid:
                    dev.launch("fill", nv, acc, nv)
                    acc_valid = True
                threads = (ne + self.merge_items - 1) // self.merge_items
                dev.launch("gather_merge_" + d, threads, indptr, nbr, *props, hmsg, lo, nv, ne, front, acc,
                           self.merge_items)
            else:
                dev.launch("gather_twc_" + d, nv, indptr, nbr, *props, hmsg, lo, nv, front, acc,
                           1 if acc_valid else 0)
                acc_valid = True

    def resident(self, arrays_list, strategies, hmsg):
        """Dense gather of several resident shards: one launch per direction and strategy."""
        dev = self.dev
        self.counts["batched"] += len(arrays_list)
        groups = {}
        for d in self.dirs:
            for arrays, wanted in zip(arrays_list, strategies):
                groups.setdefault((d, self.strategy(wanted)), []).append(arrays)
        for (d, strategy), members in groups.items():
            addr, rows, blocks = self._table(d, strategy, members)
            self.counts[strategy] += len(members)
            if not rows:
                continue
            extra = self.merge_items if strategy == "merge" else 1
            dev.fn[f"gather_{strategy}_multi_{d}"].launch(
                (blocks, 1), (BLOCK, 1, 1), dev.ex.compute, addr, rows, hmsg, 0, dev.acc, extra)

    def table(self, d, members, transfer, strategy="twc"):
        """(device address, rows, blocks) of the table of a multi-shard launch over ``members``
        (``"twc"``: a thread per vertex, the TWC gathers' and the push kernels' rows; ``"merge"``:
        a thread per ``merge_items`` edges, the edge-balanced push's), whose arrays come by
        ``transfer`` and never move (resident, or mapped host memory)."""
        return self._table(d, strategy, members, transfer)

    def _table(self, d, strategy, members, transfer="resident"):
        """The table of a multi-shard gather, written into the scratch region (built once per
        key: a dense run repeats the same groups every iteration)."""
        key = (d, strategy, transfer, tuple(a.shard for a in members))
        if key in self.tables:
            return self.tables[key]
        rows, block = [], 0
        for arrays in members:
            i = arrays.shard
            lo, hi = int(self.intervals[i]), int(self.intervals[i + 1])
            ne = int(arrays.edges[d])
            work = hi - lo if strategy == "twc" else (ne + self.merge_items - 1) // self.merge_items
            blocks = (work + BLOCK - 1) // BLOCK
            if blocks == 0:
                continue
            ids = arrays.ids(ID_NAMES[d])   # one address, or a compressed array's four
            rows.append([arrays[f"{d}/indptr"], *(ids if isinstance(ids, tuple) else (ids,))]
                        + [arrays[f"{d}/{p}"] for p in self.ks.gather_props] + [lo, hi - lo, ne, block])
            block += blocks
        table = np.asarray(rows, dtype=np.int64).reshape(-1)
        assert not rows or len(rows[0]) == tab_width(len(self.ks.gather_props), self.ks.id_bits > 0)
        if self.tab_used + table.size > self.tab_words:
            # every key of a dense run fits at once (each resident shard is in one key per
            # direction); another grouping starts over once the launches using the old tables ran
            self.dev.ex.compute.synchronize()
            self.tables, self.tab_used = {}, 0
        addr = 0
        if rows:
            addr = int(self.tab_dev) + 8 * self.tab_used
            self.dev.cuda.memcpy_htod_async(addr, table, self.dev.ex.compute)
            self.tab_used += table.size
        self.tables[key] = (addr, len(rows), block)
        return self.tables[key]
