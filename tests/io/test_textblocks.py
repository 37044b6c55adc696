import gzip

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grstream.errors import InputFormatError
from grstream.io.textblocks import BlockParser, iter_blocks, open_bytes
from grstream.io.texttable import TextTable, find_first_data, is_data_line

from ._util import write


def parser(first=b"0\t1\n", ncol=2, **options):
    return BlockParser("f", ncol, ncol, first, **options)


def test_template_fast_path_keeps_rows_as_consecutive_lines():
    values, lines, nlines = parser().parse(b"1\t2\n3\t4\n", 10)
    assert values.tolist() == [[1, 2], [3, 4]] and lines == 10 and nlines == 2


def test_irregular_whitespace_takes_the_sentinel_path():
    values, lines, _ = parser().parse(b" 1  2 \n3\t \t4\n", 1)
    assert values.tolist() == [[1, 2], [3, 4]] and lines == 1


def test_comment_and_blank_lines_map_rows_to_their_lines():
    values, lines, nlines = parser(comments=(b"#",)).parse(b"1\t2\n# c\n\n3\t4\n", 5)
    assert values.tolist() == [[1, 2], [3, 4]] and lines.tolist() == [5, 8] and nlines == 4


def test_a_weight_of_minus_one_is_not_taken_for_a_line_end():
    p = parser(b"0 1 2\n", ncol=3)
    values, _, _ = p.parse(b"1  2 -1\n3 4  -1\n", 1)
    assert values.tolist() == [[1, 2, -1], [3, 4, -1]]


def test_prefix_lines_and_lines_without_it():
    p = parser(b"a 1 2 3\n", ncol=3, prefix=b"a ", comments=(b"c",))
    assert p.parse(b"a 1 2 3\na 4 5 6\n", 1)[0].tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(InputFormatError, match="expected a line starting with 'a'") as info:
        p.parse(b"a 1 2 3\n4 5 6\n", 7)
    assert info.value.line == 8


def test_real_weights_parse_as_floats():
    values, _, _ = parser(b"0 1 0.5\n", ncol=3).parse(b"1 2 0.25\n3 4 1e-3\n", 1)
    assert values.dtype == np.float64 and values[:, 2].tolist() == [0.25, 0.001]


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1 << 20])
def test_blocks_cut_at_line_ends_whatever_the_block_size(tmp_path, block_bytes):
    text = b"".join(b"%d %d\n" % (i, 10 * i) for i in range(300)) + b"7 70"
    path = write(tmp_path, "g.txt", text)
    blocks = list(iter_blocks(path, 0, block_bytes))
    assert all(b.endswith(b"\n") for b in blocks)
    assert b"".join(blocks) == text + b"\n"


def test_blocks_resume_at_an_offset_in_gzip(tmp_path):
    path = write(tmp_path, "g.gz", gzip.compress(b"header\n1 2\n"))
    assert b"".join(iter_blocks(path, 7)) == b"1 2\n"


def test_open_bytes_rejects_directories(tmp_path):
    with pytest.raises(InputFormatError, match="directory"):
        open_bytes(tmp_path)


def test_an_error_in_a_later_block_names_the_right_line(tmp_path):
    lines = [b"%d %d\n" % (i, i + 1) for i in range(500)]
    lines[433] = b"5 -\n"
    path = write(tmp_path, "g.txt", b"# h\n" + b"".join(lines))
    table = TextTable(path, (2, 4, lines[0]), 2, use_weight=False, block_bytes=100)
    with pytest.raises(InputFormatError) as info:
        list(table.pieces())
    assert info.value.line == 435


@st.composite
def formatted_edges(draw):
    rows = draw(st.lists(st.tuples(st.integers(0, 10**12), st.integers(0, 10**12),
                                   st.integers(-1000, 1000)), max_size=40))
    seps = draw(st.lists(st.sampled_from([" ", "\t", "  ", " \t"]), min_size=2, max_size=2))
    out = []
    for i, (s, d, w) in enumerate(rows):
        if draw(st.booleans()) and i % 5 == 0:
            out.append(draw(st.sampled_from(["# comment", "", "   ", "% x"])))
        out.append(f"{s}{seps[0]}{d}{seps[1]}{w}")
    return rows, "\n".join(out) + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=60, deadline=None)
@given(data=formatted_edges(), block_bytes=st.sampled_from([3, 16, 200, 1 << 16]))
def test_random_formatting_parses_to_the_written_edges(tmp_path_factory, data, block_bytes):
    rows, text = data
    path = write(tmp_path_factory.mktemp("h"), "g.txt", text)
    _, first = find_first_data(path, is_data_line((b"#", b"%")))
    if not rows:
        assert first is None
        return
    table = TextTable(path, first, 3, use_weight=True, block_bytes=block_bytes)
    got = [np.concatenate(x) for x in zip(*table.chunks(7))]
    expected = np.array(rows, dtype=np.int64)
    np.testing.assert_array_equal(got[0], expected[:, 0])
    np.testing.assert_array_equal(got[1], expected[:, 1])
    np.testing.assert_array_equal(got[2], expected[:, 2].astype(float))
