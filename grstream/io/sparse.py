"""scipy.sparse matrices: each stored entry (i, j) is the edge i -> j weighted by its value."""
import numpy as np

from ..errors import InputFormatError
from .arrays import array_source


def read_sparse(matrix, *, weighted=None, chunk_edges=None, name="<scipy.sparse>"):
    """Open a scipy.sparse matrix or array (any format) as an :class:`EdgeSource`.

    Every stored entry is an edge, explicit zeros included. Boolean matrices are unweighted.
    ``num_vertices`` is ``max(matrix.shape)``.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
    weighted : bool or None
        None: weights unless the matrix is boolean; True: require them; False: drop them.
    chunk_edges : int, optional
        Maximum edges per chunk.

    Raises
    ------
    InputFormatError
        Complex or non-finite values.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> src = read_sparse(sp.csr_array([[0, 2.0], [0, 0]]))
    >>> next(src.chunks())
    (array([0]), array([1]), array([2.]))
    """
    coo = matrix.tocoo()
    if coo.dtype.kind == "c":
        raise InputFormatError("complex matrices are not graphs: weights must be real", name)
    weight = None if coo.dtype == np.bool_ else coo.data
    return array_source(coo.row, coo.col, weight, name=name, weighted=weighted,
                        chunk_edges=chunk_edges, fmt="scipy", num_vertices=int(max(coo.shape)))
