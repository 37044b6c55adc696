"""Edge lists of vertex names."""
import gzip

import numpy as np
import pytest

import grstream as gr
from grstream.errors import InputFormatError
from grstream.io import open_source
from grstream.io.edgelist import read_edgelist

from ._util import collect, write


def test_names_get_ids_in_order_of_first_appearance(tmp_path):
    # today: "vertex id 'Napoleon' is not an integer"
    path = write(tmp_path, "lesmis.txt", "# characters\nNapoleon Myriel\n\nMyriel Valjean\n"
                                         "% a comment\nValjean Napoleon\n42 Valjean\n")
    source = read_edgelist(path, chunk_edges=2)
    src, dst, weight = collect(source)
    assert weight is None and source.num_vertices is None
    assert source.labels() == ["Napoleon", "Myriel", "Valjean", "42"]
    assert src.tolist() == [0, 1, 2, 3] and dst.tolist() == [1, 2, 0, 2]
    # a second pass gives the same ids
    assert collect(source)[1].tolist() == [1, 2, 0, 2]


def test_weights_csv_with_spaces_and_gzip(tmp_path):
    path = write(tmp_path, "w.csv", "Jean Valjean, Javert, 2.5\nJavert,Fantine,1e1\n")
    source = open_source(path)
    src, dst, weight = collect(source)
    assert source.labels() == ["Jean Valjean", "Javert", "Fantine"]
    assert weight.tolist() == [2.5, 10.0] and dst.tolist() == [1, 2]
    gz = tmp_path / "g.txt.gz"
    gz.write_bytes(gzip.compress("a b\nb c\n".encode()))
    source = open_source(str(gz))
    assert collect(source)[1].tolist() == [1, 2] and source.labels() == ["a", "b", "c"]


def test_bad_named_lines_name_the_line(tmp_path):
    path = write(tmp_path, "bad.txt", "a b\nb c d e\n")
    with pytest.raises(InputFormatError, match=r"bad.txt:2: expected 2 columns, found 4"):
        collect(read_edgelist(path))
    path = write(tmp_path, "badw.txt", "a b 1\nb c heavy\n")
    with pytest.raises(InputFormatError, match=r"badw.txt:2: weight 'heavy' is not a number"):
        collect(read_edgelist(path))
    path = write(tmp_path, "latin1.txt", b"caf\xe9 b\n")
    source = read_edgelist(path)
    collect(source)
    with pytest.raises(InputFormatError, match="not UTF-8"):
        source.labels()


def test_a_header_row_is_not_taken_for_an_edge(tmp_path):
    path = write(tmp_path, "h.csv", "src,dst\n0,1\n1,2\n")
    with pytest.raises(InputFormatError, match=r"h.csv:1: the first data line names vertices "
                                               r"\(src dst\) but line 2 has integer ids"):
        open_source(path)
    assert open_source(write(tmp_path, "ok.csv", "#src,dst\n0,1\n")).labels is None


def test_numeric_lists_are_read_as_ids(tmp_path):
    source = read_edgelist(write(tmp_path, "n.txt", "5 7\n"))
    assert source.labels is None
    np.testing.assert_array_equal(collect(source)[0], [5])


def test_arrays_of_names(tmp_path):
    table = np.array([["Napoleon", "Myriel", "2.5"], ["Myriel", "Valjean", "1"]])
    source = open_source(table)
    src, dst, weight = collect(source)
    assert source.labels() == ["Napoleon", "Myriel", "Valjean"] and weight.tolist() == [2.5, 1.0]
    assert dst.tolist() == [1, 2]
    objects = (np.array([("a", 1), "b"], dtype=object), np.array(["b", 7], dtype=object))
    assert open_source(objects).labels() == [("a", 1), "b", 7]
    store = gr.open(gr.build_shards(table[:, :2], tmp_path / "n.h5", progress=False))
    assert store.labels().tolist() == ["Napoleon", "Myriel", "Valjean"]
    with pytest.raises(InputFormatError, match="weight is not a number"):
        open_source(np.array([["a", "b", "heavy"]]))
