"""The one read-ahead loop (grstream/readahead.py)."""
import threading

import pytest

from grstream.readahead import BufferPool, read_ahead


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
