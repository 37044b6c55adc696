"""gzip inputs read through ISA-L's igzip when installed, else the standard library."""
import gzip
import importlib
import sys
from unittest import mock

import numpy as np
import pytest

from grstream.errors import InputFormatError
from grstream.io import open_source, textblocks


def _edges(path):
    chunks = list(open_source(str(path)).chunks())
    return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])


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
def test_damaged_gzip_is_an_input_error(gz, damage):
    data = bytearray(gz.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2:len(data) // 2 + 64] = b"\xff" * 64
    gz.write_bytes(bytes(data))
    with pytest.raises(InputFormatError, match="gzip"):
        _edges(gz)
