"""Push-only memory models on the device (direction.push_only): BFS and SSSP, which push
throughout under the GPU's threshold, hold only their CSR (and SSSP's out-edge weights) in the
budget's resident shards and slots; results equal pull + copy and scipy in every transfer mode,
more shards stay resident than with the pull arrays held too, and a run whose seed is not silent
gets the pull arrays and pulls (tests/engine/test_push_memory.py runs the engine's side on the
CPU)."""
import numpy as np
import pytest

import grstream as gr

from ...engine.test_push_memory import OtherZero
from .test_cuda_backend import build
from .test_push import SOURCE, graph, push_model, reference
from .test_push_transfers import PROGRAMS


@pytest.fixture(scope="module")
def pm_store(tmp_path_factory):
    n, src, dst, w = graph(np.random.default_rng(17))
    return (n, src, dst, w), build(tmp_path_factory.mktemp("pushmem"), n, src, dst, w, num_shards=12)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_push_only_memory_equals_pull_and_scipy(gpu, pm_store, name):
    (n, src, dst, w), store = pm_store
    make, field = PROGRAMS[name]
    model = push_model(make(), store)
    mem = model.static_bytes + model.scratch_bytes + max(sum(model.regions) // 4, max(model.regions))
    expect = reference(name, n, src, dst, w)
    common = dict(device="cuda", memory_budget=mem, pinned_budget=1 << 30)
    base = gr.run(make(), store, direction="pull", backend_options={"transfer": "copy"}, **common)
    np.testing.assert_array_equal(base.values[field], expect)
    kept = {}
    for offer in (True, False):
        for mode in ("auto", "zerocopy", "copy"):
            r = gr.run(make(), store, backend_options={"transfer": mode, "push_memory": offer}, **common)
            what = f"{name} push_memory={offer} transfer={mode}"
            np.testing.assert_array_equal(r.values[field], expect, err_msg=what)
            assert {s.plan["plan_direction"] for s in r.stats} == {"push"}, what
            assert all(a.startswith("out/") for a in r.info["arrays"]) == offer, what
            kept[offer] = r.info["memory"]["resident_shards"]
    assert kept[True] > kept[False], kept


@pytest.mark.cuda
def test_a_run_that_must_pull_gets_the_pull_arrays_on_the_device(gpu, pm_store):
    (n, src, dst, w), store = pm_store
    model = push_model(gr.algorithms.bfs.BFS(), store)
    mem = model.static_bytes + model.scratch_bytes + max(sum(model.regions) // 4, max(model.regions))
    expect = gr.run(OtherZero(source=SOURCE), store, direction="pull").values["level"]   # the CPU
    with gr.Session(store, device="cuda", memory_budget=mem, pinned_budget=1 << 30) as s:
        first = s.run(gr.algorithms.bfs.BFS(source=SOURCE))
        other = s.run(OtherZero(source=SOURCE))
        again = s.run(gr.algorithms.bfs.BFS(source=SOURCE))
    assert first.info["arrays"] == ["out/indptr", "out/dst"] and "in/src" in other.info["arrays"]
    np.testing.assert_array_equal(other.values["level"], expect)
    np.testing.assert_array_equal(first.values["level"], reference("bfs", n, src, dst, w))
    np.testing.assert_array_equal(again.values["level"], first.values["level"])
