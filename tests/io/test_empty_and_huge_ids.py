"""Inputs without edges, and ids at the int64 limit (issue 9 item 14)."""
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.cc import ConnectedComponents
from grstream.algorithms.pagerank import PageRank
from grstream.cli import main
from grstream.errors import InputFormatError
from grstream.io import open_source

from ._util import collect, write

EMPTY_FILES = [
    ("e.txt", ""),
    ("c.txt", "# only a comment\n\n% and another\n"),
    ("out.k", "% sym unweighted\n"),
    ("z.mtx", "%%MatrixMarket matrix coordinate pattern general\n% c\n0 0 0\n"),
    ("z.gr", "c nothing\np sp 0 0\n"),
]


@pytest.mark.parametrize("name, text", EMPTY_FILES)
def test_a_file_without_edges_or_declared_vertices_is_refused(tmp_path, name, text):
    with pytest.raises(InputFormatError, match="no edges"):
        open_source(write(tmp_path, name, text))


def test_an_empty_npy_table_is_refused(tmp_path):
    np.save(tmp_path / "e.npy", np.empty((0, 2), np.int64))
    with pytest.raises(InputFormatError, match=r"no edges: the array has shape \(0, 2\)"):
        open_source(tmp_path / "e.npy")


def test_cli_refuses_an_empty_file_in_one_line_and_writes_nothing(tmp_path, capsys):
    path = write(tmp_path, "e.txt", "# nothing here\n")
    assert main(["shard", path, "-o", str(tmp_path / "e.h5"), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no edges" in err and "e.txt" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.txt"]


def test_declared_vertices_without_edges_are_isolated_vertices(tmp_path):
    source = open_source(write(tmp_path, "i.mtx",
                               "%%MatrixMarket matrix coordinate pattern general\n4 4 0\n"))
    assert source.num_vertices == 4 and len(collect(source)[0]) == 0


def test_an_empty_array_through_the_api_is_an_empty_graph_the_engine_runs(tmp_path):
    path = gr.build_shards(np.empty((0, 2), np.int64), tmp_path / "e.h5", progress=False)
    with gr.open(path) as store:
        assert (store.num_vertices, store.num_edges) == (0, 0)
        for program in (PageRank(), ConnectedComponents()):
            result = gr.run(program, store)
            assert result.value.shape == (0,) and result.converged


@pytest.mark.parametrize("text", ["9223372036854775807", "9223372036854775808",
                                  "99999999999999999999999"])
def test_ids_at_or_past_2_63_minus_1_are_refused_with_the_real_bound(tmp_path, text):
    path = write(tmp_path, "b.txt", f"0 1\n1 {text}\n")
    with pytest.raises(InputFormatError, match=r"at most 2\^63 - 2") as info:
        collect(open_source(path))
    assert "too large for int64" not in str(info.value) and info.value.line == 2


def test_uint64_ids_name_the_value_and_the_bound():
    edges = (np.array([2 ** 63 - 1], np.uint64), np.array([0], np.uint64))
    with pytest.raises(InputFormatError, match=r"9223372036854775807 is too large: ids must be "
                                               r"at most 2\^63 - 2"):
        collect(open_source(edges))
