"""The CUDA executor's typed options (``gr.run(..., backend_options=...)``, Session keywords).

Free of CUDA calls: options are checked when the session is made, before any device work.
"""
from dataclasses import dataclass
from typing import ClassVar, Optional

import numpy as np

from ...engine.contract import ExecutorOptions
from ...errors import UsageError
from .loadbalance import forced_strategy
from .pushes import HUB_EDGES
from .transfer import TRANSFERS


def _integer(name, value, least, none_ok=False):
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise UsageError(f"{name} must be an integer >= {least}, not {value!r}")


def _flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise UsageError(f"{name} must be True or False, not {value!r}")


@dataclass(frozen=True)
class CudaOptions(ExecutorOptions):
    """Options of the CUDA executor.

    load_balance : {"auto", "twc", "merge"}
        The gather strategy the planner's policy takes (:func:`.loadbalance.cuda_policy`):
        ``auto`` chooses per shard.
    deterministic : bool
        Gather without floating-point atomics (TWC only: one owner per destination, reductions in
        a fixed tree order): results are bit-identical from run to run and under every budget.
        Default False: the merge split combines the parts of a vertex cut by a thread boundary
        with atomics, whose order varies in the last bits (docs/GPU.md).
    streams : int
        Copy streams a unit's arrays are sprayed over (default 4).
    slots, slot_bytes
        Streaming slots and their target size (default: :meth:`CudaFacts.memory_options`).
    merge_items : int
        Edges per thread of the merge-path gather (default None: ``skeletons.MERGE_PER_THREAD`` over
        plain ids, ``blockids.MERGE_WARP_ITEMS`` over compressed ones, whose warps walk their
        threads' edges as one run).
    transfer : {"auto", "copy", "compact", "zerocopy"}
        How streamed shards move (:mod:`.transfer`): the planner's cost model per shard and
        iteration, with shards a slot still holds from the iteration before reused in place
        ("held"), or one mode forced wherever a shard can take it (no shard held).
    hold_slots : bool
        Offer transfer "held" (default True): a streamed shard a slot still holds from an earlier
        iteration of the run is not copied again. False: every streamed shard moves.
    publish_unit : bool
        Offer Gauss-Seidel pull iterations (``Feature.PUBLISH_UNIT``; default True): the planner
        then publishes each unit's vertices right after its apply for programs declaring
        ``asynchronous = True``. False: every pull iteration publishes after all its units.
    push_memory : bool
        Offer push-only memory models (``PushFacts.memory``; default True): where every plan of
        a run pushes, the budget's resident shards and slots hold the CSR alone.
    push_hub_edges : int
        Rows with at least this many edges in a push's walk direction are walked by the whole
        GPU (push_kernels.py, ``push_hubs``) instead of by one block each; 0 turns the hub path
        off. Default ``pushes.HUB_EDGES``.
    push_merge : bool
        Offer the edge-balanced push walk (default True; push_kernels.py ``push_merge``, the
        rule in :func:`grstream.engine.balance.merge_pushes`): a push unit's shard whose rows are
        long (mean push degree ``facts.PUSH_MERGE_DEGREE`` or more) or, on a compressed store,
        whose changed rows hold ``facts.PUSH_MERGE_SHARE`` of its edges or more, is walked by a
        grid over its edges instead of a thread per row. False: the walk by rows throughout.
    """

    BACKEND: ClassVar[str] = "cuda"
    RETIRED: ClassVar[dict] = {
        "host_cache": "host_cache is gone: the pinned host cache is bounded by pinned_budget "
                      "(gr.run / gr.Session argument, --pinned-budget)"}

    load_balance: str = "auto"
    deterministic: bool = False
    streams: int = 4
    slots: Optional[int] = None
    slot_bytes: Optional[int] = None
    merge_items: Optional[int] = None
    transfer: str = "auto"
    hold_slots: bool = True
    publish_unit: bool = True
    push_memory: bool = True
    push_hub_edges: int = HUB_EDGES
    push_merge: bool = True

    def __post_init__(self):
        for name in ("deterministic", "hold_slots", "publish_unit", "push_memory", "push_merge"):
            _flag(name, getattr(self, name))
        forced_strategy(self.load_balance, self.deterministic)
        if self.transfer not in TRANSFERS:
            raise UsageError(f"transfer must be one of {', '.join(TRANSFERS)}, not {self.transfer!r}")
        _integer("streams", self.streams, 1)
        _integer("slots", self.slots, 1, none_ok=True)
        _integer("slot_bytes", self.slot_bytes, 0, none_ok=True)
        _integer("merge_items", self.merge_items, 1, none_ok=True)
        if isinstance(self.push_hub_edges, bool) or not isinstance(self.push_hub_edges, (int, np.integer)) \
                or self.push_hub_edges < 0:
            raise UsageError(f"push_hub_edges must be an integer >= 0 (0: off), not {self.push_hub_edges!r}")

    @property
    def balance(self):
        """The strategy these options force on the planner ("auto": none)."""
        return forced_strategy(self.load_balance, self.deterministic)
