"""``open_source``: pick the reader for a file name, an in-memory object or an explicit format."""
import dataclasses
import os

import numpy as np

from ..errors import InputFormatError, UsageError
from .base import EdgeSource
from .h5store import HDF5_SIGNATURE
from .pipes import input_name, is_stream, reopen
from .textblocks import open_bytes

#: format names accepted by ``open_source(format=...)``
FORMATS = ("edgelist", "csv", "konect", "mtx", "dimacs", "npy", "store", "numpy", "scipy",
           "networkx")
#: the formats read as text, whose blocks parse on worker processes (``threads``)
TEXT_FORMATS = ("edgelist", "csv", "konect", "mtx", "dimacs")

_EXTENSIONS = {".mtx": "mtx", ".gr": "dimacs", ".npy": "npy", ".h5": "store", ".hdf5": "store",
               ".csv": "csv", ".txt": "edgelist",
               ".el": "edgelist", ".edges": "edgelist", ".tsv": "edgelist", ".snap": "edgelist"}


def _sniff(path):
    """Guess a format from the first bytes of a file with an unknown extension."""
    with open_bytes(path) as f:
        head = f.read(4096)
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(HDF5_SIGNATURE):
        return "store"
    if head[:14].lower() == b"%%matrixmarket":
        return "mtx"
    first = head.lstrip().split(b"\n", 1)[0].split()
    if first[:1] in ([b"c"], [b"p"]):
        return "dimacs"
    if len(first) > 1 and first[0] == b"%" and first[1] in (b"sym", b"asym", b"bip"):
        return "konect"
    return "edgelist"


def detect_format(path):
    """The reader format for a file: by extension (``.gz`` looked through), then by content.

    KONECT files are recognised by their ``out.`` name prefix or ``% sym|asym|bip`` header,
    shard stores (format ``"store"``) by ``.h5``/``.hdf5`` or the HDF5 signature.
    """
    name = os.path.basename(str(path)).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.startswith("out."):
        return "konect"
    fmt = _EXTENSIONS.get(os.path.splitext(name)[1])
    return fmt if fmt is not None else _sniff(path)


def _object_format(source):
    if isinstance(source, np.ndarray) or isinstance(source, (tuple, list)):
        return "numpy"
    module = type(source).__module__
    if module.startswith("scipy.sparse"):
        return "scipy"
    if module.startswith("networkx"):
        return "networkx"
    raise InputFormatError(f"cannot read graph edges from a {type(source).__name__}")


def _reweight(source, weighted):
    """Apply ``weighted`` to an existing EdgeSource without re-reading it."""
    if weighted is None or weighted == source.weighted:
        return source
    if weighted and not source.weighted:
        raise InputFormatError("weights were requested but the input has none", source.name)

    def chunks():
        for src, dst, _ in source.chunks():
            yield src, dst, None

    return dataclasses.replace(source, make_chunks=chunks, weighted=False, meta=dict(source.meta),
                               rows=None, make_pieces=None)   # (these would carry the weights)


def open_source(source, format=None, *, weighted=None, chunk_edges=None, threads=1):
    """Open any supported graph input as a re-iterable :class:`EdgeSource`.

    Parameters
    ----------
    source : str, os.PathLike, ndarray, tuple, scipy.sparse matrix, networkx graph or EdgeSource
        A file (format from ``format``, else the extension, else the content) or an in-memory
        graph. ``"-"`` is standard input; it and pipes (FIFOs, ``/dev/stdin``) are read as
        streams (:mod:`grstream.io.pipes`): text formats only, through once.
    format : str, optional
        One of :data:`FORMATS`; overrides detection.
    weighted : bool or None
        None: use weights when the input has them; True: require them; False: drop them.
    chunk_edges : int, optional
        Maximum edges per chunk (default 4 Mi).
    threads : int
        Chunks read at once where the format allows it: ``.npy`` each on its own thread, the
        text formats' blocks each on its own process (:mod:`grstream.io.parallel_text`).

    Returns
    -------
    EdgeSource
        ``chunks()`` yields ``(src int64, dst int64, weight float64 or None)`` with 0-based ids.

    Raises
    ------
    InputFormatError
        Malformed or missing input (file name and line when known).
    UsageError
        An unknown ``format`` name.

    Examples
    --------
    >>> import numpy as np
    >>> src = open_source(np.array([[0, 1], [1, 2]]))
    >>> src.weighted, [c[0].tolist() for c in src.chunks()]
    (False, [[0, 1]])
    """
    from . import arrays, dimacs, edgelist, h5store, konect, mtx, npy, nxgraph, sparse
    if isinstance(source, EdgeSource):
        return _reweight(source, weighted)
    if format is not None and format not in FORMATS:
        raise UsageError(f"unknown input format {format!r}; choose one of {', '.join(FORMATS)}")
    is_path = isinstance(source, (str, os.PathLike))
    if is_path and is_stream(source):
        source = input_name(source)  # "-" is standard input
        reopen(source)               # a new source reads what the pipe gives from now on
    if format is None:
        format = detect_format(source) if is_path else _object_format(source)
    options = {"weighted": weighted, "chunk_edges": chunk_edges}
    if format in ("numpy", "scipy", "networkx"):
        if is_path:
            raise UsageError(f"format {format!r} is for in-memory objects, not the file {source}")
        reader = {"numpy": arrays.read_arrays, "scipy": sparse.read_sparse,
                  "networkx": nxgraph.read_networkx}[format]
        return reader(source, **options)
    if not is_path:
        raise UsageError(f"format {format!r} reads files; got a {type(source).__name__}")
    if format in ("npy", "store") and is_stream(source):
        raise InputFormatError(f"a {'.npy' if format == 'npy' else 'store'} input is read at "
                               "offsets, which a pipe cannot give: save it to a file first",
                               source)
    if format in TEXT_FORMATS or format == "npy":
        options["threads"] = threads
    if format == "csv":
        return edgelist.read_edgelist(source, delimiter=",", **options)
    reader = {"edgelist": edgelist.read_edgelist, "konect": konect.read_konect,
              "mtx": mtx.read_mtx, "dimacs": dimacs.read_dimacs, "npy": npy.read_npy,
              "store": h5store.read_store}[format]
    return reader(source, **options)
