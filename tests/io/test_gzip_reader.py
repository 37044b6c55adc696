"""gzip inputs read through ISA-L's igzip when installed, else the standard library."""
import gzip
import importlib
import sys
from unittest import mock

import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io import open_source, textblocks, texttable


def _edges(path, threads=1):
    chunks = list(open_source(str(path), threads=threads).chunks())
    return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])


@pytest.fixture
def stdlib_gzip():
    """textblocks as it is without ISA-L (the standard library's gzip reader)."""
    try:
        with mock.patch.dict(sys.modules, {"isal": None, "isal.igzip": None,
                                           "isal.isal_zlib": None}):
            importlib.reload(textblocks)
        assert textblocks._gzip is gzip
        yield
    finally:
        importlib.reload(textblocks)


@pytest.fixture
def gz(tmp_path):
    path = tmp_path / "g.el.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{i} {(i * 7) % 1000}\n" for i in range(20000)))
    return path


def test_gzip_fallback_reads_the_same_edges(gz):
    fast = _edges(gz)
    try:
        with mock.patch.dict(sys.modules, {"isal": None, "isal.igzip": None,
                                           "isal.isal_zlib": None}):
            importlib.reload(textblocks)
        assert textblocks._gzip is gzip
        slow = _edges(gz)
    finally:
        importlib.reload(textblocks)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    np.testing.assert_array_equal(fast[0], np.arange(20000))


def test_igzip_is_used_when_installed():
    igzip = pytest.importorskip("isal.igzip")
    assert textblocks._gzip is igzip


@pytest.mark.parametrize("damage", ["truncate", "corrupt"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reader", ["isal", "stdlib"])
def test_damaged_gzip_is_an_input_error(gz, damage, threads, reader, request):
    if reader == "stdlib":
        request.getfixturevalue("stdlib_gzip")
    data = bytearray(gz.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2:len(data) // 2 + 64] = b"\xff" * 64
    gz.write_bytes(bytes(data))
    # small blocks, parsed in this process or on several (the error comes from the reader)
    with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
            mock.patch.object(texttable, "BLOCK_BYTES", 1 << 12), \
            pytest.raises(InputFormatError, match="truncated or corrupt gzip data"):
        _edges(gz, threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reader", ["isal", "stdlib"])
def test_concatenated_gzip_members_read_as_one_text(tmp_path, threads, reader, request):
    """A gzip file of several members (``cat a.gz b.gz``) is their texts one after the other,
    a line cut between two members included, across block boundaries."""
    if reader == "stdlib":
        request.getfixturevalue("stdlib_gzip")
    text = "".join(f"{i} {(i * 7) % 1000}\n" for i in range(6000)).encode()
    cuts = [0, 7001, 7003, 20000, len(text)]          # 7001: inside a line
    path = tmp_path / "g.txt.gz"
    path.write_bytes(b"".join(gzip.compress(text[a:b]) for a, b in zip(cuts, cuts[1:])))
    with mock.patch.object(texttable, "PARALLEL_TEXT_BYTES", 0), \
            mock.patch.object(texttable, "BLOCK_BYTES", 1 << 12):
        src, dst = _edges(path, threads)
    np.testing.assert_array_equal(src, np.arange(6000))
    np.testing.assert_array_equal(dst, (np.arange(6000) * 7) % 1000)
