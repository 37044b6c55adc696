"""How the planner groups an iteration's shards into units (Planner's half that only arranges):
loaded resident shards batched into runs where the executor allows, split among workers or by
``caps.batching.unit_edges``; shards loaded the first time; streamed shards sharing one copy where they
lie next to each other in the pinned cache; resident and streamed units alternating so that each
copy overlaps a resident unit's compute. Kept apart from planner.py, which decides what the units
are for (direction, transfer, phases)."""
from dataclasses import replace

import numpy as np

from .capabilities import BatchResident, Feature
from .plan import Unit

#: the batching modes that batch the resident shards of dense plans
DENSE_BATCHES = (BatchResident.DENSE, BatchResident.DENSE_PUSH)
#: below this many active edges a plan runs its units in order on one thread (a pool round trip
#: costs more than the work), and a run of resident shards is not split among workers
PARALLEL_EDGES = 1 << 16


class UnitGrouping:
    """Mixin of :class:`grstream.engine.planner.Planner`: the unit-building methods."""

    def _units(self, shards, counts, dense, push=False, single=False):
        """The units over ``shards``; ``single``: one shard each (asynchronous push plans)."""
        mode = self.caps.batching.resident
        tabled = mode is BatchResident.DENSE_PUSH and push and not single   # one launch over a shard table
        batch = not single and (mode is BatchResident.ALWAYS or (mode in DENSE_BATCHES and dense) or tabled)
        resident_units, loads, streamed, held = [], [], [], []
        in_slot = self._held_shards(push)
        if dense and in_slot:
            # a dense plan's first copy goes into a slot none of its units holds: it starts with
            # the iteration instead of after a held unit's kernels (which in a dense plan follow
            # the accumulator fill, the hoisted messages and a resident chunk; holding every slot
            # of a dense PageRank loses time per iteration:
            # docs/BENCHMARKS.md, "Measured constants")
            in_slot = {i: s for i, s in in_slot.items() if s != self._slot}
        run = []
        touched = set(shards)
        for i in shards:
            if self._is_ready(i):
                if batch:
                    if run and not tabled and not self._same_run(run[-1], i, touched):
                        resident_units.append(run)
                        run = []
                    run.append(i)
                else:
                    resident_units.append([i])
            elif i in self.resident:
                loads.append(i)
                self.mark_loaded(i)
            elif i in in_slot:
                held.append(i)
            elif streamed and not single and self._joins(streamed[-1], i):
                streamed[-1].append(i)
            else:
                streamed.append([i])
        if run:
            resident_units.append(run)
        resident_units = [u for r in resident_units for u in self._split(r)]
        direction = "push" if push else "pull"

        def mk(group, transfer, counts, **where):
            return self._unit(group, transfer, counts, direction=direction, **where)
        res = [mk(u, "resident", counts) for u in resident_units]
        loads = [mk([i], "load", counts) for i in loads]
        self._store_bytes = sum(u.nbytes for u in loads)
        self._from_store = {i for u in loads for i in u.shards}   # this plan's store reads
        # held shards: one unit per slot, nothing moves; the copies start with their slots in the
        # same order and each held unit runs right before the copy that refills its slot (which
        # waits for its kernels), so the link waits for one held unit's kernels, not for all
        by_slot = {}
        for i in held:
            by_slot.setdefault(in_slot[i], []).append(i)
        slots = max(self.memory.slots, 1)
        if dense:   # the copies start at the free slot, then refill the held ones in turn
            kept = [mk(by_slot[s], "held", counts, slot=s)
                    for s in sorted(by_slot, key=lambda s: (s - self._slot - 1) % slots)]
        else:       # the copies start with the held slots, each right after its held unit
            kept = [mk(by_slot[s], "held", counts, slot=s) for s in sorted(by_slot)]
            if kept:
                self._slot = kept[0].slot
        moved = []
        for group in streamed:
            slot = self._slot
            self._slot = (self._slot + 1) % max(self.memory.slots, 1)
            src = "pinned" if group[0] in self.pinned else "store"
            nbytes = self._span_bytes(group)
            moved.append(mk(group, "copy", counts, slot=slot, source=src, nbytes=nbytes))
            read = [i for i in group if src == "store" or i not in self.cache_filled]
            self._store_bytes += sum(self.memory.regions[i] for i in read)
            self._from_store.update(read)
            self.cache_filled.update(i for i in group if i in self.pinned)
        moved = _alternate(kept, moved)
        if mode in DENSE_BATCHES and dense:
            # GPU dense: the batched resident shards spread between the moved units, so that each
            # copy overlaps a resident chunk's kernels
            moved = _alternate(loads, moved)
            flat = [i for u in res for i in u.shards]
            chunks = [[int(i) for i in p] for p in np.array_split(np.asarray(flat, dtype=np.int64),
                                                                   len(moved) + 1)]
            first = [mk(chunks[0], "resident", counts)] if chunks[0] else []
            rest = [mk(c, "resident", counts) if c else None for c in chunks[1:]]
            out = first
            for unit, chunk in zip(moved, rest):
                out.append(unit)
                if chunk is not None:
                    out.append(chunk)
            return out
        if tabled and res:
            # the table unit after the first streamed units; once the transfer modes are known,
            # _spread_table cuts it into chunks queued right before the copies
            k = max(self.memory.slots, 1)
            return _alternate(sorted(loads, key=lambda u: u.shards[0]), moved[:k]) + res + moved[k:]
        return _alternate(sorted(res + loads, key=lambda u: u.shards[0]), moved)

    def _spread_table(self, units, counts):
        """A push plan's table unit of resident shards (one launch, :meth:`_units`), once the
        executor's modes are known, cut into chunks placed right before the plan's copies (chunk
        m before the copy at m / pieces of them; as many pieces as copies, at most one shard
        each), after every held unit. The executor issues a unit's copy and then its kernels,
        and one compute stream runs the units' kernels in plan order, each streamed unit's after
        its copy: a chunk queued right before a copy's kernels runs while that copy moves, so
        the link and the kernels work at once from the plan's first copy on, and the last copy
        is followed by its own kernels alone; a copy into a held unit's slot waits for that
        unit's kernels, which, queued first, end before the copies need their slots. A chunk
        queued behind a copy's kernels waits for that copy (the whole table behind the first
        ``slots`` copies: the resident work waits for them all, and a held unit's kernels behind
        it hold back the copy into its slot). Units read in place or held are not copies: a plan
        without copies keeps the table whole where it is (one launch)."""
        if self.caps.batching.resident is not BatchResident.DENSE_PUSH:
            return units
        tables = [k for k, u in enumerate(units) if u.transfer == "resident" and u.direction == "push"]
        if len(tables) != 1:
            return units
        table = units[tables[0]]
        copies = [j for j, u in enumerate(units) if u.transfer in ("copy", "compact")]
        pieces = min(len(copies), len(table.shards))
        if pieces < 1:
            return units
        strategy = dict(zip(table.shards, table.balance))
        chunks = [replace(table, shards=tuple(int(i) for i in c), balance=tuple(strategy[int(i)] for i in c),
                          active=int(sum(int(counts[i]) for i in c)))
                  for c in np.array_split(np.asarray(table.shards, dtype=np.int64), pieces)]
        before = {copies[m * len(copies) // pieces]: chunk for m, chunk in enumerate(chunks)}
        out = [u for u in units if u.transfer == "held"]
        for j, u in enumerate(units):
            if j in before:
                out.append(before[j])
            if j != tables[0] and u.transfer != "held":
                out.append(u)
        return out

    def _held_shards(self, push):
        """Shard -> slot of the shards the streaming slots still hold (``self.held``: a copy's
        shards, one range of the pinned cache for several), with the arrays a plan of this
        direction reads (a push copy moved only the push arrays)."""
        if "held" not in self.caps.transfers or self.caps.forced.transfer != "auto":
            return {}   # a forced transfer mode moves every streamed shard that way
        return {i: slot for slot, (shards, kind) in self.held.items() if push or kind == "all" for i in shards}

    def remember_slots(self, units):
        """What each streaming slot holds after ``units`` ran in order: a "copy" unit's shards
        (with the arrays it moved), nothing after a "compact" unit (a packed part)."""
        for u in units:
            if u.slot is None or u.transfer == "held":
                continue
            if u.transfer == "copy":
                self.held[u.slot] = (tuple(u.shards), "push" if u.direction == "push" else "all")
            else:
                self.held.pop(u.slot, None)

    def _early(self, units):
        """``units`` with the copy that the previous plan's ahead copy moved marked ``early``: the
        "copy" unit of those shards into that slot, where no unit before it writes the slot.
        The promise is used up by this plan either way (the executor joins the copy)."""
        promised, self._promised = self._promised, None
        if promised is None:
            return units
        out = list(units)
        for k, u in enumerate(out):
            if u.slot == promised.slot and u.transfer != "held":
                if u.transfer == "copy" and u.shards == promised.shards:
                    out[k] = replace(u, early=True)
                break
        return out

    def _ahead(self, shards):
        """The first copy of the next dense plan over ``shards`` when it can start now (after
        this plan's units; ``Feature.COPY_AHEAD``): the shards the next plan would stream first
        into the slot it would copy into first, all filled in the pinned cache (None: none).
        From now on that slot holds them (``self.held``)."""
        if not (self.dense and self.spec.activate == "all" and self.caps.has(Feature.COPY_AHEAD)
                and not self.lanes and self.memory.slots and self.caps.forced.transfer == "auto"):
            return None
        in_slot = {i: s for i, s in self._held_shards(False).items() if s != self._slot}
        group = []
        for i in shards:
            if self._is_ready(i) or i in self.resident or i in in_slot:
                continue
            if not group:
                group = [i]
            elif self._joins(group, i):
                group.append(i)
            else:
                break
        if not group or any(i not in self.pinned or i not in self.cache_filled for i in group):
            return None
        unit = self._unit(group, "copy", self.sizes, slot=self._slot, source="pinned",
                          nbytes=self._span_bytes(group))
        self.held[unit.slot] = (unit.shards, "all")
        self._promised = unit
        return unit

    def _batch_zerocopy(self, units):
        """Push units read in place, as one unit (after the executor's modes; ``batching.resident``
        DENSE_PUSH: the executor runs a multi-shard push unit as one launch over a table of
        its shards, whose mapped addresses never change), where the first of them was."""
        if self.caps.batching.resident is not BatchResident.DENSE_PUSH:
            return units
        zc = [u for u in units if u.transfer == "zerocopy" and u.direction == "push"]
        if len(zc) < 2:
            return units
        shards = sorted(i for u in zc for i in u.shards)
        strategy = {i: b for u in zc for i, b in zip(u.shards, u.balance)}
        merged = replace(zc[0], shards=tuple(shards), balance=tuple(strategy[i] for i in shards),
                         active=sum(u.active for u in zc), nbytes=sum(u.nbytes for u in zc))
        first, batched = units.index(zc[0]), {id(u) for u in zc}
        return [merged if k == first else u for k, u in enumerate(units) if k == first or id(u) not in batched]

    def _is_ready(self, i):
        """Resident shard ``i`` is loaded (remembered: it stays until the session evicts)."""
        ready = self._ready
        return i in ready or (i in self.resident and self.loaded(i) and not ready.add(i))

    def _same_run(self, a, b, touched):
        """Whether loaded resident shards a < b can share a unit: every shard between them is
        resident and skipped this iteration, so one pass over the run's data covers both and no
        other unit works on the vertices between them."""
        return all(j in self.resident and j not in touched for j in range(a + 1, b))

    def _split(self, run):
        """A run of resident shards as ``workers`` units of about equal edges when worth it, and
        in pieces of at most ``caps.batching.unit_edges`` edges (one shard at least)."""
        limit, k = self.caps.batching.unit_edges, self.caps.workers
        if len(run) <= 1 or (limit is None and k <= 1):
            return [run]
        total = sum(self._edges[i] for i in run)
        if limit is not None and total > limit:
            pieces, cur, size = [], [], 0
            for i in run:
                if cur and size + int(self.unit_edges[i]) > limit:
                    pieces.append(cur)
                    cur, size = [], 0
                cur.append(i)
                size += int(self.unit_edges[i])
            return pieces + [cur]
        if k <= 1 or total < PARALLEL_EDGES:
            return [run]
        cum = np.cumsum(self.unit_edges[run])
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, k) / k, side="left") + 1
        bounds = [0] + sorted(set(int(c) for c in cuts if 0 < c < len(run))) + [len(run)]
        return [run[a:b] for a, b in zip(bounds, bounds[1:])]

    def _unit(self, shards, transfer, counts, slot=None, source="", nbytes=None, direction="pull"):
        """A unit of ``shards``; a pull unit takes the policy's strategies, a push unit the
        executor's push walk (``caps.push.balance``), which :func:`.balance.as_run` settles
        once its transfer is chosen (the policy's choice would not be read)."""
        actives = [int(counts[i]) for i in shards]
        if nbytes is None:
            nbytes = self._span_bytes(shards) if transfer == "load" else 0
        if direction == "push" and self.caps.push is not None and self.caps.push.balance is not None:
            strategies = (self.caps.push.balance,) * len(shards)
        else:
            strategies = tuple(self.policies.balance([self.facts[i] for i in shards], actives, self.spec,
                                                     self.caps))
        return Unit(shards=tuple(int(i) for i in shards), transfer=transfer, balance=strategies,
                    direction=direction, slot=slot, source=source, active=int(sum(actives)),
                    nbytes=int(nbytes))

    def _span_bytes(self, group):
        """Bytes one copy of ``group`` moves: the pinned-cache span from its first shard's start to
        its last shard's end (one range), or the sum of the regions."""
        regions = self.memory.regions
        if len(group) > 1:
            offs = self.memory.pinned_offsets
            return offs[group[-1]] + regions[group[-1]] - offs[group[0]]
        return int(regions[group[0]])

    def _joins(self, unit, j):
        """Streamed shard ``j`` can share ``unit``'s copy: both in the pinned cache, ``j`` right
        after the unit's last shard there, and the whole range fits one slot."""
        if not self.caps.batching.copies:
            return False
        offs, regions = self.memory.pinned_offsets, self.memory.regions
        last = unit[-1]
        if j not in offs or last not in offs or offs[j] != offs[last] + regions[last]:
            return False
        return offs[j] + regions[j] - offs[unit[0]] <= self.memory.slot_bytes


def _alternate(first, second):
    """first[0], second[0], first[1], second[1], ... then the rest of the longer one."""
    out = []
    for k in range(max(len(first), len(second))):
        if k < len(first):
            out.append(first[k])
        if k < len(second):
            out.append(second[k])
    return out
