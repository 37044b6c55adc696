import json

import numpy as np
import pytest

from grstream.commands import info as info_command
from grstream.errors import ShardStoreError
from grstream.partition import build_shards

from ..partition.graphs import array_source


def main(argv):
    # the info command alone, as cli.main dispatches it (the full CLI needs every command present)
    import argparse
    parser = argparse.ArgumentParser()
    info_command.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def store(tmp_path):
    src = np.array([0, 0, 0, 1, 2, 3])
    dst = np.array([1, 2, 3, 2, 3, 0])
    return build_shards(array_source(src, dst, np.arange(6.0)), tmp_path / "g.h5", num_shards=2,
                        progress=False)


def test_info_json(store, capsys):
    assert main(["info", str(store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["num_vertices"], info["num_edges"], info["num_shards"]) == (4, 6, 2)
    per_shard = [s["num_in_edges"] + s["num_out_edges"] for s in info["shards"]]
    assert info["max_shard_edges"] == max(per_shard)
    assert info["mean_shard_edges"] == sum(per_shard) / 2 == 6.0
    assert info["format_version"] == 1 and info["directed"] is True and info["renumbered"] is False
    assert info["edge_props"] == {"weight": "float64"}
    assert info["nbytes"] == sum(s["nbytes"] for s in info["shards"])


def test_info_text(store, capsys):
    assert main(["info", str(store)]) == 0
    out = capsys.readouterr().out
    assert "vertices:     4" in out and "edges:        6" in out and "weight (float64)" in out


def test_info_bad_store_one_line_error(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    with pytest.raises(ShardStoreError) as error:
        main(["info", str(bad)])
    message = str(error.value)
    assert "bad.h5" in message and "not a readable HDF5 file" in message and "\n" not in message
