import numpy as np
import pytest

from grstream.cli import main
from grstream.io import open_source
from grstream.io import generate as gen


def edges(path):
    parts = list(open_source(path).chunks())
    return [np.concatenate(x) if x[0] is not None else None for x in zip(*parts)]


@pytest.mark.parametrize("name", ["r.npy", "r.el", "r.txt.gz"])
def test_rmat_file_matches_the_api(tmp_path, capsys, name):
    out = tmp_path / name
    assert main(["generate", "rmat", "--scale", "8", "--edge-factor", "4", "--seed", "5",
                 "--weights", "-o", str(out)]) == 0
    src, dst, weight = edges(out)
    esrc, edst, eweight = gen.rmat(8, 4, seed=5, weights=True)
    np.testing.assert_array_equal(src, esrc)
    np.testing.assert_array_equal(dst, edst)
    np.testing.assert_array_equal(weight, eweight)
    err = capsys.readouterr().err
    assert "rmat: 256 vertices, 1024 edges (weighted) -> " in err and "edges/s" in err
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_npy_layout(tmp_path):
    main(["generate", "uniform", "--vertices", "9", "--edges", "30", "-o", str(tmp_path / "u.npy"),
          "--quiet"])
    table = np.load(tmp_path / "u.npy")
    assert table.dtype == np.int64 and table.shape == (30, 2)
    main(["generate", "grid", "--rows", "2", "--cols", "3", "--weights", "-o",
          str(tmp_path / "g.npy"), "--quiet"])
    table = np.load(tmp_path / "g.npy")
    assert table.dtype == np.float64 and table.shape == (gen.grid_edge_count(2, 3), 3)


def test_errors_are_one_line(tmp_path, capsys):
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o",
                 str(tmp_path / "g.h5")]) == 2
    assert main(["generate", "rmat", "--scale", "0", "-o", str(tmp_path / "g.el")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("grstream generate: error: cannot tell the output format")
    assert err[-1] == "grstream generate: error: scale must be at least 1, not 0"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", [["rmat", "--scale", "4"], ["uniform", "--vertices", "5",
                                                             "--edges", "9"]])
def test_negative_seed_is_a_usage_error(tmp_path, capsys, kind):
    assert main(["generate", *kind, "--seed", "-1", "-o", str(tmp_path / "g.npy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["grstream generate: error: seed must be an integer >= 0, not -1"]
    assert list(tmp_path.iterdir()) == []
