"""tools/bench_scale.py on a small graph and the CPU: every step runs, the runs' values pass the
certificates and scipy's checks, the builds in memory and under a limit write the same datasets,
and the certificates refuse wrong levels and labels."""
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import grstream as gr

from ._tools import tool_module


@pytest.fixture(scope="module")
def bench():
    return tool_module("bench_scale")


@pytest.fixture(scope="module")
def ran(bench, tmp_path_factory):
    work = tmp_path_factory.mktemp("scale")
    report = work / "out.json"
    assert bench.main(["--scale", "9", "--shards", "4", "--device", "cpu", "--threads", "2",
                       "--memory-limit", "16M", "--dir", str(work), "--npy-int32",
                       "--json", str(report)]) == 0
    return work, json.loads(report.read_text())


def test_every_step_runs_and_checks(ran):
    work, out = ran
    assert out["same_datasets"] is True
    for step in ("generate", "shard_memory", "shard_limited", "bfs", "cc", "pagerank"):
        assert out[step]["exit"] == 0 and out[step]["peak_rss_gb"] > 0
    checks = out["checks"]
    assert checks["pagerank_l1"] < 1e-12
    assert checks["bfs_certified"] and checks["bfs_equal_scipy"]
    assert checks["cc_certified"] and checks["cc_equal_scipy"]
    assert out["open"]["open_ms"] > 0 and out["read"]["read_verify_gbps"] >= 0
    assert not list(work.glob("*.npy.*")) and not (work / "rmat9.npy").exists()


def test_certificates_refuse_wrong_values(bench, ran):
    work, _ = ran
    with gr.open(work / "rmat9.h5") as store, ThreadPoolExecutor(2) as pool:
        level = bench.values_of(work / "bfs.npy").astype(np.int64)
        source = store.default_source()
        assert bench.certify_bfs(store, level, source, pool)
        deep = np.flatnonzero(level > 1)[0]
        for wrong in (level[deep] + 1, level[deep] - 1, -1):
            bad = level.copy()
            bad[deep] = wrong
            assert not bench.certify_bfs(store, bad, source, pool)
        label = store.to_internal(bench.values_of(work / "cc.npy"))
        assert bench.certify_cc(store, label, pool)
        member = np.flatnonzero(label != np.arange(len(label)))[0]
        split = label.copy()
        split[member] = member
        assert not bench.certify_cc(store, split, pool)
