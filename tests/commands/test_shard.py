import json

import numpy as np
import pytest

import grstream as gr
from grstream.cli import main

from ..partition.graphs import DATASETS, expected_edges, same_matrix, scipy_of

io = pytest.importorskip("grstream.io")
if not hasattr(io, "open_source"):
    pytest.skip("the readers (grstream.io.open_source) are not there yet", allow_module_level=True)


def test_shard_npy_with_every_flag(tmp_path, capsys):
    edges = np.array([[0, 1, 2.0], [1, 1, 1.0], [0, 1, 0.5], [2, 0, 4.0]])
    np.save(tmp_path / "g.npy", edges)
    out = tmp_path / "shards" / "g.h5"
    out.parent.mkdir()
    rc = main(["shard", str(tmp_path / "g.npy"), "-o", str(out), "--shards", "2", "--undirected",
               "--weighted", "--drop-self-loops", "--drop-duplicates", "--memory-limit", "4M",
               "--weight-dtype", "float32"])
    assert rc == 0
    assert "shards" in capsys.readouterr().err
    n, expect, _ = expected_edges([0, 1, 0, 2], [1, 1, 1, 0], [2.0, 1.0, 0.5, 4.0], undirected=True,
                                  self_loops=False, duplicates=False)
    with gr.open(out) as store:
        assert store.num_shards == 2 and store.edge_props == {"weight": np.dtype(np.float32)}
        assert same_matrix(store.to_scipy(), scipy_of(n, expect))
    assert main(["info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_edges"] == len(expect)


def test_shard_quiet_and_bad_sizes(tmp_path, capsys):
    np.save(tmp_path / "g.npy", np.array([[0, 1], [1, 2]]))
    assert main(["shard", str(tmp_path / "g.npy"), "-o", str(tmp_path / "q.h5"), "--quiet",
                 "--shard-size", "1KiB", "--renumber"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["shard", str(tmp_path / "g.npy"), "-o", str(tmp_path / "x.h5"),
                 "--memory-limit", "lots"]) == 2
    assert "byte size" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.skipif(not DATASETS.is_dir(), reason="../shared/datasets not present")
@pytest.mark.parametrize("name", ["karate.mtx", "dolphins.mtx", "netscience.mtx", "rome99.gr",
                                  "p2p-Gnutella08.txt"])
@pytest.mark.parametrize("limit", [None, "2M"])
def test_shared_datasets_match_scipy(tmp_path, name, limit):
    source = io.open_source(DATASETS / name)
    raw = [np.concatenate(parts) if parts else np.empty(0)
           for parts in zip(*[(s, d, (w if w is not None else np.ones(len(s))))
                              for s, d, w in source.chunks()])]
    n, expect, _ = expected_edges(raw[0], raw[1], raw[2], num_vertices=source.num_vertices)
    out = tmp_path / "d.h5"
    argv = ["shard", str(DATASETS / name), "-o", str(out), "--shards", "3", "--quiet"]
    if limit:
        argv += ["--memory-limit", limit]
    assert main(argv) == 0
    with gr.open(out) as store:
        for kind in ("csr", "csc"):
            assert same_matrix(store.to_scipy(kind, weights=source.weighted), scipy_of(n, expect, kind))


def test_shard_edge_ids_flag(tmp_path):
    np.save(tmp_path / "g.npy", np.array([[0, 1], [1, 2], [2, 0], [2, 1]]))
    for flag, expected in (([], False), (["--edge-ids"], True)):
        out = tmp_path / f"g{expected}.h5"
        assert main(["shard", str(tmp_path / "g.npy"), "-o", str(out), "--quiet"] + flag) == 0
        with gr.open(out) as store:
            assert store.edge_ids == expected
            assert ("in/eid" in store.dataset_names(0)) == expected
