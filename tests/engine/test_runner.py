"""The iteration loop and the CPU backend's contract, with programs written for the test."""
import json

import numpy as np
import pytest

import grstream as gr
from grstream.engine import run
from grstream.errors import DeviceError, MemoryBudgetError, UsageError

from ..algorithms.conftest import build, random_edges


class InDegreeSum(gr.GASProgram):
    """One sweep: each vertex sums the ids of its in-neighbours, then stops."""

    vertex = {"total": "int64"}
    gather_reduce = gr.monoid.sum

    def gather_map(self, src, dst, edge):
        return src.id

    def apply(self, v, acc):
        v.total = acc
        return False


class OutMax(gr.GASProgram):
    """Gather over out-edges: the largest weight leaving each vertex (reads an edge property)."""

    vertex = {"best": "float64"}
    reads = {"weight"}
    gather_edges = "out"
    gather_reduce = gr.monoid.max

    def init(self, v):
        v.best = -1.0

    def gather_map(self, src, dst, edge):
        return edge.weight + 0.0 * dst.best

    def apply(self, v, acc):
        new = gr.maximum(v.best, acc)
        changed = new > v.best
        v.best = new
        return changed


class CountDown(gr.GASProgram):
    """No gather at all: phase elimination means in-edges are never read."""

    vertex = {"left": "int64"}
    params = {"start": 3}

    def init(self, v):
        v.left = self.start

    def apply(self, v, acc):
        v.left = gr.maximum(v.left - 1, 0)
        return v.left > 0


def test_gather_sums_in_neighbour_ids(tmp_path, rng):
    src, dst, _ = random_edges(rng, 30, 100)
    store = build(tmp_path, 30, src, dst, num_shards=4)
    r = run(InDegreeSum(), store)
    expect = np.zeros(30, np.int64)
    np.add.at(expect, dst, src)
    np.testing.assert_array_equal(r.value, expect)
    assert r.iterations == 1 and r.converged


def test_out_edge_gather_and_edge_properties(tmp_path, rng):
    src, dst, w = random_edges(rng, 25, 80, weighted=True)
    store = build(tmp_path, 25, src, dst, w, num_shards=3)
    r = run(OutMax(), store)
    expect = np.full(25, -1.0)
    np.maximum.at(expect, src, w)
    np.testing.assert_array_equal(r.value, expect)


def test_program_reading_missing_edge_property_is_rejected(tmp_path):
    store = build(tmp_path, 3, np.array([0]), np.array([1]))
    with pytest.raises(UsageError, match="weight"):
        run(OutMax(), store)


def test_phase_elimination_reads_only_activation_edges(tmp_path):
    # a cycle keeps every vertex activated by its predecessor until the countdown stops changing
    src = np.arange(20)
    store = build(tmp_path, 20, src, (src + 1) % 20, num_shards=2)
    r = run(CountDown(start=3), store)
    assert r.info["arrays"] == ["out/indptr", "out/dst"]
    assert (r.value == 0).all() and r.iterations == 3
    # a vertex nobody points at is applied once, then never activated again
    store = build(tmp_path, 3, np.array([0]), np.array([1]), name="line")
    np.testing.assert_array_equal(run(CountDown(start=3), store).value, [2, 1, 2])


def test_budget_below_minimum_states_it(tmp_path, rng):
    src, dst, _ = random_edges(rng, 50, 400)
    store = build(tmp_path, 50, src, dst, num_shards=4)
    with pytest.raises(MemoryBudgetError, match="minimum") as info:
        run(InDegreeSum(), store, memory_budget=100)
    assert info.value.minimum > 100
    # the stated minimum works
    r = run(InDegreeSum(), store, memory_budget=info.value.minimum)
    assert r.info["memory"]["slots"] == 1 and r.info["memory"]["resident_shards"] == 0


def test_cuda_without_gpu_is_a_clear_device_error(tmp_path):
    store = build(tmp_path, 3, np.array([0]), np.array([1]))
    try:
        from grstream.backends import cuda
        ok, _ = cuda.available()
    except ImportError:
        ok = False
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceError, match="cuda"):
        run(InDegreeSum(), store, device="cuda")
    # auto falls back to the CPU
    assert run(InDegreeSum(), store, device="auto").info["backend"] == "cpu"


def test_unknown_device_and_bad_program(tmp_path):
    store = build(tmp_path, 3, np.array([0]), np.array([1]))
    with pytest.raises(UsageError, match="unknown device"):
        run(InDegreeSum(), store, device="tpu")
    with pytest.raises(UsageError, match="GASProgram"):
        run(object(), store)


def test_stats_are_complete_and_serialisable(tmp_path, rng):
    src, dst, _ = random_edges(rng, 60, 200)
    store = build(tmp_path, 60, src, dst, num_shards=5)
    seen = []
    r = run(gr.algorithms.BFS(source=int(src[0])), store, callback=seen.append)
    assert seen == r.stats
    first = r.stats[0]
    assert first.active_vertices > 0 and first.shards_processed >= 1
    assert first.shards_processed + first.shards_skipped == 5
    doc = json.loads(r.to_json())
    assert doc["iterations"] == r.iterations == len(doc["per_iteration"])
    assert doc["totals"]["bytes_read"] == sum(s.bytes_read for s in r.stats)



def test_one_shot_runs_on_an_open_store_reuse_its_session(tmp_path, rng):
    # grstream.run keeps its Session with the open store: the next run of a program whose values
    # do not depend on how units group (an idempotent monoid) with the same arguments reads no
    # shard again and gives the same values as a fresh store's run
    from grstream.algorithms.bfs import BFS
    src, dst, _ = random_edges(rng, 40, 160)
    store = build(tmp_path, 40, src, dst, num_shards=4)
    first = run(BFS(source=0), store)
    kept = store.kept["run"].session
    again = run(BFS(source=3), store)
    assert store.kept["run"].session is kept
    assert again.totals()["bytes_read"] == 0 < first.totals()["bytes_read"]
    with gr.open(store.path) as fresh:
        np.testing.assert_array_equal(again.value, run(BFS(source=3), fresh).value)
    np.testing.assert_array_equal(first.value, run(BFS(source=0), store).value)
    # other arguments: a new session, the kept one closed
    run(BFS(source=0), store, direction="pull")
    assert kept.closed and store.kept["run"].session is not kept
    # a sum's order depends on the grouping: its run neither reuses nor keeps a session
    kept = store.kept["run"].session
    run(InDegreeSum(), store)
    assert kept.closed and "run" not in store.kept
    run(BFS(source=0), store)
    kept = store.kept["run"].session
    store.close()
    assert kept.closed and not store.kept


def test_a_session_kept_meanwhile_is_kept_or_closed(tmp_path, rng, monkeypatch):
    # another thread's run keeps its session while this run keeps its own (simulated between
    # the look at the store's kept entry and the store of this run's): neither is dropped
    # unclosed, and the store's close closes the one kept
    from grstream.algorithms.bfs import BFS
    from grstream.engine import runner
    src, dst, _ = random_edges(rng, 40, 160)
    store = build(tmp_path, 40, src, dst, num_shards=4)
    other = runner.Session(store)

    class Racing(dict):
        armed = False

        def race(self):
            if self.armed:
                self.armed = False
                dict.__setitem__(self, runner.KEPT, runner._Kept({}, other))

        def pop(self, *args):
            out = super().pop(*args)
            self.race()
            return out

        def setdefault(self, *args):
            self.race()
            return super().setdefault(*args)

    store.kept = Racing()
    made, Session = [], type(other)
    monkeypatch.setattr(runner, "Session", lambda *a, **k: made.append(Session(*a, **k)) or made[-1])

    def arm(stats):
        store.kept.armed = True

    run(BFS(source=0), store, callback=arm)
    kept = store.kept[runner.KEPT].session
    assert kept in (other, made[0])
    assert all(s is kept or s.closed for s in (other, made[0]))
    store.close()
    assert other.closed and made[0].closed
