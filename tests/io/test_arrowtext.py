"""Blocks parsed by Arrow give the block parser's edges, dtypes and errors, or go back to it."""
import gzip
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grstream.io import arrowtext, open_source, texttable
from grstream.io.textblocks import BlockParser
from grstream.io.texttable import check_block

pytest.importorskip("pyarrow")

# tokens the two parsers might read differently: signs, hex, reals, int64 and 2^53 bounds,
# non-finite values, quotes, padding, digit separators
_TOKENS = ["0", "1", "7", "12", "-0", "-3", "+5", "0x1f", "0X2", "1.5", "-0.0", "1e3", "2.",
           ".5", "9007199254740993", "9223372036854775807", "-9223372036854775808",
           "99999999999999999999", "1e19", "inf", "nan", '"3"', "", "1_0", " 4", "5 ", "x"]


def _same(a, b):
    assert len(a) == len(b)
    if len(a) == 2:
        assert a == b
        return
    assert a[3] == b[3]
    for x, y in zip(a[:3], b[:3]):
        if x is None:
            assert y is None
        else:
            assert x.dtype == y.dtype and np.array_equal(x, y)
            if x.dtype.kind == "f":
                assert np.array_equal(np.signbit(x), np.signbit(y))


@st.composite
def _cases(draw):
    dimacs = draw(st.booleans())
    ncol = 3 if dimacs else draw(st.integers(2, 4))
    keep = draw(st.integers(2, min(3, ncol)))
    sep = " " if dimacs else draw(st.sampled_from([" ", "\t", ","]))
    clean = st.integers(1, 39).map(str)
    crlf = draw(st.booleans())
    lines = []
    count = draw(st.integers(1, 12))
    odd = set(draw(st.lists(st.integers(0, count - 1), max_size=2)))
    for k in range(count):
        kind = draw(st.sampled_from(["odd"] * 4 + ["count", "comment", "blank", "end"])) \
            if k in odd else "clean"
        if kind in ("clean", "odd", "count", "end"):
            n = ncol + (draw(st.sampled_from([-1, 1])) if kind == "count" else 0)
            tokens = [draw(clean) for _ in range(n)]
            if kind == "odd":
                tokens[draw(st.integers(0, n - 1))] = draw(st.sampled_from(_TOKENS))
            line = sep.join(tokens)
            line = ("a " + line) if dimacs else line
        elif kind == "comment":
            line = "c 1 2 3" if dimacs else "# 1 2"
        else:
            line = draw(st.sampled_from(["", " ", "\t"]))
        end = draw(st.sampled_from(["\r", "\r\r\n", "\n\r"])) if kind == "end" else \
            "\r\n" if crlf else "\n"
        lines.append(line + end)
    block = "".join(lines)
    if not block.endswith("\n"):
        block += "\n"
    first = ("a " if dimacs else "") + sep.join(["1"] * ncol) + "\n"
    options = {"prefix": b"a ", "comments": (b"c",)} if dimacs else {
        "delimiter": b"," if sep == "," else None}
    base = 1 if dimacs else draw(st.integers(0, 1))
    limits = draw(st.sampled_from([(None, None), (40, 40), (60, 30)]))
    return block.encode(), first.encode(), ncol, keep, options, base, limits


@settings(max_examples=200, deadline=None)
@given(case=_cases())
def test_arrow_blocks_are_the_block_parsers(case):
    block, first, ncol, keep, options, base, limits = case
    parser = BlockParser("g", ncol, keep, first, **options)
    fast = arrowtext.arrow_parser(ncol, keep, first, **options)
    assert fast is not None
    _same(check_block(block, parser, fast, keep == 3, base, limits),
          check_block(block, parser, None, keep == 3, base, limits))


@pytest.mark.parametrize("first,keep,options,block", [
    (b"1\t2\n", 2, {}, b"0x1f\t2\n"),                        # Arrow reads hex
    (b"1 2 3\n", 3, {}, b"1 2 -0\n"),                          # 0 in an integral block
    (b"1 2\n", 2, {}, b"1 2\r3 4\n"),                          # a lone \r ends no line
    (b"1 2 0.5\n", 3, {}, b"9007199254740993 2 0.5\n"),        # a float64 id there
    (b"1 2 3\n", 3, {}, b"1 2 9223372036854775807\n"),         # an int64 weight overflows
    (b"1 2 3\n", 2, {}, b"1 2 \n"),                            # two columns, not three
    (b"1\t2\t3\n", 2, {}, b"1\t2\t3 4\n"),                    # four columns, not three
    (b"1,2\n", 2, {"delimiter": b","}, b'"1",2\n'),            # quotes are not special
    (b"a 1 2 3\n", 3, {"prefix": b"a ", "comments": (b"c",)}, b"a 1 2 3\nb 1 2 3\n"),
    (b"1 2\n", 2, {}, b"1 2\n# 3 4\n"),                        # a comment line
    (b"1 2\n", 2, {}, b"1 2\n\n3 4\n"),                         # a blank line
])
def test_blocks_arrow_would_read_otherwise_go_to_the_block_parser(first, keep, options, block):
    ncol = len(first.replace(b",", b" ").split()) - (1 if "prefix" in options else 0)
    parser = BlockParser("g", ncol, keep, first, **options)
    fast = arrowtext.arrow_parser(ncol, keep, first, **options)
    assert fast.edges(block, 1, (None, None)) is None
    _same(check_block(block, parser, fast, keep == 3, 1, (None, None)),
          check_block(block, parser, None, keep == 3, 1, (None, None)))


@pytest.mark.parametrize("first,options,block", [
    (b"1\t2\n", {}, b"3\t4\n5\t6\n"),
    (b"1 2 0.5\n", {}, b"3 4 1\n5 6 2.25\n"),
    (b"1,2\r\n", {"delimiter": b","}, b"3,4\r\n5,6\r\n"),
    (b"a 1 2 3\n", {"prefix": b"a ", "comments": (b"c",)}, b"a 3 4 5\na 5 6 7\n"),
    (b"1 2 3 1117\n", {}, b"3 4 1 1118\n5 6 2 1119\n"),
])
def test_arrow_answers_for_clean_blocks(first, options, block):
    ncol = len(first.replace(b",", b" ").split()) - (1 if "prefix" in options else 0)
    keep = min(ncol, 3)
    fast = arrowtext.arrow_parser(ncol, keep, first, **options)
    got = fast.edges(block, 1, (None, None))
    assert got is not None and got[0].tolist() == [2, 4] and got[1].tolist() == [3, 5]


@pytest.mark.parametrize("first,options", [
    (b"1  2\n", {}), (b"1 \t2\n", {}), (b"1, 2\n", {"delimiter": b","}), (b"1;2\n", {}),
])
def test_no_arrow_for_irregular_separators(first, options):
    assert arrowtext.arrow_parser(2, 2, first, **options) is None


@pytest.mark.parametrize("fmt", ["txt", "txt.gz", "csv", "mtx", "gr", "konect"])
@pytest.mark.parametrize("threads", [1, 2])
def test_readers_give_the_same_edges_with_and_without_arrow(tmp_path, fmt, threads):
    rng = np.random.default_rng(3)
    m = 3000
    src, dst = rng.integers(1, 41, m), rng.integers(1, 41, m)
    weight = rng.integers(-4, 9, m) / 4
    name = {"konect": "out.g"}.get(fmt, "g." + fmt)
    head = {"mtx": f"%%MatrixMarket matrix coordinate real general\n40 40 {m}\n",
            "gr": f"p sp 40 {m}\n", "konect": "% asym unweighted\n"}.get(fmt, "# SNAP\n")
    row = {"csv": "{},{}\n", "mtx": "{} {} {}\n", "gr": "a {} {} {}\n",
           "konect": "{} {} {} 99\n"}.get(fmt, "{}\t{}\t{}\n")
    lines = [row.format(s, d, w) for s, d, w in zip(src, dst, weight)]
    commented = fmt in ("txt", "txt.gz", "csv")
    if commented:
        lines[1500] = "# a comment\n\n"
    data = (head + "".join(lines)).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if fmt.endswith(".gz") else data)
    results = []
    with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
            mock.patch.object(texttable, "BLOCK_BYTES", 4096):
        for arrow in (True, False):
            with mock.patch.object(arrowtext, "installed", lambda arrow=arrow: arrow):
                chunks = list(open_source(str(path), chunk_edges=700, threads=threads).chunks())
            results.append([np.concatenate([c[k] for c in chunks])
                            for k in range(3 if chunks[0][2] is not None else 2)])
    for a, b in zip(*results):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert len(results[0][0]) == m - commented
