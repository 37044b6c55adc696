"""The engine's public contract with executors: the one module a backend imports the engine by.

An executor class (grstream/engine/executor.py) runs the plans the engine builds; it receives
and returns only what is named here:

- the interface and its typed facts: :class:`Executor`, :class:`Capabilities` (with
  :class:`Batching`, :class:`BatchResident`, :class:`Feature`, :class:`PushFacts`,
  :class:`Forced`), :class:`ExecutorOptions`, :class:`Setup`, :class:`Policies`;
- what it executes and reports: :class:`IterationPlan`, :class:`Unit`, :class:`Readback`,
  :class:`IterationStats`, under ranks :class:`Touched`, and :class:`RunState` (a run
  between iterations, for checkpoints);
- its memory: :class:`Footprint`, :class:`MemoryModel`, :class:`Ledger`, ``resident_runs``,
  ``residency_key``;
- program facts the engine derives once and executors size buffers by: ``is_dense``,
  ``gather_directions``, ``hoistable``, ``needed_arrays``, ``push_arrays``,
  ``activation_arrays``, ``dataset_dtype``, ``shard_bytes``, ``seed_ids``, ``union_ids``;
  a compressed store's id datasets as stored (``ID_NAMES``, ``id_parts``, ``stored_names``,
  ``select``: the names of a memory model that belong to given datasets);
- the inputs of its policies: :class:`ShardFacts` (load balance; :func:`group_max`, its
  row-group maxima), :class:`LinkCosts` (calibration), and the ``compaction`` helpers every executor packs active rows with.
"""
from . import compaction
from .backend import IterationStats
from .balance import ShardFacts, group_max
from .capabilities import (BASIC_TRANSFERS, BatchResident, Batching, Capabilities, ExecutorOptions,
                           Feature, Forced, Policies, PushFacts, Setup)
from .costs import LinkCosts
from .executor import Executor
from .memory import Footprint, Ledger, MemoryModel, residency_key, resident_runs
from .plan import PHASES, IterationPlan, Readback, RunState, Touched, Unit
from .schedule import (ID_NAMES, activation_arrays, dataset_dtype, gather_directions, hoistable,
                       id_parts, is_dense, needed_arrays, push_arrays, select, shard_bytes, stored_names)
from .state import seed_ids, union_ids

__all__ = ["BASIC_TRANSFERS", "PHASES", "BatchResident", "Batching", "Capabilities", "Executor",
           "ExecutorOptions", "Feature", "Footprint", "Forced", "IterationPlan", "IterationStats",
           "Ledger", "LinkCosts", "MemoryModel", "Policies", "PushFacts", "Readback", "RunState",
           "Setup", "ShardFacts", "Touched", "Unit", "activation_arrays", "compaction", "dataset_dtype",
           "gather_directions", "hoistable", "is_dense", "needed_arrays", "push_arrays",
           "residency_key", "resident_runs", "seed_ids", "shard_bytes", "union_ids",
           "ID_NAMES", "id_parts", "select", "stored_names", "group_max"]
