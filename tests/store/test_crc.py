"""The store's CRC32 is zlib's, whichever library computes it."""
import importlib
import sys
import zlib
from unittest import mock

import numpy as np
import pytest

from grstream.store import format as fmt


@pytest.mark.parametrize("size", [0, 1, 7, 4096, 1 << 20])
def test_crc32_is_zlibs(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    assert fmt.crc32(data) == zlib.crc32(data.tobytes()) & 0xFFFFFFFF
    # a strided view is checksummed as its contiguous copy
    wide = np.random.default_rng(1).integers(0, 2 ** 31, 2 * size + 2, dtype=np.int64)
    assert fmt.crc32(wide[::2]) == zlib.crc32(np.ascontiguousarray(wide[::2]).tobytes())


def test_without_isal_zlib_computes_the_same():
    data = np.arange(100000, dtype=np.int64)
    want = fmt.crc32(data)
    try:
        with mock.patch.dict(sys.modules, {"isal": None, "isal.isal_zlib": None}):
            fallback = importlib.reload(fmt)
        assert fallback._crc32 is zlib.crc32
        assert fallback.crc32(data) == want
    finally:
        importlib.reload(fmt)


def test_isal_is_used_when_installed():
    isal_zlib = pytest.importorskip("isal.isal_zlib")
    assert fmt._crc32 is isal_zlib.crc32



@pytest.mark.parametrize("size", [1, 5, 1 << 17, (1 << 18) + 3])
def test_extremes_are_min_and_max(size):
    # the id range check's one pass: the same values as min() and max(), whichever block holds
    # them (the last block short)
    data = np.random.default_rng(size).integers(-50, 2 ** 31 - 1, size, dtype=np.int64)
    for at in {0, size // 2, size - 1}:
        probe = data.copy()
        probe[at] = -99
        assert fmt.extremes(probe) == (-99, int(probe.max()))
        probe[at] = 2 ** 40
        assert fmt.extremes(probe.astype(np.int64)) == (int(probe.min()), 2 ** 40)
