"""A UTF-8 byte-order mark at the start of a text input is skipped, in every text format."""
import gzip

import numpy as np
import pytest

from grstream.cli import main
from grstream.io import open_source

from ._util import collect

BOM = b"\xef\xbb\xbf"

#: name, text, (src, dst, weight) 0-based, labels when named
CASES = [
    ("g.txt", b"0 1\n1 2\n", ([0, 1], [1, 2], None)),
    ("c.txt", b"# a comment first\n0 1 2.5\n", ([0], [1], [2.5])),
    ("g.csv", b"0,1\n2,0\n", ([0, 2], [1, 0], None)),
    ("g.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 4\n3 1 5\n",
     ([0, 2], [1, 0], [4.0, 5.0])),
    ("g.gr", b"c road\np sp 3 2\na 1 2 7\na 2 3 8\n", ([0, 1], [1, 2], [7.0, 8.0])),
    ("out.k", b"% asym unweighted\n1 2\n2 3\n", ([0, 1], [1, 2], None)),
    ("names.txt", b"Napoleon Myriel\nMyriel Valjean\n", ([0, 1], [1, 2], None)),
]


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name, text, want", CASES)
def test_a_leading_byte_order_mark_is_skipped(tmp_path, name, text, want, compress):
    data = BOM + text
    path = tmp_path / (name + (".gz" if compress else ""))
    path.write_bytes(gzip.compress(data) if compress else data)
    plain = tmp_path / ("plain-" + name)
    plain.write_bytes(text)
    source = open_source(str(path))
    src, dst, weight = collect(source)
    assert src.tolist() == want[0] and dst.tolist() == want[1]
    assert (weight is None and want[2] is None) or weight.tolist() == want[2]
    assert source.format == open_source(str(plain)).format
    if source.labels is not None:
        assert source.labels() == ["Napoleon", "Myriel", "Valjean"]


def test_a_byte_order_mark_file_shards_from_the_cli(tmp_path, capsys):
    (tmp_path / "g.txt").write_bytes(BOM + b"0 1\n1 2\n2 0\n")
    assert main(["shard", str(tmp_path / "g.txt"), "-o", str(tmp_path / "g.h5"), "--quiet"]) == 0
    import grstream as gr
    with gr.open(tmp_path / "g.h5") as store:
        assert store.num_edges == 3
        np.testing.assert_array_equal(store.to_scipy().toarray(),
                                      [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_a_byte_order_mark_later_in_the_file_is_still_an_error(tmp_path):
    from grstream.errors import InputFormatError
    (tmp_path / "g.txt").write_bytes(b"0 1\n" + BOM + b"1 2\n")
    with pytest.raises(InputFormatError, match=":2"):
        collect(open_source(str(tmp_path / "g.txt")))
