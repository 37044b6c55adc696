"""Gauss-Seidel pull iterations on the device (publish "unit", plan.py): each unit's interval of
``nxt`` is copied into ``cur`` after its apply, so later units gather the labels just written.
CC and SSSP pulled in memory, at a quarter budget (transfer auto: copies and zero-copy units),
through one slot, and reading the store through staging: equal to the Jacobi plans
(``publish_unit=False``) and to scipy, in no more iterations. The planner's side runs without a
GPU (tests/engine/test_publish_unit.py)."""
import numpy as np
import pytest

import grstream as gr

from .test_cuda_backend import build
from .test_push import graph, push_model, reference
from .test_push_transfers import PROGRAMS


def _budget(kind, program, store):
    if kind == "all":
        return {}
    model = push_model(program, store)
    fixed, largest = model.static_bytes + model.scratch_bytes, max(model.regions)
    if kind == "quarter":
        return {"memory_budget": fixed + max(sum(model.regions) // 4, largest), "pinned_budget": 1 << 30}
    return {"memory_budget": fixed + largest, "pinned_budget": None if kind == "minimum" else largest}


@pytest.fixture(scope="module")
def gs_store(tmp_path_factory):
    rng = np.random.default_rng(7)
    n, src, dst, w = graph(rng)
    # a long path through the ids, so that labels have far to travel between shards
    path = np.arange(600, 699)
    src, dst = np.concatenate([src, path]), np.concatenate([dst, path + 1])
    w = np.concatenate([w, np.ones(len(path))])
    return (n, src, dst, w), build(tmp_path_factory.mktemp("gs"), n, src, dst, w, num_shards=8)


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["all", "quarter", "minimum", "staging"])
@pytest.mark.parametrize("name", ["cc", "sssp"])
def test_gauss_seidel_pull_equals_jacobi_and_scipy(gpu, gs_store, name, kind):
    (n, src, dst, w), store = gs_store
    make, field = PROGRAMS[name]
    expect = reference(name, n, src, dst, w)
    runs = {}
    for unit in (False, True):
        r = gr.run(make(), store, device="cuda", direction="pull",
                   backend_options={"publish_unit": unit}, **_budget(kind, make(), store))
        np.testing.assert_array_equal(r.values[field], expect, err_msg=f"{name} {kind} unit={unit}")
        runs[unit] = r
    published = {s.plan["publish"] for s in runs[True].stats}
    assert "unit" in published, published
    assert {s.plan["publish"] for s in runs[False].stats} <= {"copy", "none"}
    assert runs[True].iterations <= runs[False].iterations
