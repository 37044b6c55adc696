import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io.arrays import read_arrays

from ._util import collect


def test_table_and_tuple_inputs_are_not_modified():
    table = np.array([[0, 1, 2.0], [3, 4, 5.0]])
    before = table.copy()
    src, dst, weight = collect(read_arrays(table, chunk_edges=1))
    src[:] = 99
    np.testing.assert_array_equal(table, before)
    s, d = np.array([0, 1], np.int32), np.array([1, 0], np.uint16)
    src, dst, weight = collect(read_arrays((s, d)))
    assert src.tolist() == [0, 1] and dst.tolist() == [1, 0] and weight is None


def test_weight_options():
    edges = (np.array([0]), np.array([1]), np.array([2.5]))
    assert collect(read_arrays(edges))[2].tolist() == [2.5]
    assert collect(read_arrays(edges, weighted=False))[2] is None
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_arrays(edges[:2], weighted=True)


def test_empty_input_is_an_empty_graph():
    assert len(collect(read_arrays(np.empty((0, 2), np.int64)))[0]) == 0


@pytest.mark.parametrize("edges, message", [
    ((np.array([0, 1]), np.array([1])), "equal length"),
    ((np.array([0]),), r"\(src, dst\[, weight\]\)"),
    ((np.array([[0]]), np.array([[1]])), "1-D arrays"),
    (np.array([[0, -1]]), "row 0: negative vertex id -1"),
    (np.array([[0, 1, np.inf]]), "row 0: weight inf is not finite"),
    ((np.array([0.5]), np.array([1.0])), "vertex id 0.5 is not an integer"),
    ((np.array([2.0**60]), np.array([1.0])), "too large"),
    ((np.array([0]), np.array([1]), np.array(["x"])), "weights must be real"),
    ((np.array([2**64 - 1], np.uint64), np.array([1])), r"too large: ids must be at most 2\^63"),
])
def test_bad_arrays_fail_at_open(edges, message):
    with pytest.raises(InputFormatError, match=message):
        read_arrays(edges)
