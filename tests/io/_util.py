"""Helpers for the reader tests."""
import numpy as np


def collect(source):
    """All edges of an EdgeSource as (src, dst, weight or None), checking the chunk contract."""
    parts = list(source.chunks())
    for src, dst, weight in parts:
        assert src.dtype == np.int64 and dst.dtype == np.int64 and len(src) == len(dst)
        assert (weight is None) == (not source.weighted)
        if weight is not None:
            assert weight.dtype == np.float64 and len(weight) == len(src)
    src = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int64)
    dst = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, np.int64)
    weight = np.concatenate([p[2] for p in parts]) if parts and source.weighted else None
    return src, dst, weight


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)
