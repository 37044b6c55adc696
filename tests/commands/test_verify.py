"""``grstream verify``: every checksum of every dataset, each damaged one named, its own status."""
import json

import h5py
import networkx as nx
import numpy as np
import pytest

import grstream as gr
from grstream.cli import main
from grstream.errors import EXIT_CORRUPT, EXIT_USAGE

from ..store.tamper import set_index


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(7)
    edges = np.stack([rng.integers(0, 200, 2000), rng.integers(0, 200, 2000),
                      rng.integers(1, 9, 2000)], axis=1).astype(np.float64)
    return gr.build_shards(edges, tmp_path / "g.h5", num_shards=3, weighted=True, progress=False)


def corrupt(path, dataset, index=0):
    """Flip one byte of ``dataset``'s stored data, in place."""
    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_offset() + index
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x5A]))


def verify(path, capsys, *extra):
    code = main(["verify", str(path), "--quiet", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_clean_store_verifies(store, capsys):
    code, out, err = verify(store, capsys)
    assert code == 0
    with gr.open(store) as s:
        datasets = 3 + int(s.indexed) + sum(len(s.dataset_names(i)) for i in range(s.num_shards))
        assert s.indexed
        nbytes = s.nbytes()
    assert err.strip().splitlines() == [err.strip()]
    assert f"{store}: ok: {datasets} datasets in 3 shards" in err
    code, out, _ = verify(store, capsys, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["errors"] == []
    assert report["datasets"] == datasets and report["bytes"] == nbytes


def test_every_damaged_dataset_is_named_and_the_status_is_corruption(store, capsys):
    corrupt(store, "shards/1/in/src")
    corrupt(store, "shards/2/out/weight", index=9)
    # a run reading only out-edges would never see the damaged in/src
    code, _, err = verify(store, capsys)
    assert code == EXIT_CORRUPT == 3
    lines = err.strip().splitlines()
    assert "shard 1, dataset shards/1/in/src: checksum mismatch" in lines[0]
    assert "shard 2, dataset shards/2/out/weight: checksum mismatch" in lines[1]
    assert "DAMAGED, 2 bad dataset(s)" in lines[2]
    code, out, _ = verify(store, capsys, "--json")
    report = json.loads(out)
    assert code == 3 and not report["ok"]
    assert [(e["shard"], e["dataset"]) for e in report["errors"]] == \
        [(1, "shards/1/in/src"), (2, "shards/2/out/weight")]


@pytest.mark.parametrize("dataset, shard", [("vertex/in_degree", None), ("shards/0/out/indptr", 0)])
def test_damage_found_on_open_or_first_use_is_reported_too(store, capsys, dataset, shard):
    corrupt(store, dataset, index=3)
    code, out, _ = verify(store, capsys, "--json")
    report = json.loads(out)
    assert code == 3 and [(e["shard"], e["dataset"]) for e in report["errors"]] == [(shard, dataset)]
    assert "checksum mismatch" in report["errors"][0]["message"]


def test_index_that_differs_from_the_shard_objects_is_reported(store, capsys):
    with h5py.File(store, "r") as f:
        offset, moved = f["shards/2/out/dst"].id.get_offset(), f["shards/1/in/src"].id.get_offset()
        crc = int(f["shards/2/out/indptr"].attrs["crc32"])
    set_index(store, 2, "out/dst", "offset", moved)
    set_index(store, 2, "out/indptr", "crc32", 7)
    code, out, _ = verify(store, capsys, "--json")
    report = json.loads(out)
    assert code == 3 and report["opened"]
    found = {(e["shard"], e["dataset"], e["message"].split(": ")[-1]) for e in report["errors"]}
    assert {(2, "shards/2/out/dst", f"the index gives offset {moved}, the dataset has {offset}"),
            (2, "shards/2/out/indptr", f"the index gives crc32 7, the dataset has {crc}")} <= found


def test_run_on_a_damaged_store_exits_with_the_corruption_status(store, capsys):
    corrupt(store, "shards/0/in/src")
    assert main(["run", "cc", str(store), "--quiet"]) == EXIT_CORRUPT
    assert "shards/0/in/src: checksum mismatch" in capsys.readouterr().err
    # a usage error keeps its own status
    assert main(["run", "cc", str(store), "--memory-budget", "lots", "--quiet"]) == EXIT_USAGE


def test_missing_and_foreign_files(tmp_path, capsys):
    assert verify(tmp_path / "none.h5", capsys)[0] == EXIT_USAGE
    (tmp_path / "bad.h5").write_bytes(b"not hdf5 at all")
    code, _, err = verify(tmp_path / "bad.h5", capsys)
    assert code == EXIT_CORRUPT and "not a readable HDF5 file" in err


@pytest.mark.parametrize("content", [b"1 2\n2 3\n", None])
def test_a_foreign_file_is_said_to_be_no_store(tmp_path, capsys, content):
    path = tmp_path / "foreign.h5"
    if content is None:
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(3)
    else:
        path.write_bytes(content)
    code, _, err = verify(path, capsys)
    lines = err.strip().splitlines()
    assert code == EXIT_CORRUPT and len(lines) == 1, lines
    assert lines[0].startswith(f"grstream verify: error: {path}: not a grstream shard store")
    assert "bad dataset" not in err and "0 datasets" not in err
    code, out, _ = verify(path, capsys, "--json")
    report = json.loads(out)
    assert code == EXIT_CORRUPT and report["opened"] is False and len(report["errors"]) == 1


def test_a_directory_is_said_to_be_one(tmp_path, capsys):
    for command in (["verify"], ["info"], ["run", "bfs"]):
        assert main([*command, str(tmp_path), *(["--quiet"] if command[0] != "info" else [])]) \
            == EXIT_USAGE
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"grstream {command[0]}: error: {tmp_path}: is a directory, not a store "
                       "file (a store is one .h5 file)"]


def test_damaged_vertex_names_are_found(tmp_path, capsys):
    # names are read on first use, not on open: verify reads them
    path = gr.build_shards(nx.DiGraph([("Napoleon", "Myriel")]),
                           tmp_path / "n.h5", progress=False)
    corrupt(path, "vertex/label_bytes", index=2)
    code, out, _ = verify(path, capsys, "--json")
    report = json.loads(out)
    assert code == 3 and [e["dataset"] for e in report["errors"]] == ["vertex/label_bytes"]
