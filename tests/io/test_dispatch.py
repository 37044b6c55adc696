import gzip

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from grstream.errors import InputFormatError, UsageError
from grstream.io import FORMATS, detect_format, open_source

from ._util import collect, write


@pytest.mark.parametrize("name, fmt", [
    ("karate.mtx", "mtx"), ("rome99.gr", "dimacs"), ("p2p-Gnutella08.txt", "edgelist")])
def test_real_files_by_extension(datasets_dir, name, fmt):
    assert open_source(datasets_dir / name).format == fmt


@pytest.mark.parametrize("name, text, fmt", [
    ("g.graph", "%%MatrixMarket matrix coordinate pattern general\n1 1 0\n", "mtx"),
    ("g.graph", "c x\np sp 1 0\n", "dimacs"),
    ("g.graph", "% sym unweighted\n1 2\n", "konect"),
    ("g.graph", "0 1\n", "edgelist"),
    ("out.web", "1 2\n", "konect"),
    ("g.csv.gz", None, "csv"),
])
def test_detection_by_name_and_content(tmp_path, name, text, fmt):
    data = gzip.compress(b"0,1\n") if text is None else text.encode()
    path = write(tmp_path, name, data)
    assert detect_format(path) == fmt
    assert open_source(path).format == fmt


def test_npy_sniffed_without_extension(tmp_path):
    with open(tmp_path / "g.bin", "wb") as f:
        np.save(f, np.array([[0, 1]]))
    assert detect_format(tmp_path / "g.bin") == "npy"


def test_explicit_format_overrides_the_extension(tmp_path):
    path = write(tmp_path, "g.mtx", "1,2\n")
    assert collect(open_source(path, format="csv"))[1].tolist() == [2]


def test_in_memory_objects():
    assert open_source(np.array([[0, 1]])).format == "numpy"
    assert open_source((np.array([0]), np.array([1]))).format == "numpy"
    assert open_source(sp.eye(3, format="csr")).format == "scipy"
    assert open_source(nx.path_graph(3)).format == "networkx"
    with pytest.raises(InputFormatError, match="cannot read graph edges from a dict"):
        open_source({0: 1})


def test_format_errors():
    assert "mtx" in FORMATS and "networkx" in FORMATS
    with pytest.raises(UsageError, match="unknown input format 'xml'"):
        open_source("g.xml", format="xml")
    with pytest.raises(UsageError, match="in-memory"):
        open_source("g.txt", format="scipy")
    with pytest.raises(UsageError, match="reads files"):
        open_source(np.array([[0, 1]]), format="mtx")


def test_edge_source_passes_through_and_can_drop_weights():
    source = open_source(np.array([[0, 1, 2.0]]))
    assert open_source(source) is source
    dropped = open_source(source, weighted=False)
    assert not dropped.weighted and collect(dropped)[2] is None
    unweighted = open_source(np.array([[0, 1]]))
    with pytest.raises(InputFormatError, match="weights were requested"):
        open_source(unweighted, weighted=True)


def test_chunk_edges_must_be_positive():
    with pytest.raises(UsageError, match="chunk_edges"):
        open_source(np.array([[0, 1]]), chunk_edges=0)
