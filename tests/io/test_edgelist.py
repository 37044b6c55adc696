import gzip

import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io import open_source
from grstream.io.edgelist import read_edgelist

from ._util import collect, write


def test_snap_file_matches_an_independent_parse(datasets_dir):
    path = datasets_dir / "p2p-Gnutella08.txt"
    rows = [line.split() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    expected = np.array(rows, dtype=np.int64)
    src, dst, weight = collect(read_edgelist(path, chunk_edges=5000))
    assert weight is None and len(src) == 20777
    np.testing.assert_array_equal(src, expected[:, 0])
    np.testing.assert_array_equal(dst, expected[:, 1])


def test_comments_blank_lines_tabs_and_spaces(tmp_path):
    path = write(tmp_path, "g.txt", "# SNAP header\n% other\n\n0 1\n1\t2\n  \n# mid\n2  3 \n\n")
    src, dst, _ = collect(read_edgelist(path))
    assert src.tolist() == [0, 1, 2] and dst.tolist() == [1, 2, 3]


def test_crlf_line_ends(tmp_path):
    path = write(tmp_path, "g.txt", "0 1\r\n1 2\r\n")
    assert collect(read_edgelist(path))[1].tolist() == [1, 2]


def test_weights_used_dropped_and_required(tmp_path):
    path = write(tmp_path, "w.el", "0 1 2.5\n1 2 -1\n2 0 1e3\n")
    src, dst, weight = collect(read_edgelist(path))
    assert weight.tolist() == [2.5, -1.0, 1000.0]
    assert collect(read_edgelist(path, weighted=False))[2] is None
    plain = write(tmp_path, "p.el", "0 1\n")
    with pytest.raises(InputFormatError, match="weights were requested"):
        read_edgelist(plain, weighted=True)


def test_csv(tmp_path):
    path = write(tmp_path, "g.csv", "# a,b\n0,1\n1, 2\n3,4\n")
    src, dst, _ = collect(open_source(path))
    assert src.tolist() == [0, 1, 3] and dst.tolist() == [1, 2, 4]


@pytest.mark.parametrize("name", ["g.txt.gz", "g.txt"])
def test_gzip_by_extension_and_by_magic_bytes(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"# c\n5 6 1.5\n7 8 2\n"))
    src, dst, weight = collect(open_source(str(path)))
    assert src.tolist() == [5, 7] and weight.tolist() == [1.5, 2.0]


def test_truncated_gzip(tmp_path):
    data = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(5000)))
    path = write(tmp_path, "g.txt.gz", data[: len(data) // 2])
    with pytest.raises(InputFormatError, match="truncated or corrupt gzip"):
        collect(read_edgelist(path))


def test_empty_and_comment_only_files_are_refused(tmp_path):
    for text in ("", "# nothing\n\n"):
        with pytest.raises(InputFormatError, match="no edges: the file is empty or holds only"):
            read_edgelist(write(tmp_path, "e.txt", text))


def test_missing_file():
    with pytest.raises(InputFormatError, match="no such file"):
        read_edgelist("/nonexistent/graph.txt")


@pytest.mark.parametrize("text, line, message", [
    ("0 1\n1 2 3\n", 2, "expected 2 columns, found 3"),
    ("0 1 1\n1 2\n", 2, "expected 3 columns, found 2"),
    ("0 1\n1\n2 3 4\n", 2, "expected 2 columns, found 1"),   # counts that add up still fail
    ("0 1\n1 x\n", 2, "'x' is not an integer"),
    ("0 1\n1.5 2\n", 2, "vertex id 1.5 is not an integer"),
    ("0 1\n1 2.0x\n", 2, "'2.0x' is not an integer"),
    ("0 1\n# c\n-3 2\n", 3, "negative vertex id -3"),
    ("0 1 1\n1 2 nan\n", 2, "weight nan is not finite"),
    ("0 1 1.5\n1 2 inf\n", 2, "weight inf is not finite"),
    ("0 1 1\n1 2 abc\n", 2, "weight 'abc' is not a number"),
    ("0 1\n99999999999999999999 2\n", 2, "too large"),
])
def test_bad_lines_report_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(InputFormatError, match=message) as info:
        collect(read_edgelist(path))
    assert info.value.line == line and info.value.path == path
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_first_line_with_wrong_column_count_fails_at_open(tmp_path):
    with pytest.raises(InputFormatError, match="expected 2 or 3 columns"):
        read_edgelist(write(tmp_path, "g.txt", "1 2 3 4\n"))


def test_chunks_are_bounded_and_reiterable(tmp_path):
    path = write(tmp_path, "g.txt", "".join(f"{i} {i + 1}\n" for i in range(1000)))
    source = read_edgelist(path, chunk_edges=64)
    sizes = [len(c[0]) for c in source.chunks()]
    assert max(sizes) == 64 and sum(sizes) == 1000
    np.testing.assert_array_equal(collect(source)[0], np.arange(1000))
    np.testing.assert_array_equal(collect(source)[1], np.arange(1, 1001))
