"""How the GPU executor gives its CUDA objects back, with stand-ins for PyCUDA (no GPU needed):
streams and events lose their last reference at ``close``, on the closing thread, after the work
on them finished and before the context is released; the executor's close stops the packer's
threads before the mover's buffers go and keeps no reference to its lanes (which refer back to
it). PyCUDA destroys an object on the thread that drops its last reference; only the thread
owning the context can (tests/backends/cuda/test_cuda_cleanup.py checks this on a GPU)."""
import sys
import types
import weakref

import numpy as np
import pytest

from grstream.backends.cuda import device
from grstream.backends.cuda.device import DeviceState
from grstream.backends.cuda.executor import CudaExecutor
from grstream.backends.cuda.streams import Streams


class FakeCuda:
    """The part of pycuda.driver the streams use; ``log`` records syncs and destructions."""

    def __init__(self, log):
        self.log = log
        fake = self

        class Stream:
            def synchronize(self):
                fake.log.append("sync stream")

            def wait_for_event(self, event):
                pass

            def __del__(self):
                fake.log.append("del stream")

        class Event:
            def record(self, stream=None):
                pass

            def __del__(self):
                fake.log.append("del event")
        self.Stream, self.Event = Stream, Event

    def memcpy_htod_async(self, dev, host, stream):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    log = []
    cuda = FakeCuda(log)
    pycuda = types.ModuleType("pycuda")
    pycuda.driver = cuda
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", cuda)
    return cuda


def busy_streams():
    """Streams after a unit's copies and kernels (events in every list they keep)."""
    ex = Streams(2)
    ex.begin_copy(0)
    for k in range(3):
        ex.copy_array(np.zeros(4, np.uint8), 1024 * k)
    ex.end_copy()
    ex.shard_done(0)
    ex.begin_kernels()
    return ex


def test_closing_the_streams_drops_every_stream_and_event_after_a_sync(fake_cuda):
    ex = busy_streams()
    refs = [weakref.ref(o) for o in ex.copy_streams + [ex.compute]]
    refs += [weakref.ref(e) for pair in ex.copy_spans + ex.kernel_spans for e in pair]
    log = fake_cuda.log
    ex.close()
    assert all(r() is None for r in refs)
    assert log.count("del stream") == 3 and log.count("del event") >= 6
    assert log.index("del stream") > max(k for k, s in enumerate(log) if s == "sync stream")
    ex.close()   # (again: nothing)
    assert log.count("del stream") == 3


class Ledger:
    def __init__(self, log):
        self.log = log

    def give(self, kind, name, nbytes):
        self.log.append(f"give {name}")


class Allocation:
    def __init__(self, log):
        self.log = log

    def free(self):
        self.log.append("free")


def test_the_device_state_drops_its_streams_and_memory_before_the_context(fake_cuda, monkeypatch):
    log = fake_cuda.log
    monkeypatch.setattr(device, "release_context", lambda: log.append("release context"))
    dev = DeviceState.__new__(DeviceState)   # (its state, as _setup leaves it)
    dev.cuda, dev.ledger = fake_cuda, Ledger(log)
    dev.ex = busy_streams()
    dev.upload_stream, dev.state_ready = fake_cuda.Stream(), fake_cuda.Event()
    dev._mem = [("device", "accumulator", 64, Allocation(log))]
    dev.close()
    assert dev.ex is None and dev.upload_stream is None and dev.state_ready is None
    assert log.count("del stream") == 4 and log[-3:] == ["free", "give accumulator", "release context"]
    dev.close()
    assert log.count("release context") == 1


class Part:
    """A part of the executor that logs its close; ``sync`` for the device state's streams."""

    def __init__(self, name, log):
        self.name, self.log, self.ex = name, log, self

    def sync(self):
        pass

    def close(self):
        self.log.append(f"close {self.name}")

    def release(self):
        self.log.append(f"release {self.name}")


def test_the_executor_closes_the_packer_before_the_mover_and_leaves_its_lanes(fake_cuda):
    log = []
    ex = CudaExecutor.__new__(CudaExecutor)   # (the parts close touches)
    ex.packer, ex.mover, ex.dev, ex.pushes = (Part(k, log) for k in ("packer", "mover", "device", "pushes"))
    ex.ledger, ex._host_state = Ledger(log), {"rank": np.zeros(4)}
    ex.lane_runs, ex._origin = types.SimpleNamespace(ex=ex), fake_cuda.Event()   # a cycle, an event
    gone = weakref.ref(ex)
    ex.close()
    assert log == ["close packer", "close mover", "give vertex state rank", "release pushes", "close device"]
    assert fake_cuda.log == ["del event"] and ex.lane_runs is None
    import gc
    gc.disable()
    try:
        del ex
        assert gone() is None   # no cycle left: freed here, not by the collector
    finally:
        gc.enable()
