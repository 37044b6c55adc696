"""Checkpoints in one process: a run stopped by SIGTERM at iteration k and resumed gives the
uninterrupted run's result bit for bit (PageRank, BFS, CC, SSSP; resident and streamed shards;
push and pull); damaged, half-written and mismatched checkpoints are refused with typed errors."""
import os
import signal

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.algorithms.sssp import SSSP
from grstream.engine.checkpoint import MANIFEST
from grstream.errors import (CheckpointError, Checkpointed, DamagedCheckpointError, MemoryBudgetError,
                             UsageError)

PROGRAMS = {"pagerank": lambda: PageRank(tol=1e-10), "bfs": lambda: BFS(source=3),
            "cc": ConnectedComponents, "sssp": lambda: SSSP(source=3)}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(7)
    n, m = 600, 2400
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.uniform(0.5, 4.0, m)
    path = tmp_path_factory.mktemp("ckpt") / "g.h5"
    gr.build_shards(np.column_stack([src, dst, w]), path, num_shards=6, weighted=True, progress=False)
    with gr.open(path) as s:
        yield s


def sigterm_at(k):
    """A callback that sends this process SIGTERM at the end of iteration ``k``."""
    def callback(st):
        if st.iteration == k:
            os.kill(os.getpid(), signal.SIGTERM)
    return callback


def interrupted(program, store, folder, k, **options):
    with pytest.raises(Checkpointed) as caught:
        gr.run(program, store, checkpoint=folder, callback=sigterm_at(k), **options)
    assert caught.value.iteration == k and caught.value.exit_code == 144
    assert (folder / MANIFEST).is_file()


def same(a, b):
    assert a.iterations == b.iterations and a.converged == b.converged
    for k in a.values:
        assert np.array_equal(a.values[k], b.values[k], equal_nan=True), k
    assert [s.changed_vertices for s in a.stats] == [s.changed_vertices for s in b.stats]


def streaming_budget(program, store, **options):
    """A memory budget that holds the vertex state and about two shards: the rest streams."""
    with pytest.raises(MemoryBudgetError) as caught:
        gr.run(program, store, memory_budget=1, **options)
    return caught.value.minimum + int(store.max_shard_nbytes())


@pytest.mark.parametrize("budget", [None, "streamed"])
@pytest.mark.parametrize("direction", ["auto", "pull"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_resumed_run_equals_an_uninterrupted_one(store, tmp_path, name, direction, budget):
    options = dict(direction=direction)
    if budget is not None:
        options["memory_budget"] = streaming_budget(PROGRAMS[name](), store, **options)
    whole = gr.run(PROGRAMS[name](), store, **options)
    k = max(1, whole.iterations // 2)
    interrupted(PROGRAMS[name](), store, tmp_path / "ck", k, **options)
    resumed = gr.run(PROGRAMS[name](), store, resume=tmp_path / "ck", **options)
    same(whole, resumed)
    assert resumed.info["resumed_at"] == k


def test_a_resumed_pagerank_adds_in_the_uninterrupted_order(tmp_path):
    # an RMAT graph whose resident shards the whole run batches into one unit from iteration 2
    # on (their sums grouped otherwise than in iteration 1's loads): the resumed run loads them
    # first (Planner.preload), so its iterations group and add as the uninterrupted run's
    from grstream.io.generate import rmat
    gr.build_shards(rmat(11, edge_factor=16, seed=1), tmp_path / "rmat.h5", num_shards=8,
                    progress=False)
    with gr.open(tmp_path / "rmat.h5") as rmat_store:
        whole = gr.run(PageRank(tol=1e-10), rmat_store)
        assert whole.stats[1].plan["units"] < whole.stats[0].plan["units"]
        interrupted(PageRank(tol=1e-10), rmat_store, tmp_path / "ck", 5)
        resumed = gr.run(PageRank(tol=1e-10), rmat_store, resume=tmp_path / "ck")
        same(whole, resumed)
        assert [s.aggregates for s in resumed.stats] == [s.aggregates for s in whole.stats]


def test_checkpoints_every_iteration_keep_one_file_and_resume_twice(store, tmp_path):
    whole = gr.run(BFS(source=3), store, direction="pull")
    folder = tmp_path / "ck"
    interrupted(BFS(source=3), store, folder, 2, checkpoint_every=0, direction="pull")
    assert sorted(p.name for p in folder.iterdir()) == [
        MANIFEST, "state-00000002-rank00000-of-00001.npz"]
    # resumed and checkpointing into the same folder, stopped again, resumed again
    with pytest.raises(Checkpointed):
        gr.run(BFS(source=3), store, resume=folder, checkpoint=folder, checkpoint_every=0,
               callback=sigterm_at(3), direction="pull")
    assert sorted(p.name for p in folder.iterdir()) == [
        MANIFEST, "state-00000003-rank00000-of-00001.npz"]
    same(whole, gr.run(BFS(source=3), store, resume=folder, direction="pull"))


def test_a_session_resumes_too(store, tmp_path):
    with gr.Session(store) as s:
        whole = s.run(PageRank(tol=1e-10))
        with pytest.raises(Checkpointed):
            s.run(PageRank(tol=1e-10), checkpoint=tmp_path, callback=sigterm_at(4))
        same(whole, s.run(PageRank(tol=1e-10), resume=tmp_path))


@pytest.fixture
def checkpoint(store, tmp_path):
    interrupted(BFS(source=3), store, tmp_path / "ck", 2)
    return tmp_path / "ck"


@pytest.mark.parametrize("change", [
    (lambda store: (BFS(source=4), {}), "parameters"),
    (lambda store: (SSSP(source=3), {}), "program"),
    (lambda store: (BFS(source=3), {"max_iter": 50}), "iteration limit"),
])
def test_a_resume_of_another_run_is_refused(store, checkpoint, change):
    make, what = change
    program, options = make(store)
    with pytest.raises(CheckpointError, match=f"another {what}") as caught:
        gr.run(program, store, resume=checkpoint, **options)
    assert not isinstance(caught.value, DamagedCheckpointError) and caught.value.exit_code == 2


def test_a_resume_on_another_store_is_refused(checkpoint, tmp_path):
    other = tmp_path / "other.h5"
    gr.build_shards(np.array([[0, 1], [1, 2]]), other, progress=False)
    with pytest.raises(CheckpointError, match="another store"):
        gr.run(BFS(source=0), other, resume=checkpoint)


def test_damaged_or_half_written_checkpoints_are_refused(store, checkpoint):
    (rank_file,) = checkpoint.glob("state-*.npz")
    data = bytearray(rank_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    rank_file.write_bytes(bytes(data))
    with pytest.raises(DamagedCheckpointError, match="damaged") as caught:
        gr.run(BFS(source=3), store, resume=checkpoint)
    assert caught.value.exit_code == 4
    rank_file.unlink()
    with pytest.raises(DamagedCheckpointError, match="missing"):
        gr.run(BFS(source=3), store, resume=checkpoint)
    (checkpoint / MANIFEST).write_text('{"format": "grstream-checkpoint"')   # cut short
    with pytest.raises(DamagedCheckpointError, match="not a grstream checkpoint manifest"):
        gr.run(BFS(source=3), store, resume=checkpoint)
    (checkpoint / MANIFEST).unlink()   # the rank files of a checkpoint whose manifest never came
    with pytest.raises(CheckpointError, match="no checkpoint was completed"):
        gr.run(BFS(source=3), store, resume=checkpoint)


def test_checkpoint_options_are_checked(store, tmp_path):
    for kwargs, message in (({"checkpoint_every": 5}, "needs checkpoint"),
                            ({"checkpoint": tmp_path, "checkpoint_every": -1}, "checkpoint_every"),
                            ({"checkpoint": tmp_path, "checkpoint_every": True}, "checkpoint_every"),
                            ({"checkpoint": 3}, "path of a folder"),
                            ({"checkpoint": tmp_path / "no" / "such"}, "does not exist")):
        with pytest.raises(UsageError, match=message):
            gr.run(BFS(source=3), store, **kwargs)


@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_a_run_stopped_at_any_iteration_resumes_across_direction_switches(store, tmp_path, name):
    # with this threshold the runs push, pull, then push again: a checkpoint after a push
    # resumes into the pull frontier of its changed set, one after a pull into a push
    options = dict(push_threshold=0.05)
    whole = gr.run(PROGRAMS[name](), store, **options)
    directions = [set(s.plan["direction"]) for s in whole.stats]
    assert {"push"} in directions and {"pull"} in directions
    for k in range(1, whole.iterations):
        folder = tmp_path / f"ck{k}"
        interrupted(PROGRAMS[name](), store, folder, k, **options)
        same(whole, gr.run(PROGRAMS[name](), store, resume=folder, **options))
