"""The typed executor contract: small frozen capabilities, typed options that refuse unknown
keys, policies handed over by the executor class, plans that say what runs, internal errors."""
import dataclasses

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.pagerank import PageRank
from grstream.backends.cpu.executor import CpuExecutor
from grstream.backends.cuda.executor import CudaExecutor
from grstream.backends.cuda.options import CudaOptions
from grstream.cli import main
from grstream.engine import balance
from grstream.engine.capabilities import (Batching, BatchResident, Capabilities, Feature, Forced,
                                          PushFacts)
from grstream.engine.direction import NEXT_QUEUE_DIV
from grstream.engine.memory import Footprint, plan_memory
from grstream.engine.schedule import needed_arrays
from grstream.errors import EXIT_INTERNAL, InternalError, UsageError

from ..algorithms.conftest import build
from .contract_helpers import policies_for
from .test_planner import chain, planner  # noqa: F401  (chain is a fixture)


@pytest.mark.parametrize("cls", [Capabilities, Batching, PushFacts, Forced])
def test_capabilities_are_small_and_frozen(cls):
    assert len(dataclasses.fields(cls)) <= 12
    assert cls.__dataclass_params__.frozen


def test_executor_classes_state_their_capabilities_as_typed_objects(chain):  # noqa: F811
    cpu = CpuExecutor.capabilities(CpuExecutor.make_setup(chain))
    gpu = CudaExecutor.capabilities(CudaExecutor.make_setup(chain))
    assert cpu.batching.resident is BatchResident.ALWAYS and cpu.has(Feature.LOCAL_ROUNDS)
    assert gpu.batching.resident is BatchResident.DENSE_PUSH and gpu.batching.shard_phases
    assert not gpu.has(Feature.ADAPTIVE_HOIST) and gpu.push.memory
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpu.workers = 3


@pytest.mark.parametrize("device_options", [CpuExecutor.Options, CudaOptions])
def test_unknown_executor_options_are_refused_naming_the_valid_ones(device_options):
    with pytest.raises(UsageError, match="'bogus'") as err:
        device_options.of({"bogus": 1})
    for name in device_options.names():
        assert name in str(err.value)


def test_the_cpu_refuses_unknown_backend_options_and_a_pinned_budget(chain):  # noqa: F811
    with pytest.raises(UsageError, match="bogus.*valid options: threads, transfer"):
        gr.run(BFS(source=0), chain, backend_options={"bogus": 1})
    with pytest.raises(UsageError, match="pinned_budget"):
        gr.run(BFS(source=0), chain, pinned_budget=1 << 20)
    for bad in ({"threads": 0}, {"threads": 1.5}, {"transfer": "zerocopy"}):
        with pytest.raises(UsageError):
            gr.Session(chain, **bad)


def test_the_cli_refuses_a_pinned_budget_on_the_cpu(chain, capsys):  # noqa: F811
    status = main(["run", "bfs", str(chain.path), "--pinned-budget", "1M"])
    assert status == 2 and "pinned_budget" in capsys.readouterr().err


def test_cuda_options_are_checked_without_a_device():
    assert CudaOptions.of({}).push_hub_edges > 0
    for bad in ({"streams": 0}, {"slots": 0}, {"slot_bytes": -1}, {"merge_items": 0},
                {"deterministic": "yes"}, {"transfer": "teleport"}, {"load_balance": "fastest"}):
        with pytest.raises(UsageError):
            CudaOptions.of(bad)
    with pytest.raises(UsageError, match="pinned_budget"):
        CudaOptions.of({"host_cache": 1})


def test_policies_come_from_the_executor_class_not_from_registration():
    assert not hasattr(balance, "POLICIES") and not hasattr(balance, "register")
    facts = [balance.ShardFacts(0, 10001, (("in", 300000),), (("in", 200000),)),
             balance.ShardFacts(1, 1000, (("in", 16000),), (("in", 16),))]
    caps = CudaExecutor.capabilities(CudaExecutor.make_setup())
    policy = CudaExecutor.policies(CudaExecutor.make_setup()).balance
    assert policy(facts, [10001, 1000], PageRank.spec, caps) == ("merge", "twc")
    assert CpuExecutor.policies(CpuExecutor.make_setup()).calibration is None


def test_multi_shard_pull_units_of_one_interval_executors_run_per_shard(tmp_path):
    src = np.arange(79)
    store = build(tmp_path, 80, src, src + 1, num_shards=8)
    fp = Footprint(static={"state": 100}, alignment=64)
    region = max(plan_memory(store, needed_arrays(BFS.spec), fp).regions)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE, shard_phases=True))
    p, _ = planner(store, BFS(source=0), budget=100 + 8 * region - 1, caps=caps,
                   slot_bytes=10_000, pinned_budget=10_000)
    plan = p.plan(1, np.full(8, 10), all_active=False)
    assert any(len(u.shards) > 1 for u in plan.units)
    assert plan.phase_scope == "shard" and "phases per shard" in str(plan)
    one = dataclasses.replace(caps, batching=Batching(BatchResident.DENSE))
    p, _ = planner(store, BFS(source=0), budget=100 + 8 * region - 1, caps=one,
                   slot_bytes=10_000, pinned_budget=10_000)
    assert p.plan(1, np.full(8, 10), all_active=False).phase_scope == "unit"


def test_queue_plans_say_how_large_a_next_frontier_stays_a_queue(chain):  # noqa: F811
    caps = Capabilities("cpu", frontier_formats=("bitmap", "queue"))
    p, _ = planner(chain, BFS(source=0), caps=caps)
    queue = p.plan(1, np.array([0, 0, 0, 0]), all_active=False)
    assert queue.frontier_format == "queue" and queue.next_queue == (40 - 1) // NEXT_QUEUE_DIV
    assert p.plan(2, np.array([10, 10, 10, 10]), all_active=False).next_queue == 0


def test_a_plan_against_the_engines_invariants_is_an_internal_error(chain):  # noqa: F811
    p, _ = planner(chain, BFS(source=0))
    p.pull_room = False
    with pytest.raises(InternalError, match="bug in grstream") as err:
        p.plan(1, np.array([1, 0, 0, 0]), all_active=False)
    assert err.value.exit_code == EXIT_INTERNAL == 70


def test_the_cuda_gathers_refuse_a_strategy_their_kernels_do_not_run():
    from types import SimpleNamespace

    from grstream.backends.cuda.gathers import Gathers
    g = Gathers.__new__(Gathers)
    g.spec, g.ks = PageRank.spec, SimpleNamespace(merge_ok=False)
    assert g.strategy("twc") == "twc"
    with pytest.raises(InternalError, match="merge"):
        g.strategy("merge")
