"""Checkpoints of the algorithms that make several runs (grstream/engine/journal.py): scc,
betweenness (runs and lanes), HITS and delta PageRank stopped by SIGTERM early (in their first
run) and late (after runs whose results the journal saved), resumed, equal the uninterrupted
answer; a resume with other parameters is refused."""
import os
import signal

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms import declaration
from grstream.errors import CheckpointError, Checkpointed

#: algorithm -> (options, iterations (over all its runs) after which SIGTERM comes: early, late)
CASES = {
    "scc": ({}, (2, 9)),
    "bc": ({"k": 12, "seed": 3}, (2, 11)),
    "bc-runs": ({"sources": [0, 5]}, (3, 8)),
    "hits": ({"tol": 1e-6}, (1, 9)),
    "pagerank-delta": ({"method": "delta", "tol": 1e-9}, (3, None)),   # (one phase: one run)
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(3)
    m = 700
    edges = np.column_stack([rng.integers(0, 150, m), rng.integers(0, 150, m), rng.uniform(1, 3, m)])
    path = tmp_path_factory.mktemp("journal") / "g.h5"
    gr.build_shards(edges, path, num_shards=4, weighted=True, progress=False)
    with gr.open(path) as s:
        yield s


def _entry(case):
    return declaration(case.split("-")[0])


def _stopped(store, case, at, folder, **more):
    """Run ``case`` with checkpoints in ``folder``, SIGTERM after ``at`` iterations of its runs."""
    opts, _ = CASES[case]
    seen = [0]

    def callback(st):
        seen[0] += 1
        if seen[0] == at:
            os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(Checkpointed) as stop:
        _entry(case).entry(store, **opts, checkpoint=folder, checkpoint_every=0,
                           callback=callback, **more)
    assert str(folder) in str(stop.value)   # resumed from the algorithm's folder


@pytest.mark.parametrize("case,late", [(case, late) for case, (_, points) in sorted(CASES.items())
                                       for late in (False, True) if points[late] is not None])
def test_a_stopped_algorithm_of_several_runs_resumes_to_the_same_answer(store, tmp_path, case,
                                                                       late):
    opts, points = CASES[case]
    whole = _entry(case).entry(store, **opts)[0]
    _stopped(store, case, points[late], tmp_path / "ck")
    saved = sorted(p.name for p in (tmp_path / "ck").iterdir())
    assert late == any(name.endswith(".npz") for name in saved), saved
    again = _entry(case).entry(store, **opts, resume=tmp_path / "ck")[0]
    assert np.array_equal(again, whole, equal_nan=True)


def test_a_resume_with_other_parameters_is_refused(store, tmp_path):
    _stopped(store, "bc-runs", 8, tmp_path / "ck")
    with pytest.raises(CheckpointError, match="run 0 of the checkpoint was made by another"):
        declaration("bc").entry(store, sources=[1, 5], resume=tmp_path / "ck")
