import pytest

from grstream.errors import InputFormatError
from grstream.io import open_source
from grstream.io.konect import read_konect

from ._util import collect, write


def test_asym_weighted_with_timestamps_ignored(tmp_path):
    path = write(tmp_path, "out.g", "% asym posweighted\n% 2 3 3\n1 2 5 1200000\n3 1 2 1300000\n")
    source = open_source(path)
    assert source.format == "konect" and source.num_vertices == 3
    src, dst, weight = collect(source)
    assert src.tolist() == [0, 2] and dst.tolist() == [1, 0] and weight.tolist() == [5, 2]


def test_sym_gives_both_directions(tmp_path):
    path = write(tmp_path, "out.s", "% sym unweighted\n% 2 3 3\n1 2\n3 3\n")
    src, dst, weight = collect(read_konect(path))
    assert weight is None
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (2, 2)]


def test_bip_shifts_the_right_side(tmp_path):
    path = write(tmp_path, "out.b", "% bip unweighted\n% 2 2 3\n1 1\n2 3\n")
    source = read_konect(path)
    src, dst, _ = collect(source)
    assert source.num_vertices == 5 and src.tolist() == [0, 1] and dst.tolist() == [2, 4]
    with pytest.raises(InputFormatError, match="needs the size line"):
        read_konect(write(tmp_path, "out.c", "% bip unweighted\n1 1\n"))


def test_ids_are_one_based_and_bounded(tmp_path):
    with pytest.raises(InputFormatError, match="below 1") as info:
        collect(read_konect(write(tmp_path, "out.z", "% asym unweighted\n1 2\n0 1\n")))
    assert info.value.line == 3
    with pytest.raises(InputFormatError, match="beyond the declared size 3"):
        collect(read_konect(write(tmp_path, "out.y", "% asym unweighted\n% 1 3 3\n1 4\n")))
    with pytest.raises(InputFormatError, match="at least 2 columns"):
        read_konect(write(tmp_path, "out.x", "% asym unweighted\n1\n"))
