"""Text parsed on worker processes gives the one-process reader's edges, order and errors."""
import gzip
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grstream.errors import InputFormatError
from grstream.io import arrowtext, open_source, texttable
from grstream.io.parallel_text import line_ranges
from grstream.io.textblocks import iter_blocks
from grstream.io.texttable import TextTable, find_first_data, is_data_line


@pytest.fixture(autouse=True, params=["threads", "processes"])
def workers_for_small_files(request):
    """Several threads (where Arrow parses) or worker processes (without Arrow) for files of
    any size (they take over from 16 MiB of text)."""
    arrow = request.param == "threads"
    if arrow:
        pytest.importorskip("pyarrow")
    with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
            mock.patch.object(arrowtext, "installed", lambda: arrow):
        yield request.param


def _edges(chunks):
    chunks = list(chunks)
    cat = (lambda k: np.concatenate([c[k] for c in chunks]) if chunks else np.empty(0))
    weights = None if not chunks or chunks[0][2] is None else cat(2)
    return [len(c[0]) for c in chunks], cat(0), cat(1), weights


def _same(a, b):
    assert a[0] == b[0]
    for x, y in zip(a[1:], b[1:]):
        if x is None:
            assert y is None
        else:
            assert x.dtype == y.dtype and np.array_equal(x, y)


def _table(path, workers, block_bytes=64, **options):
    _, first = find_first_data(str(path), is_data_line((b"#", b"%")))
    return TextTable(str(path), first, options.pop("ncol", 2), use_weight=options.pop(
        "use_weight", False), block_bytes=block_bytes, workers=workers,
        comments=(b"#", b"%"), **options)


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=40), block=st.integers(1, 50),
       offset=st.integers(0, 5), final_newline=st.booleans())
def test_line_ranges_are_the_serial_blocks(tmp_path_factory, sizes, block, offset,
                                           final_newline):
    text = b"".join(b"x" * n + b"\n" for n in sizes)
    if not final_newline:
        text = text[:-1]
    offset = min(offset, len(text))
    path = tmp_path_factory.mktemp("r") / "f.txt"
    path.write_bytes(text)
    with mock.patch("grstream.io.parallel_text._CUT_WINDOW", 7):
        ranges = list(line_ranges(str(path), offset, block))
    blocks = list(iter_blocks(str(path), offset, block))
    got = [text[a:b] if text[a:b].endswith(b"\n") else text[a:b] + b"\n" for _, a, b in ranges]
    assert got == blocks


def _write_text(path, lines, gz):
    data = "".join(lines).encode()
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def _random_lines(seed, m=3000, weighted=False):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, 500, m), rng.integers(0, 500, m)
    seps = ["\t", " ", "  ", " \t "]
    lines = ["# a SNAP header\n"]
    for k in range(m):
        line = f"{src[k]}{seps[k % 4] if k % 97 == 0 else chr(9)}{dst[k]}"
        if weighted:
            line += f"\t{(k % 13) / 4}"
        lines.append(line + ("\r\n" if k % 251 == 3 else "\n"))
        if k % 389 == 5:
            lines.append("# a comment between data lines\n\n")
    return lines


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_workers_give_the_serial_pieces(tmp_path, gz, weighted):
    path = _write_text(tmp_path / ("g.txt.gz" if gz else "g.txt"),
                       _random_lines(1, weighted=weighted), gz)
    options = {"ncol": 3 if weighted else 2, "use_weight": weighted}
    serial = list(_table(path, 1, block_bytes=997, **options).pieces())
    parallel = list(_table(path, 2, block_bytes=997, **options).pieces())
    assert len(serial) == len(parallel) > 10
    for a, b in zip(serial, parallel):
        _same((0,) + a, (0,) + b)


@pytest.mark.parametrize("name,text,line,gz", [
    ("g.txt", "0 1\n" * 500 + "0 x\n" + "1 2\n" * 500 + "-3 1\n", 501, False),
    ("g.txt", "0 1\n" * 500 + "0 x\n" + "1 2\n" * 500 + "-3 1\n", 501, True),
    ("g.txt", "0 1\n" * 700 + "# c\n" + "5 -1\n" + "0 1\n" * 10, 702, False),
    ("g.txt", "0 1\n" * 300 + "1 2 3\n" + "0 1\n" * 900, 301, True),
    ("g.txt", "0 1\n" * 1000 + "7 2", None, False),
])
def test_errors_name_the_same_line(tmp_path, name, text, line, gz):
    path = _write_text(tmp_path / (name + (".gz" if gz else "")), [text], gz)
    results = []
    for workers in (1, 2):
        try:
            results.append(_edges(_table(path, workers, block_bytes=211).chunks(50)))
        except InputFormatError as exc:
            results.append(str(exc))
    if line is None:
        _same(*results)
        assert results[0][1][-1] == 7
    else:
        assert results[0] == results[1]
        assert f":{line}: " in results[0]


@pytest.mark.parametrize("fmt,text,declared", [
    ("mtx", "%%MatrixMarket matrix coordinate real symmetric\n% c\n60 60 {m}\n", None),
    ("gr", "c arcs\np sp 60 {m}\n", None),
    ("csv", "", None),
    ("tsv", "", 60),
])
def test_readers_build_the_same_source_on_workers(tmp_path, fmt, text, declared):
    rng = np.random.default_rng(7)
    m = 4000
    src, dst = rng.integers(1, 61, m), rng.integers(1, 61, m)
    weight = rng.integers(1, 9, m)
    if fmt == "mtx":
        body = "".join(f"{max(s, d)} {min(s, d)} {w}\n" for s, d, w in zip(src, dst, weight))
    elif fmt == "gr":
        body = "".join(f"a {s} {d} {w}\n" for s, d, w in zip(src, dst, weight))
    elif fmt == "csv":
        body = "".join(f"{s - 1},{d - 1}\n" for s, d in zip(src, dst))
    else:
        body = "".join(f"{s - 1}\t{d - 1}\t{w}\n" for s, d, w in zip(src, dst, weight))
    path = tmp_path / f"g.{fmt}"
    path.write_text(text.format(m=m) + body)
    if declared:
        (tmp_path / f"g.{fmt}.json").write_text(f'{{"num_vertices": {declared}}}')
    with mock.patch.object(texttable, "BLOCK_BYTES", 4096):
        serial = open_source(str(path), chunk_edges=1000, threads=1)
        parallel = open_source(str(path), chunk_edges=1000, threads=2)
        _same(_edges(serial.chunks()), _edges(parallel.chunks()))
    assert parallel.num_vertices == serial.num_vertices


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path, workers_for_small_files):
    if workers_for_small_files == "threads":
        pytest.skip("no worker process: Arrow parses on threads")
    from grstream.errors import InternalError
    from grstream.io import parallel_text
    path = _write_text(tmp_path / "g.txt", ["0 1\n"] * 100, False)
    with mock.patch.object(parallel_text, "_WORKER", "import sys; sys.exit(3)"), \
            pytest.raises(InternalError, match="ended with status 3"):
        list(_table(path, 2).pieces())


def test_a_file_that_shrinks_while_workers_read_it(tmp_path):
    from grstream.io import parallel_text
    path = _write_text(tmp_path / "g.txt", ["0 1\n"] * 100, False)

    def past_the_end(path, offset, block_bytes):
        yield path, offset, 1000          # the file has 400 bytes
    with mock.patch.object(parallel_text, "line_ranges", past_the_end), \
            pytest.raises(InputFormatError, match="shrank while it was read .at byte 400"):
        list(_table(path, 2).pieces())
