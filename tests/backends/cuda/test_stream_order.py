"""The order the movement's streams put on copies and kernels, with a stand-in for PyCUDA that
logs every event record and every wait (no GPU needed): a unit's kernels wait for its copies;
a copy started ahead for the next plan is not waited for by this plan's kernels (or its read
back), is waited for before the next plan's kernels that read it, and orders the copies after
it, across a read back; a copy into a slot waits for the kernels that last read the slot."""
import sys
import types

import numpy as np
import pytest

from grstream.backends.cuda.streams import Streams


class LogCuda:
    """pycuda.driver's part the streams use; ``log``: ("record", event, stream) and ("wait",
    stream, event) in call order."""

    def __init__(self):
        self.log = []
        fake = self

        class Stream:
            def synchronize(self):
                pass

            def wait_for_event(self, event):
                fake.log.append(("wait", self, event))

        class Event:
            def record(self, stream=None):
                fake.log.append(("record", self, stream))

            def time_since(self, other):
                return 0.0
        self.Stream, self.Event = Stream, Event

    def memcpy_htod_async(self, dev, host, stream):
        self.log.append(("copy", dev, stream))


@pytest.fixture
def cuda(monkeypatch):
    fake = LogCuda()
    pycuda = types.ModuleType("pycuda")
    pycuda.driver = fake
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", fake)
    return fake


def copy(ex, slot, addrs):
    ex.begin_copy(slot)
    for a in addrs:
        ex.copy_array(np.zeros(4, np.uint8), a)


def waits(log, stream, since=0):
    return [e for kind, s, e in log[since:] if kind == "wait" and s is stream]


def ends_on(log, streams, since=0):
    """The last event recorded on each of ``streams`` after ``since``."""
    out = {}
    for kind, e, s in log[since:]:
        if kind == "record" and s in streams:
            out[s] = e
    return [out[s] for s in streams if s in out]


def test_a_units_kernels_wait_for_every_copy_stream_it_used(cuda):
    ex = Streams(2)
    copy(ex, 0, [0, 64, 128])
    token = ex.end_copy()
    assert len(token) == 2
    assert waits(cuda.log, ex.compute) == token == ends_on(cuda.log, ex.copy_streams)


def test_a_copy_ahead_is_waited_for_by_the_next_plan_only(cuda):
    ex = Streams(2)
    copy(ex, 0, [0, 64])
    ex.end_copy()
    ex.shard_done(0)                 # the slot's kernels
    slot_free = ex._slot_free[0]
    start = len(cuda.log)
    copy(ex, 0, [0, 64])             # the next plan's first unit, into the same slot, ahead
    ex.end_ahead()
    ends = [e for _, e in ex.ahead[0]]
    assert len(ends) == 2 and ends == ends_on(cuda.log, ex.copy_streams, start)
    # each copy stream it used waits for the slot's last kernels first
    for s in ex.copy_streams:
        assert slot_free in waits(cuda.log, s, start)
    # this plan's kernels and read back do not wait for it; its spans leave this plan's timeline
    assert waits(cuda.log, ex.compute, start) == []
    assert len(ex.copy_spans) == 2
    ex.shard_done(None)
    ex.settle()
    ex.timeline(cuda.Event())
    # the next plan: a copy after a read back still follows the copy ahead (the same slot)
    start = len(cuda.log)
    copy(ex, 0, [256, 320])
    followed = waits(cuda.log, ex.copy_streams[0], start) + waits(cuda.log, ex.copy_streams[1], start)
    assert ends[0] in followed and ends[1] in followed
    # its kernels wait for the copy ahead once joined, and its spans join this plan's
    at = ex.join_ahead()
    assert at == (2, 4) and ex.ahead is None
    assert set(ends) <= set(waits(cuda.log, ex.compute, start))
    assert ex.join_ahead() is None


def test_a_copy_ahead_never_joined_keeps_its_end_events_out_of_the_pool(cuda):
    """A plan that copies after a copy ahead and ends without joining it (an interrupted
    delivery) leaves the ahead's end events to the ahead: the read back's reset does not pool
    them too, so no event is handed out for two uses at once."""
    ex = Streams(2)
    copy(ex, 0, [0, 64])
    ex.end_ahead()
    ex.timeline(cuda.Event())             # this plan's read back: the copy ahead stays
    ends = {id(e) for _, e in ex.ahead[0]}
    copy(ex, 1, [128, 192])               # the next plan's copy (it follows the ahead), then no join
    ex.end_copy()
    ex.timeline(cuda.Event())
    pooled = [id(e) for e in ex._pool]
    assert not ends & set(pooled) and ends == {id(e) for _, e in ex._prev_copy}
    copy(ex, 0, [0, 64])                  # a later plan joins it: each event pooled once
    ex.end_copy()
    assert ex.join_ahead() is not None
    ex.timeline(cuda.Event())
    pooled = [id(e) for e in ex._pool]
    assert len(pooled) == len(set(pooled)) and ends <= set(pooled)
