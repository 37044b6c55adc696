"""The GPU executor's vertex-set phases: activation (the seeding pass too), scatter, a dense plan's
apply and the aggregates, and the changed set a gather_from "changed" program gathers from;
mixed into :class:`.executor.CudaExecutor` (``self.dev``, ``self.store``, ``self.sizes``,
``self.act_pairs``, ``self.seed_idx``, ``self.span`` are its)."""
import numpy as np

#: seeds up to this many mark their neighbours edge-parallel; more go through the activation kernel
SEED_LIST = 64


def whole_graph(ex):
    """Whether executor ``ex`` holds every vertex's state alone: no lanes, no MPI rank's span."""
    return ex.lane_runs is None and ex.setup_span is None and ex.span == (0, ex.dev.n)


class VertexPhases:
    """Activation, seeding, scatter and the changed set of gather_from "changed" programs; the
    next dense plan's first passes queued behind a read back."""

    _begun = False   # the next plan's hoist and fill are queued (_early_begin)
    _reduced = None   # the plan whose dense apply reduced its aggregates (_apply_all)

    def _apply_all(self, plan):
        """A dense plan's apply: every vertex (of the span), one launch over the accumulator.
        Where the plan reduces aggregates over the whole graph (one executor, no lanes), the
        same launch takes their terms from the state it writes (``apply_agg``): the vertex state
        is passed over once, and :meth:`reduce` finds the plan's aggregates done."""
        dev = self.dev
        lo, hi = self.span
        if plan.reduce and "apply_agg" in dev.fn and whole_graph(self):
            dev.apply_aggregates(lo, hi - lo, self._acc_at(lo))
            self._reduced = plan
            return
        dev.launch("apply", hi - lo, lo, hi - lo, 0, self._acc_at(lo), 0, 0, 0, 0, 0, dev.rb_dev)

    def reduce(self, plan):
        """The plan's aggregates over the published state, unless its apply reduced them."""
        if plan.reduce and self._reduced is not plan:
            self.dev.reduce_aggregates()
        self._reduced = None

    def _early_begin_ok(self, plan):
        """Whether the next plan's hoisted messages and accumulator fill can be queued behind
        ``plan``'s read back: ``plan`` is a dense hoisted pull of a program every plan of which
        is one (``activate = "all"``), whose messages read nothing that changes between
        iterations (aggregates, ``self.iteration``), on one executor of the whole graph."""
        if not (plan.dense and plan.hoist and plan.direction == "pull" and not plan.seed
                and not plan.activation and self.spec.activate == "all" and not self.pushes.available
                and whole_graph(self)):
            return False
        info = self.spec.analysis.methods.get("gather_map")
        return info is not None and not info.aggregates and "iteration" not in info.self_builtins

    def _early_begin(self):
        """Queue the next plan's hoisted messages and accumulator fill (from the values this
        plan published, in stream order; the host reads back meanwhile). A next plan that is
        not a dense hoisted pull overwrites both before reading them; :meth:`begin` of one that
        is skips them (``_begun``); a new state (``load_state``) drops them."""
        dev = self.dev
        dev.launch("hoist", dev.n, dev.n, dev.hmsg)
        lo, hi = self.span
        dev.launch("fill", hi - lo, self._acc_at(lo), hi - lo)
        self._begun = True

    def _changed_seed(self, ids):
        """A gather_from "changed" program's changed set before iteration 1 (``ids`` None: every
        vertex), where no push state keeps it."""
        dev = self.dev
        if ids is None:
            dev.cuda.memset_d32_async(dev.chg[0], 0xFFFFFFFF, (dev.n + 31) // 32, dev.ex.compute)
        else:
            dev.ex.sync()   # (a synchronous copy: the last run's kernels may still read the set)
            dev.set_bitmap(dev.chg[0], ids)

    def changed_sources(self):
        """Device address of the changed set a gather_from "changed" program's gathers read:
        the previous iteration's (GPU ranks: the world's, gpu_rank.py)."""
        return self.dev.chg[0]

    def _activate(self, plan, unit, data):
        dev = self.dev
        for arrays in data:
            i = arrays.shard
            lo, nv = int(dev.intervals[i]), int(self.sizes[i])
            if plan.seed or plan.activation == "seed":
                self._seed(arrays, lo, nv)
                continue
            if plan.activation == "changed":
                # activation-only plan over the previous iteration's changed set (after a push)
                for ptr, ids in self.act_pairs:
                    dev.launch("activate_bits", nv, arrays[ptr], arrays.ids(ids), lo, nv, dev.chg[0], dev.front[1])
                continue
            for ptr, ids in self.act_pairs:
                dev.launch("activate", nv, arrays[ptr], arrays.ids(ids), lo, nv, dev.changed, dev.front[1])

    def _seed(self, arrays, lo, nv):
        """Mark the neighbours of the seed vertices of one shard. Up to SEED_LIST seeds in all mark
        their edges directly, a thread per edge (their edge ranges come from the degree arrays on
        the host, so a hub does not serialise on one block); more become the shard's changed
        flags for the ordinary activation kernel."""
        dev, store = self.dev, self.store
        idx = self.seed_idx
        local = idx[np.searchsorted(idx, lo):np.searchsorted(idx, lo + nv)] - lo
        if idx.size <= SEED_LIST:
            degree = {"out/indptr": store.out_degree, "in/indptr": store.in_degree}
            for ptr, ids in self.act_pairs:
                deg = np.asarray(degree[ptr]())[lo:lo + nv]
                # each seed's row start in the shard's CSR / CSC
                first = ([int(deg[:k].sum()) for k in local] if len(local) <= 4
                         else np.concatenate(([0], np.cumsum(deg)))[local])
                for k, f in zip(local, first):
                    dev.launch("mark", int(deg[k]), arrays.ids(ids), int(f), int(deg[k]), dev.front[1])
            return
        flags = np.zeros(nv, np.uint8)
        flags[local] = 1
        # synchronous copy: the previous shard's activation has read the flags before
        dev.cuda.memcpy_htod(dev.changed, flags)
        for ptr, ids in self.act_pairs:
            dev.launch("activate", nv, arrays[ptr], arrays.ids(ids), lo, nv, dev.changed, dev.front[1])

    def _scatter(self, plan, unit, data):
        dev = self.dev
        props = list(self.ks.translated.edge_props.get("scatter", []))
        for arrays in data:
            i = arrays.shard
            lo, nv = int(dev.intervals[i]), int(self.sizes[i])
            dev.launch("scatter", nv, arrays["out/indptr"], arrays.ids("out/dst"),
                       *[arrays[f"out/{p}"] for p in props], lo, nv, int(self.gathers.out_offset[i]),
                       dev.changed)
