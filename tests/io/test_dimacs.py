import gzip

import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io.dimacs import read_dimacs

from ._util import collect, write


def test_rome99_matches_an_independent_parse(datasets_dir):
    path = datasets_dir / "rome99.gr"
    arcs = np.array([line.split()[1:] for line in path.read_text().splitlines()
                     if line.startswith("a ")], dtype=np.int64)
    source = read_dimacs(path, chunk_edges=1000)
    src, dst, weight = collect(source)
    assert source.num_vertices == 3353 and len(src) == 8870
    np.testing.assert_array_equal(src, arcs[:, 0] - 1)
    np.testing.assert_array_equal(dst, arcs[:, 1] - 1)
    np.testing.assert_array_equal(weight, arcs[:, 2].astype(float))


def test_comments_between_arcs_gzip_and_dropping_weights(tmp_path):
    text = b"c x\np sp 3 2\nc y\na 1 2 5\nc mid\na\t3\t1\t7\n"
    path = write(tmp_path, "g.gr.gz", gzip.compress(text))
    src, dst, weight = collect(read_dimacs(path))
    assert src.tolist() == [0, 2] and dst.tolist() == [1, 0] and weight.tolist() == [5, 7]
    assert collect(read_dimacs(path, weighted=False))[2] is None


@pytest.mark.parametrize("text, line, message", [
    ("p sp 2 1\na 1 3 1\n", 2, "vertex id 3 is beyond the declared size 2"),
    ("p sp 2 2\na 1 2 1\n", 1, "header declares 2 arcs but the file has 1"),
    ("p sp 2 1\na 1 2 1\np sp 2 1\n", 3, "expected a line starting with 'a'"),
    ("p sp 2 1\na 1 2\n", 2, "expected 3 columns, found 2"),
    ("p sp 2 1\na 1 2 x\n", 2, "weight 'x' is not a number"),
    ("a 1 2 1\n", 1, "an arc before the problem line"),
    ("p sp 2\n", 1, "problem line must be"),
    ("p sp 2 1\np sp 2 1\n", 2, "a second problem line"),
    ("p sp 2 1\ne 1 2\n", 2, "unknown line type 'e'"),
])
def test_bad_files(tmp_path, text, line, message):
    with pytest.raises(InputFormatError, match=message) as info:
        collect(read_dimacs(write(tmp_path, "b.gr", text)))
    assert info.value.line == line


def test_missing_problem_line_and_empty_graph(tmp_path):
    with pytest.raises(InputFormatError, match="missing the problem line"):
        read_dimacs(write(tmp_path, "b.gr", "c only\n"))
    source = read_dimacs(write(tmp_path, "e.gr", "p sp 4 0\n"))
    assert len(collect(source)[0]) == 0 and source.num_vertices == 4
