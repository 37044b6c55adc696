"""The one read-ahead loop (grstream/readahead.py)."""
import threading

import pytest

from grstream.readahead import BufferPool, map_ahead, read_ahead


def test_read_ahead_yields_everything_in_order():
    assert list(read_ahead(iter(range(100)))) == list(range(100))
    assert list(read_ahead([])) == []


def test_read_ahead_produces_at_most_one_item_ahead():
    produced = []

    def source():
        for k in range(10):
            produced.append(k)
            yield k

    consumed = 0
    for item in read_ahead(source()):
        consumed += 1
        threading.Event().wait(0.01)
        assert len(produced) <= consumed + 1


def test_read_ahead_raises_the_sources_error_where_it_occurred():
    def source():
        yield 1
        yield 2
        raise ValueError("bad row 7")

    got = []
    with pytest.raises(ValueError, match="bad row 7"):
        for item in read_ahead(source()):
            got.append(item)
    assert got == [1, 2]


def test_read_ahead_stops_its_thread_when_the_consumer_stops():
    before = threading.active_count()
    items = read_ahead(iter(range(1000)))
    assert next(items) == 0
    items.close()
    assert threading.active_count() == before


def test_read_ahead_runs_depth_items_ahead():
    produced = []

    def source():
        for k in range(12):
            produced.append(k)
            yield k

    for consumed, _ in enumerate(read_ahead(source(), depth=3), start=1):
        threading.Event().wait(0.01)
        assert len(produced) <= consumed + 3


def test_buffer_pool_hands_out_each_buffer_once_and_waits_for_a_named_one():
    pool = BufferPool(2)
    assert {pool.acquire(), pool.acquire()} == {0, 1} and pool.try_acquire() is None
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(1)))
    waiter.start()
    pool.release(0)            # not the one it waits for
    threading.Event().wait(0.05)
    assert got == [] and pool.free == 1
    pool.release(1)
    waiter.join(2)
    assert got == [1]


def test_a_producer_waiting_for_a_buffer_stops_with_the_consumer():
    pool = BufferPool(1)
    before = threading.active_count()

    def source():
        while True:
            yield pool.acquire()     # the consumer never releases: the second acquire waits

    items = read_ahead(source(), depth=2, pool=pool)
    assert next(items) == 0
    items.close()
    assert threading.active_count() == before


def test_map_ahead_runs_calls_at_once_and_yields_in_order():
    running, most, lock = [0], [0], threading.Lock()
    gate = threading.Barrier(3, timeout=10)   # three calls must be in flight together

    def slow(k):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if k < 3:
            gate.wait()
        with lock:
            running[0] -= 1
        return k * k

    assert list(map_ahead(slow, range(20), threads=3)) == [k * k for k in range(20)]
    assert most[0] >= 3
    assert list(map_ahead(slow, range(3, 8), threads=1)) == [k * k for k in range(3, 8)]


def test_map_ahead_raises_at_the_failing_item_and_stops_a_waiting_producer():
    def fail(k):
        if k == 4:
            raise ValueError("item 4")
        return k

    got = []
    with pytest.raises(ValueError, match="item 4"):
        for v in map_ahead(fail, range(10), threads=3):
            got.append(v)
    assert got == [0, 1, 2, 3]
    pool = BufferPool(1)

    def source():   # waits for a buffer the consumer never gives back
        while True:
            yield pool.acquire()

    before = set(threading.enumerate())
    items = map_ahead(lambda b: b, source(), threads=2, pool=pool)
    assert next(items) == 0
    items.close()   # returns: the producer waiting in acquire is woken, the workers are joined
    assert [t for t in threading.enumerate() if t not in before] == []


def test_map_ahead_on_the_callers_pool_keeps_it_and_waits_for_the_calls_in_flight():
    from concurrent.futures import ThreadPoolExecutor

    finished, release = [], threading.Event()

    def slow(k):
        if k > 0:
            release.wait(10)
        finished.append(k)
        return k

    with ThreadPoolExecutor(2) as workers:
        items = map_ahead(slow, range(5), threads=2, workers=workers)
        assert next(items) == 0
        threading.Timer(0.2, release.set).start()
        items.close()   # returns once the calls already submitted have finished
        assert set(finished) >= {0, 1} and len(finished) == len(set(finished))
        done_at_close = list(finished)
        # the caller's pool is not shut down: a second call runs on the same threads
        assert list(map_ahead(lambda k: k + 1, range(6), threads=2, workers=workers)) == list(range(1, 7))
        assert finished == done_at_close   # nothing of the closed call ran after close returned
