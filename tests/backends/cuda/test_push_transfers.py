"""Push units with transfer modes (issue 8): a zero-copied push unit reads the changed vertices'
rows where they lie in the mapped pinned cache. The movement with a synchronous stand-in and the
kernel variant's source (no GPU), then BFS / SSSP / CC with direction push / auto x transfer
zerocopy / auto / copy on the device (marked cuda), each equal to pull + copy and scipy."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.sssp import SSSP
from grstream.backends.cuda.movement import Mover
from grstream.engine.capabilities import BatchResident, Batching, Capabilities, Forced, PushFacts
from ...engine.contract_helpers import policies_for
from grstream.engine.memory import Ledger
from grstream.engine.planner import Planner
from grstream.engine.schedule import needed_arrays, push_arrays

from .test_cuda_backend import build
from .test_movement import device_view, make_store, model_for
from .test_push import SOURCE, graph, push_model, reference
from .test_transfer_modes import MappedExecutor

ALL = ("resident", "load", "copy", "compact", "zerocopy")


@pytest.mark.parametrize("spec", [BFS.spec, SSSP.spec, ConnectedComponents.spec])
def test_zero_copied_push_units_read_the_mapped_cache_without_a_copy(tmp_path, spec):
    store = make_store(tmp_path)
    names = needed_arrays(spec, push=True)
    model = model_for(store, names, "partial", "all")
    ex = MappedExecutor()
    mover = Mover(store, model, ex, Ledger(model), {}, push_names=push_arrays(spec), mapped=True)
    caps = Capabilities("cuda", batching=Batching(BatchResident.DENSE), transfers=ALL,
                        forced=Forced(transfer="zerocopy"), push=PushFacts())
    planner = Planner(spec, store, model, caps, policies_for(caps))
    counts = np.ones(store.num_shards, np.int64)
    plan = planner.push(1, counts, edges=store.num_shards)
    streamed = [u for u in plan.units if u.transfer not in ("resident", "load")]
    assert streamed and all(u.transfer == "zerocopy" and u.direction == "push" for u in streamed)
    stats = {}
    for unit, data in mover.deliver(plan, stats):
        for arrays in data:
            if unit.transfer == "zerocopy":   # every array the push walks, in place in the cache
                base = mover.cache_dev + model.pinned_offsets[arrays.shard]
                for name in push_arrays(spec):
                    assert arrays[name] == base + model.offsets[arrays.shard][name]
                    np.testing.assert_array_equal(device_view(ex, store, arrays, name),
                                                  store.read(arrays.shard, name))
        ex.shard_done(unit.slot if unit.transfer in ("copy", "compact") else None)
    loaded = [i for u in plan.units if u.transfer == "load" for i in u.shards]
    # nothing streamed was copied: only the shards loaded to stay resident
    assert stats["copied"] == len(loaded) and stats["bytes_h2d"] <= sum(model.regions[i] for i in loaded)
    assert "copy" not in stats["modes"]
    assert stats["modes"]["zerocopy"] == sum(u.nbytes for u in streamed)


def _kernel(source, name):
    """The text of kernel ``grstream_<name>_...`` in a module source."""
    at = source.index(f"grstream_{name}_")
    end = source.find("__global__", at)
    return source[at:end if end >= 0 else len(source)]


def test_zero_copy_push_kernels_are_warp_merged_and_aligned():
    from grstream.backends.cuda.compile import module_source, nvcc_check, nvcc_path
    from grstream.backends.cuda.zerocopy import zerocopy_source
    for cls, walks in ((BFS, ("out",)), (SSSP, ("out",)), (ConnectedComponents, ("out", "in"))):
        ks = module_source(cls.spec, np.int32, {p: np.float64 for p in cls.spec.edge_reads})
        assert tuple(sorted(ks.push_dirs)) == tuple(sorted(walks))
        zc = zerocopy_source(ks.source)
        for d in walks:
            for fmt in ("bitmap", "queue"):
                body = _kernel(zc, f"push_{fmt}_{d}")
                # the warp walk starts at the 128-byte boundary; warp and block walks unrolled
                assert "(b & ~31LL) + lane" in body and "if (j >= b)" in body
                assert body.count("#pragma unroll 8") == 2
                assert "(b & ~31LL)" not in _kernel(ks.source, f"push_{fmt}_{d}")
        if nvcc_path() is not None:
            assert nvcc_check(zc, name=f"zerocopy_push_{cls.__name__}")


# ---------------------------------------------------------------- on the device
PROGRAMS = {"bfs": (lambda: BFS(source=SOURCE), "level"), "sssp": (lambda: SSSP(source=SOURCE), "dist"),
            "cc": (ConnectedComponents, "label")}


@pytest.fixture(scope="module")
def push_store(tmp_path_factory):
    rng = np.random.default_rng(31)
    n, src, dst, w = graph(rng)
    return (n, src, dst, w), build(tmp_path_factory.mktemp("pushzc"), n, src, dst, w, num_shards=12)


@pytest.mark.cuda
@pytest.mark.parametrize("budget", ["quarter", "slots"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_push_transfer_modes_equal_pull_copy_and_scipy(gpu, push_store, name, budget):
    (n, src, dst, w), store = push_store
    make, field = PROGRAMS[name]
    model = push_model(make(), store)
    mem = model.static_bytes + model.scratch_bytes + max(sum(model.regions) // 4, max(model.regions))
    expect = reference(name, n, src, dst, w)
    base = gr.run(make(), store, device="cuda", memory_budget=mem, pinned_budget=1 << 30,
                  direction="pull", backend_options={"transfer": "copy"})
    np.testing.assert_array_equal(base.values[field], expect)
    for direction in ("push", "auto"):
        for mode in ("zerocopy", "auto", "copy"):
            opts = {"transfer": mode}
            if budget == "slots":
                opts.update(slot_bytes=0, slots=3)
            r = gr.run(make(), store, device="cuda", memory_budget=mem, pinned_budget=1 << 30,
                       direction=direction, backend_options=opts)
            what = f"{name} direction={direction} transfer={mode} {budget}"
            np.testing.assert_array_equal(r.values[field], base.values[field], err_msg=what)
            pushed = [s for s in r.stats if s.plan["plan_direction"] == "push"]
            # the budget is the push model's: a run that pulls throughout (CC under "auto", which
            # the direction rule pulls) holds no push buffers (the hub list alone is 96 KiB) and
            # may fit its smaller pull model whole in it; the push runs must stream
            assert r.info["residency"] != "in-memory" or not pushed, what
            modes = {m for s in pushed for m in s.plan["shard_modes"].values()}
            if direction == "push":
                assert pushed, what
            if mode == "zerocopy" and pushed:
                assert "zerocopy" in modes, what
                zc = [s for s in pushed if "zerocopy" in s.plan["shard_modes"].values()]
                assert all(s.transfer_bytes.get("zerocopy", 0) > 0 for s in zc), what
            elif mode == "copy":
                assert modes <= {"copy"}, what
