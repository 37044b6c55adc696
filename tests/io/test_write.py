import io

import numpy as np
import pytest

from grstream.errors import UsageError
from grstream.io import open_source
from grstream.io.write import format_text, output_kind, write_edges

from ._util import collect


def test_format_text_matches_savetxt(rng):
    cols = [rng.integers(0, 10 ** rng.integers(1, 18), size=500) for _ in range(3)]
    cols[0][:3] = [0, 9, 10]
    expected = io.BytesIO()
    np.savetxt(expected, np.column_stack(cols), fmt="%d", delimiter="\t")
    assert format_text(cols) == expected.getvalue()
    assert format_text([np.empty(0, np.int64)] * 2) == b""


@pytest.mark.parametrize("name", ["g.npy", "g.el", "g.txt.gz"])
@pytest.mark.parametrize("weighted", [False, True])
def test_round_trip_through_the_readers(tmp_path, rng, name, weighted):
    src, dst = rng.integers(0, 1000, size=(2, 300))
    weight = rng.random(300) * 10 if weighted else None
    chunks = [(src[:100], dst[:100], None if weight is None else weight[:100]),
              (src[100:], dst[100:], None if weight is None else weight[100:])]
    path = tmp_path / name
    assert write_edges(path, chunks, weighted=weighted, total_edges=300) == 300
    got = collect(open_source(path))
    np.testing.assert_array_equal(got[0], src)
    np.testing.assert_array_equal(got[1], dst)
    if weighted:
        np.testing.assert_array_equal(got[2], weight)  # repr round-trips floats exactly
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_failed_writes_leave_no_file(tmp_path):
    def chunks():
        yield np.array([0]), np.array([1]), None
        raise RuntimeError("interrupted")
    with pytest.raises(RuntimeError):
        write_edges(tmp_path / "g.el", chunks(), weighted=False)
    with pytest.raises(UsageError, match="wrote 1 edges but total_edges=5"):
        write_edges(tmp_path / "g.npy", [(np.array([0]), np.array([1]), None)], weighted=False,
                    total_edges=5)
    with pytest.raises(UsageError, match="needs the edge count"):
        write_edges(tmp_path / "g.npy", [], weighted=False)
    assert list(tmp_path.iterdir()) == []


def test_output_kinds():
    assert output_kind("a.NPY") == "npy" and output_kind("a.el.gz") == "gzip"
    assert output_kind("a.tsv") == "text"
    with pytest.raises(UsageError, match="cannot tell the output format"):
        output_kind("a.h5")
