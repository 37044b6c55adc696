"""Distinct ids over a chunk stream (the renumbering pass)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grstream.partition.edge_chunks import occurring_ids

chunk_lists = st.lists(st.lists(st.tuples(st.integers(0, 2 ** 40), st.integers(0, 50)),
                                max_size=30), max_size=12)


@settings(max_examples=60, deadline=None)
@given(chunks=chunk_lists)
def test_occurring_ids_are_the_sorted_distinct_ids(chunks):
    arrays = [(np.array([e[0] for e in c], dtype=np.int64),
               np.array([e[1] for e in c], dtype=np.int64), None) for c in chunks]
    copies = [(s.copy(), d.copy()) for s, d, _ in arrays]
    want = np.unique(np.concatenate([np.concatenate((s, d)) for s, d, _ in arrays]
                                    + [np.empty(0, dtype=np.int64)]))
    got = occurring_ids(iter(arrays))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64
    for (s, d, _), (s0, d0) in zip(arrays, copies):
        # the chunks are the reader's: never sorted in place
        np.testing.assert_array_equal(s, s0)
        np.testing.assert_array_equal(d, d0)


def test_occurring_ids_of_int32_chunks():
    chunks = [(np.array([5, 3], dtype=np.int32), np.array([3, 9], dtype=np.int32), None)] * 3
    np.testing.assert_array_equal(occurring_ids(iter(chunks)), [3, 5, 9])
