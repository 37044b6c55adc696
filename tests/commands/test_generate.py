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
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, name + ".json"]


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


@pytest.mark.parametrize("name", ["g.npy", "g.el", "g.txt.gz"])
def test_the_vertex_count_survives_isolated_trailing_vertices(tmp_path, capsys, name):
    import json

    import grstream as gr
    # seed 30: the largest id that occurs is 28 of 0..31, and vertex 0 has no out-edge
    src, dst = gen.rmat(5, 1, seed=30)
    assert max(src.max(), dst.max()) == 28 and not (src == 0).any()
    out, store = tmp_path / name, tmp_path / "g.h5"
    assert main(["generate", "rmat", "--scale", "5", "--edge-factor", "1", "--seed", "30",
                 "-o", str(out), "--quiet"]) == 0
    assert f"(vertex count in {out}.json)" in capsys.readouterr().err
    side = json.loads((tmp_path / (name + ".json")).read_text())
    assert (side["num_vertices"], side["num_edges"]) == (32, 32)
    assert main(["shard", str(out), "-o", str(store), "--quiet"]) == 0
    with gr.open(store) as s:
        assert s.num_vertices == 32 and not s.renumbered
        # the default source reaches something: not the isolated vertex 0
        source = s.default_source()
        assert source == int(np.flatnonzero(s.out_degree())[0]) and source > 0
        from grstream.algorithms.bfs import bfs
        levels, _ = bfs(s, s.to_labels([source])[0])
        assert (levels >= 0).sum() > 1


def test_a_side_file_for_another_file_is_ignored(tmp_path, caplog, capsys):
    import json

    import grstream as gr
    out = tmp_path / "g.el"
    assert main(["generate", "rmat", "--scale", "5", "--edge-factor", "1", "--seed", "30",
                 "-o", str(out), "--quiet"]) == 0
    out.write_text("0 1\n1 2\n")         # replaced by other means: the count is not its
    with gr.open(gr.build_shards(out, tmp_path / "g.h5", progress=False)) as s:
        assert s.num_vertices == 3
    assert "ignoring the side file" in caplog.text
    (tmp_path / "g.el.json").write_text(json.dumps({"format": "grstream-edge-file",
                                                    "num_vertices": -4, "bytes": 8}))
    assert main(["shard", str(out), "-o", str(tmp_path / "h.h5"), "--quiet"]) == 2
    assert "holds no vertex count" in capsys.readouterr().err
    (tmp_path / "g.el.json").write_text(json.dumps({"format": "grstream-edge-file",
                                                    "num_vertices": 2, "bytes": 8}))
    assert main(["shard", str(out), "-o", str(tmp_path / "h.h5"), "--quiet"]) == 2
    assert f"{out}:2: vertex id 2 is beyond the declared size 2" in capsys.readouterr().err
