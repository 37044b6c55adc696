"""The block codec of compressed id datasets: encode then decode gives the ids back, for any
range, and damage is a typed error."""
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grstream.errors import CodecError, UsageError
from grstream.store import codec
from grstream.store import encode
from grstream.store.decode import decode_ids, numba_available


def rows_to_ids(rows):
    """The id array of rows each sorted (as a shard direction stores them)."""
    return np.concatenate([np.sort(np.asarray(r, dtype=np.int64)) for r in rows]) \
        if rows else np.empty(0, dtype=np.int64)


@st.composite
def id_arrays(draw):
    """Rows of sorted ids: empty rows, one-edge rows, hubs, duplicates, ids near the top."""
    n = draw(st.sampled_from([1, 2, 7, 1000, 2 ** 31 - 1, 2 ** 31 + 5, 2 ** 40]))
    near_top = st.integers(max(0, n - 40), n - 1)
    anywhere = st.integers(0, n - 1)
    row = st.one_of(
        st.just([]),
        st.lists(anywhere, min_size=1, max_size=1),
        st.lists(st.one_of(anywhere, near_top), max_size=12),
        st.builds(lambda v, k: [v] * k, anywhere, st.integers(2, 40)),           # duplicates
        st.builds(lambda lo, k, step: list(range(lo, min(n, lo + k * step), step)),
                  anywhere, st.integers(30, 150), st.integers(1, 3)))            # a hub
    rows = draw(st.lists(row, max_size=10))
    dtype = np.int32 if n <= 2 ** 31 else np.int64
    return rows_to_ids(rows).astype(dtype), n


@settings(max_examples=150, deadline=None)
@given(id_arrays(), st.data())
def test_round_trip_any_range(case, data):
    ids, n = case
    parts = codec.encode(ids, n)
    assert {p: parts[p].dtype for p in codec.PARTS} == codec.PART_DTYPES
    codec.check(parts, len(ids), n)
    out = codec.decode(parts, len(ids), n, dtype=ids.dtype)
    assert out.dtype == ids.dtype
    np.testing.assert_array_equal(out, ids)
    if numba_available():       # the compiled loop decodes the same ids
        np.testing.assert_array_equal(decode_ids(parts, len(ids), n, ids.dtype, compiled=True), ids)
    start = data.draw(st.integers(0, len(ids)))
    stop = data.draw(st.integers(start, len(ids)))
    np.testing.assert_array_equal(codec.decode(parts, len(ids), n, ids.dtype, start, stop),
                                  ids[start:stop])


needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


@needs_numba
@settings(max_examples=150, deadline=None)
@given(id_arrays())
def test_the_compiled_encoder_writes_the_reference_words(case):
    """The numba encoder is the numpy reference's twin, word for word: over one range of
    blocks and over ranges of two blocks spread over threads."""
    ids, n = case
    reference = codec.encode(ids, n)
    with ThreadPoolExecutor(3) as pool, mock.patch.object(encode, "BLOCKS_PER_TASK", 2):
        for executor in (None, pool):
            encoded = encode.encode_ids(ids, n, compiled=True, executor=executor)
            assert len(encoded) == len(ids)
            for part in codec.PARTS:
                assert encoded.parts[part].dtype == codec.PART_DTYPES[part]
                np.testing.assert_array_equal(encoded.parts[part], reference[part])


@needs_numba
def test_the_compiled_encoder_refuses_a_stream_too_long(monkeypatch):
    monkeypatch.setattr(codec, "MAX_WORDS", 3)
    ids = np.arange(0, 6400, 97, dtype=np.int32)
    for compiled in (False, True):
        with pytest.raises(UsageError, match="use more shards"):
            encode.encode_ids(ids, 7000, compiled=compiled)


def test_empty():
    parts = codec.encode(np.empty(0, np.int32), 5)
    assert parts["offsets"].tolist() == [0] and parts["words"].size == 0
    codec.check(parts, 0, 5)
    assert codec.decode(parts, 0, 5).size == 0


def test_one_vertex_store():
    """n = 1: ids take one bit; a run of duplicates is one reset and zero-width lanes."""
    ids = np.zeros(70, np.int32)
    parts = codec.encode(ids, 1)
    assert parts["widths"].tolist() == [0, 0, 0]
    assert parts["masks"].tolist() == [1, 1, 1]
    np.testing.assert_array_equal(codec.decode(parts, 70, 1), ids)


def test_layout_of_one_block():
    """The documented bit layout: resets' ids first (A bits each), then the differences."""
    ids = np.array([5, 6, 8] + list(range(1, 30)), dtype=np.int32)   # n = 32: A = 5
    parts = codec.encode(ids, 32)
    # width 1 (44 bits, 2 words; width 2: 70 bits, width 0: 160): lane 2 (+2) and lane 3
    # (down to 1) are resets beside lane 0
    assert parts["widths"].tolist() == [1] and parts["masks"].tolist() == [0b1101]
    stream = int(parts["words"][0]) | int(parts["words"][1]) << 32
    assert [(stream >> (5 * k)) & 31 for k in range(3)] == [5, 8, 1]    # the resets' ids
    assert (stream >> 15) == (1 << 29) - 1                              # 29 differences of 1
    assert parts["offsets"].tolist() == [0, 2]


def test_width_is_the_shortest_stream():
    """A block of one hub (differences of 1) but one wide jump: the jump becomes a reset."""
    ids = np.arange(32, dtype=np.int64) + 1000
    ids[20:] += 1 << 20
    parts = codec.encode(ids, 1 << 24)
    assert parts["widths"].tolist() == [1]
    assert parts["masks"].tolist() == [1 | 1 << 20]


@pytest.mark.parametrize("damage", ["offsets", "masks", "widths", "short"])
def test_damage_is_a_codec_error(damage):
    ids = np.arange(0, 6400, 3, dtype=np.int32)
    parts = {k: v.copy() for k, v in codec.encode(ids, 7000).items()}
    if damage == "offsets":
        parts["offsets"][2] += 1
    elif damage == "masks":
        parts["masks"][1] &= ~np.uint32(1)
    elif damage == "widths":
        parts["widths"][0] = 40
    else:
        parts["words"] = parts["words"][:-1]
    with pytest.raises(CodecError):
        codec.check(parts, len(ids), 7000)


def test_wrong_edge_count_is_a_codec_error():
    parts = codec.encode(np.arange(40, dtype=np.int32), 40)
    with pytest.raises(CodecError, match="blocks"):
        codec.check(parts, 70, 40)
