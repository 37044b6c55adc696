import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from grstream.errors import InputFormatError
from grstream.io.mtx import read_mtx

from ._util import collect, write


def as_matrix(src, dst, weight, n):
    data = np.ones(len(src)) if weight is None else weight
    return sp.coo_array((data, (src, dst)), shape=(n, n)).toarray()


@pytest.mark.parametrize("name, weighted", [("karate", False), ("dolphins", False),
                                            ("netscience", True)])
def test_real_files_match_scipy_mmread(datasets_dir, name, weighted):
    path = datasets_dir / f"{name}.mtx"
    expected = scipy.io.mmread(path).tocoo()
    source = read_mtx(path, chunk_edges=100)
    src, dst, weight = collect(source)
    assert source.weighted == weighted and source.num_vertices == expected.shape[0]
    assert len(src) == expected.nnz  # symmetric: both directions, like mmread's full matrix
    np.testing.assert_allclose(as_matrix(src, dst, weight, source.num_vertices),
                               expected.toarray() if weighted else (expected.toarray() != 0))


HEAD = "%%MatrixMarket matrix coordinate {} {}\n% comment\n"


def test_general_integer_matrix_is_one_based_and_directed(tmp_path):
    path = write(tmp_path, "g.mtx", HEAD.format("integer", "general") + "3 4 2\n1 4 7\n3 1 -2\n")
    source = read_mtx(path)
    src, dst, weight = collect(source)
    assert src.tolist() == [0, 2] and dst.tolist() == [3, 0] and weight.tolist() == [7, -2]
    assert source.num_vertices == 4 and source.meta["symmetry"] == "general"


def test_symmetric_diagonal_entries_appear_once(tmp_path):
    path = write(tmp_path, "s.mtx", HEAD.format("pattern", "symmetric") + "3 3 2\n2 1\n3 3\n")
    src, dst, _ = collect(read_mtx(path))
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (2, 2)]


def test_weights_can_be_dropped_but_not_invented(tmp_path):
    real = write(tmp_path, "r.mtx", HEAD.format("real", "general") + "2 2 1\n1 2 0.5\n")
    assert collect(read_mtx(real, weighted=False))[2] is None
    pattern = write(tmp_path, "p.mtx", HEAD.format("pattern", "general") + "2 2 1\n1 2\n")
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_mtx(pattern, weighted=True)


def test_empty_matrix(tmp_path):
    path = write(tmp_path, "e.mtx", HEAD.format("pattern", "general") + "5 5 0\n")
    source = read_mtx(path)
    assert len(collect(source)[0]) == 0 and source.num_vertices == 5


@pytest.mark.parametrize("banner, message", [
    ("%%MatrixMarket matrix array real general", "'matrix array' is not supported"),
    ("%%MatrixMarket matrix coordinate complex general", "field 'complex'"),
    ("%%MatrixMarket matrix coordinate real hermitian", "symmetry 'hermitian'"),
    ("%%MatrixMarket matrix coordinate real skew-symmetric", "symmetry 'skew-symmetric'"),
    ("%%MatrixMarket matrix coordinate", "not a Matrix Market file"),
    ("1 2 3", "not a Matrix Market file"),
])
def test_unsupported_banners(tmp_path, banner, message):
    path = write(tmp_path, "b.mtx", banner + "\n2 2 1\n1 2 1\n")
    with pytest.raises(InputFormatError, match=message):
        read_mtx(path)


@pytest.mark.parametrize("body, line, message", [
    ("2 2 1\n3 1\n", 4, "vertex id 3 is beyond the declared size 2"),
    ("2 3 1\n1 4\n", 4, "vertex id 4 is beyond the declared size 3"),
    ("2 2 1\n0 1\n", 4, "vertex id 0 is below 1"),
    ("2 2 2\n1 2\n", 3, "header declares 2 entries but the file has 1"),
    ("2 2 1\n1 2\n2 1\n", 3, "header declares 1 entries but the file has 2"),
    ("2 2 1\n1 2 3\n", 4, "expected 2 columns, found 3"),
    ("2 2\n1 2\n", 3, "size line must be 'rows cols entries'"),
    ("2 2 1\n", 3, "header declares 1 entries but the file has 0"),
])
def test_bad_bodies(tmp_path, body, line, message):
    path = write(tmp_path, "b.mtx", HEAD.format("pattern", "general") + body)
    with pytest.raises(InputFormatError, match=message) as info:
        collect(read_mtx(path))
    assert info.value.line == line


def test_missing_size_line(tmp_path):
    with pytest.raises(InputFormatError, match="missing the size line"):
        read_mtx(write(tmp_path, "b.mtx", HEAD.format("pattern", "general")))
