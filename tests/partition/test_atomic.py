import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import grstream as gr
from grstream.io.base import EdgeSource
from grstream.partition import build_shards

from .graphs import array_source

CHILD = textwrap.dedent("""
    import sys, time, pathlib
    import numpy as np
    from grstream.partition import build_shards, writer
    from grstream.io.base import EdgeSource
    signal_file = pathlib.Path(sys.argv[2])
    original = writer.StoreWriter.shard_part

    def shard_then_stall(self, index, direction, *args):
        nbytes = original(self, index, direction, *args)
        if index == 1 and direction == "in":
            self.file.flush()
            signal_file.write_text("mid-write")
            time.sleep(60)
        return nbytes

    writer.StoreWriter.shard_part = shard_then_stall
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, 1000, 20000), rng.integers(0, 1000, 20000)
    src = EdgeSource("child", lambda: iter([(s, d, None)]), weighted=False)
    build_shards(src, sys.argv[1], num_shards=8, memory_limit=int(sys.argv[3]) or None,
                 progress=False)
""")


@pytest.mark.parametrize("memory_limit", [0, 1 << 22])
@pytest.mark.parametrize("old_store", [False, True])
def test_sigkill_mid_write_leaves_no_store(tmp_path, old_store, memory_limit):
    target = tmp_path / "g.h5"
    if old_store:
        build_shards(array_source([0, 1], [1, 0]), target, progress=False)
        before = target.read_bytes()
    flag = tmp_path / "flag"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(flag), str(memory_limit)])
    deadline = time.time() + 60
    while not flag.exists() and time.time() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), "child never reached the middle of the write"
    assert list(tmp_path.glob("g.h5.tmp-*")), "the partial store should be under a temporary name"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    if old_store:
        assert target.read_bytes() == before
        with gr.open(target) as store:
            assert store.num_edges == 2
    else:
        assert not target.exists()
    # the next build in that directory removes the dead writer's temporary
    build_shards(array_source([0], [1]), target, progress=False)
    assert not list(tmp_path.glob("g.h5.tmp-*"))


# the in-memory build and the external build of packed-key runs (weighted or not) read the
# input once; the external build of edge records (edge ids) reads it twice (degrees, then
# bucketing)
@pytest.mark.parametrize("memory_limit, weighted, failing_pass, edge_ids",
                         [(None, False, 1, False), (1 << 22, False, 1, False),
                          (1 << 22, True, 1, False), (1 << 22, True, 2, True)])
def test_failing_source_leaves_old_store_and_no_temporaries(tmp_path, memory_limit, weighted,
                                                            failing_pass, edge_ids):
    target = tmp_path / "g.h5"
    build_shards(array_source([0, 1], [1, 0]), target, progress=False)
    before = target.read_bytes()
    calls = []

    def chunks():
        calls.append(1)
        yield np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0]) if weighted else None
        if len(calls) == failing_pass:
            raise OSError("disk went away")
        yield np.array([2]), np.array([0]), np.array([3.0]) if weighted else None

    with pytest.raises(OSError, match="disk went away"):
        build_shards(EdgeSource("flaky", chunks, weighted=weighted), target, num_shards=2,
                     memory_limit=memory_limit, progress=False, edge_ids=edge_ids)
    assert len(calls) == failing_pass
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.h5"]


def test_killed_external_build_leftovers_go_with_the_next_build_of_any_name(tmp_path):
    target = tmp_path / "g.h5"
    flag = tmp_path / "flag"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(flag), str(1 << 22)])
    deadline = time.time() + 60
    while not flag.exists() and time.time() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), "child never reached the middle of the write"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert list(tmp_path.glob("g.h5.tmp-*")) and list(tmp_path.glob("g.h5.buckets-*"))
    build_shards(array_source([0], [1]), tmp_path / "other.h5", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flag", "other.h5"]
