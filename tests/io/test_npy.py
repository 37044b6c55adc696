import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io.npy import read_npy

from ._util import collect


def test_int_table_streams_in_chunks(tmp_path):
    table = np.arange(20, dtype=np.int64).reshape(10, 2)
    np.save(tmp_path / "g.npy", table)
    source = read_npy(tmp_path / "g.npy", chunk_edges=3)
    assert [len(c[0]) for c in source.chunks()] == [3, 3, 3, 1]
    src, dst, weight = collect(source)
    assert weight is None
    np.testing.assert_array_equal(src, table[:, 0])
    np.testing.assert_array_equal(dst, table[:, 1])


def test_weighted_float_table_and_dropping_weights(tmp_path):
    np.save(tmp_path / "w.npy", np.array([[0, 1, 0.5], [2, 0, 3.0]]))
    src, dst, weight = collect(read_npy(tmp_path / "w.npy"))
    assert src.tolist() == [0, 2] and weight.tolist() == [0.5, 3.0]
    assert collect(read_npy(tmp_path / "w.npy", weighted=False))[2] is None


@pytest.mark.parametrize("array, message", [
    (np.zeros((3, 4), np.int64), r"shape \(m, 2\) or \(m, 3\)"),
    (np.zeros(3, np.int64), r"shape \(m, 2\) or \(m, 3\)"),
    (np.zeros((3, 2)), "must hold integers"),
    (np.array([["a", "b"]]), "integer or real"),
])
def test_bad_tables_fail_at_open(tmp_path, array, message):
    np.save(tmp_path / "b.npy", array)
    with pytest.raises(InputFormatError, match=message):
        read_npy(tmp_path / "b.npy")


@pytest.mark.parametrize("array, message", [
    (np.array([[0, 1], [1, 2], [-4, 0]]), "row 2: negative vertex id -4"),
    (np.array([[0, 1, 1.0], [1.5, 2, 1.0]]), "row 1: vertex id 1.5 is not an integer"),
    (np.array([[0, 1, 1.0], [1, 2, np.nan]]), "row 1: weight nan is not finite"),
])
def test_bad_rows_fail_while_streaming(tmp_path, array, message):
    np.save(tmp_path / "b.npy", array)
    source = read_npy(tmp_path / "b.npy")
    with pytest.raises(InputFormatError, match=message):
        collect(source)


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(InputFormatError, match="no such file"):
        read_npy(tmp_path / "none.npy")
    (tmp_path / "c.npy").write_bytes(b"not numpy")
    with pytest.raises(InputFormatError, match="not a readable .npy"):
        read_npy(tmp_path / "c.npy")


def test_fortran_order_and_big_endian_tables_stream_by_rows(tmp_path):
    table = np.asfortranarray(np.arange(30, dtype=">f8").reshape(10, 3))
    np.save(tmp_path / "f.npy", table)
    source = read_npy(tmp_path / "f.npy", chunk_edges=4)
    assert [len(c[0]) for c in source.chunks()] == [4, 4, 2]
    src, dst, weight = collect(source)
    np.testing.assert_array_equal(src, table[:, 0].astype(np.int64))
    np.testing.assert_array_equal(dst, table[:, 1].astype(np.int64))
    np.testing.assert_array_equal(weight, table[:, 2])


def test_chunks_are_not_views_of_the_reused_read_buffer(tmp_path):
    table = np.arange(40, dtype=np.int32).reshape(20, 2)
    np.save(tmp_path / "g.npy", table)
    chunks = list(read_npy(tmp_path / "g.npy", chunk_edges=6).chunks())
    np.testing.assert_array_equal(np.concatenate([c[0] for c in chunks]), table[:, 0])
    np.testing.assert_array_equal(np.concatenate([c[1] for c in chunks]), table[:, 1])


def test_truncated_file_fails_at_open(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(20, dtype=np.int64).reshape(10, 2))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    with pytest.raises(InputFormatError, match="truncated"):
        read_npy(tmp_path / "t.npy")
