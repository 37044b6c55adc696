"""tools/shard_phases.py: an external build's passes timed, the store the plain command's."""
import json

import numpy as np

from grstream.io.generate import rmat
from grstream.partition import build

from ._tools import tool_module
from .partition.graphs import store_contents


def test_passes_timed_and_the_store_unchanged(tmp_path):
    tool = tool_module("shard_phases")
    src, dst = rmat(10, 8, seed=2)[:2]
    np.save(tmp_path / "g.npy", np.column_stack([src, dst]))
    originals = [getattr(module, name) for module, name, _ in tool.PASSES]
    args = ["shard", str(tmp_path / "g.npy"), "-o", str(tmp_path / "timed.h5"), "--shards", "4",
            "--memory-limit", "4M", "--renumber", "--threads", "2", "--quiet"]
    assert tool.main([str(tmp_path / "out.json"), *args]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["exit"] == 0 and out["peak_rss_gb"] > 0
    assert set(out["passes"]) == {"ids", "runs", "shards", "vertices"}
    for timed in out["passes"].values():
        assert timed["wall_s"] >= 0 and timed["cpu_s"] >= 0
    assert sum(timed["wall_s"] for timed in out["passes"].values()) <= out["wall_s"]
    assert [getattr(module, name) for module, name, _ in tool.PASSES] == originals
    plain = build.build_shards(str(tmp_path / "g.npy"), tmp_path / "plain.h5", num_shards=4,
                               memory_limit="4M", renumber=True, threads=2, progress=False)
    assert store_contents(tmp_path / "timed.h5") == store_contents(plain)
