import numpy as np
import pytest
import scipy.sparse as sp

from grstream.errors import InputFormatError
from grstream.io.sparse import read_sparse

from ._util import collect


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "bsr"])
def test_every_scipy_format_gives_the_stored_entries(fmt):
    dense = np.array([[0, 2.0, 0], [0, 0, 3.0], [4.0, 0, 0], [0, 0, 5.0]])
    matrix = sp.csr_matrix(dense).asformat(fmt)
    source = read_sparse(matrix, chunk_edges=2)
    src, dst, weight = collect(source)
    assert source.num_vertices == 4
    rebuilt = sp.coo_array((weight, (src, dst)), shape=dense.shape).toarray()
    np.testing.assert_array_equal(rebuilt, dense)


def test_sparse_arrays_explicit_zeros_and_bool_matrices():
    m = sp.coo_array((np.array([0.0, 1.0]), (np.array([0, 1]), np.array([1, 0]))), shape=(2, 2))
    assert collect(read_sparse(m))[2].tolist() == [0.0, 1.0]
    b = sp.csr_array(np.array([[False, True], [False, False]]))
    source = read_sparse(b)
    assert not source.weighted and collect(source)[1].tolist() == [1]
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_sparse(b, weighted=True)


def test_complex_and_non_finite_values_are_rejected():
    with pytest.raises(InputFormatError, match="complex"):
        read_sparse(sp.csr_array(np.array([[0, 1j]])))
    with pytest.raises(InputFormatError, match="not finite"):
        read_sparse(sp.csr_array(np.array([[0, np.nan]])))
