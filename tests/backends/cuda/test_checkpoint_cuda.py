"""Checkpoints of GPU runs: the state comes back from the device only when a checkpoint is
written (Executor.save_run), and a resumed run equals the uninterrupted one on the GPU
(tests/engine/test_checkpoint.py's cases with device "cuda"); the device bitmaps' host form."""
import numpy as np
import pytest

import grstream as gr
from grstream.backends.cuda.buffers import bitmap_ids, bitmap_words
from grstream.errors import CheckpointError

from ...engine.test_checkpoint import PROGRAMS, interrupted, same, store, streaming_budget  # noqa: F401


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 100])
def test_bitmap_words_and_ids_are_inverse_and_match_the_kernels_bit_order(n):
    rng = np.random.default_rng(n)
    ids = np.flatnonzero(rng.random(n) < 0.3).astype(np.int64)
    words = bitmap_words(ids, n)
    assert words.dtype == np.uint32 and len(words) == (n + 31) // 32
    for v in range(n):   # gr_mark: bit v & 31 of word v >> 5
        assert bool((int(words[v >> 5]) >> (v & 31)) & 1) == (v in set(ids.tolist()))
    assert np.array_equal(bitmap_ids(words, n), ids)


@pytest.mark.cuda
@pytest.mark.parametrize("budget", [None, "streamed"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_resumed_gpu_run_equals_an_uninterrupted_one(gpu, store, tmp_path, name, budget):  # noqa: F811
    options = dict(device="cuda")
    if budget is not None:
        options["memory_budget"] = streaming_budget(PROGRAMS[name](), store, **options)
    whole = gr.run(PROGRAMS[name](), store, **options)
    k = max(1, whole.iterations // 2)
    interrupted(PROGRAMS[name](), store, tmp_path / "ck", k, **options)
    same(whole, gr.run(PROGRAMS[name](), store, resume=tmp_path / "ck", **options))


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_a_gpu_run_stopped_at_any_iteration_resumes_across_direction_switches(gpu, store, tmp_path, name):  # noqa: F811
    options = dict(device="cuda", push_threshold=0.05)
    whole = gr.run(PROGRAMS[name](), store, **options)
    for k in range(1, whole.iterations):
        folder = tmp_path / f"ck{k}"
        interrupted(PROGRAMS[name](), store, folder, k, **options)
        same(whole, gr.run(PROGRAMS[name](), store, resume=folder, **options))


@pytest.mark.cuda
def test_a_cpu_checkpoint_is_refused_on_the_gpu(gpu, store, tmp_path):  # noqa: F811
    interrupted(PROGRAMS["bfs"](), store, tmp_path / "ck", 2)
    with pytest.raises(CheckpointError, match="another device: 'cpu', not 'cuda'"):
        gr.run(PROGRAMS["bfs"](), store, device="cuda", resume=tmp_path / "ck")
