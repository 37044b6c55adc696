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


def test_bfs_alone_against_scipy(bench, tmp_path):
    """``--algos bfs --no-certificates --no-read``: the one check is scipy's levels,
    made from a CSR of int32 indices without repeats; no other step's check runs."""
    report = tmp_path / "out.json"
    assert bench.main(["--scale", "8", "--shards", "3", "--device", "cpu", "--threads", "2",
                       "--build", "memory", "--algos", "bfs", "--no-certificates", "--no-read",
                       "--dir", str(tmp_path), "--json", str(report)]) == 0
    out = json.loads(report.read_text())
    assert out["open"] == out["read"] == "skipped: --no-read"
    checks = out["checks"]
    assert checks["bfs_equal_scipy"] is True
    assert set(checks) == {"bfs_levels", "bfs_reached", "unique_edges", "scipy_csr_s", "bfs_equal_scipy",
                           "scipy_bfs_s", "check_s"}
    with gr.open(tmp_path / "rmat8.h5") as store, ThreadPoolExecutor(2) as pool:
        mat = bench.scipy_csr(store, pool)
        assert mat.indices.dtype == np.int32 and mat.indptr.dtype == np.int32
        n = store.num_vertices
        pairs = []
        for i in range(store.num_shards):
            info, local = store.shard_info(i), store.read(i, "out/indptr")
            src = np.repeat(np.arange(info.lo, info.hi), np.diff(local))
            pairs.append(src * n + store.read(i, "out/dst").astype(np.int64))
        want = np.unique(np.concatenate(pairs))
        assert 0 < len(want) < store.num_edges       # RMAT repeats some edges
        got = np.repeat(np.arange(n), np.diff(mat.indptr)) * n + mat.indices
        np.testing.assert_array_equal(got, want)
        level = bench.values_of(tmp_path / "bfs.npy").astype(np.int64)
        level = np.where(level >= gr.algorithms.bfs.UNREACHED, -1, level)
        np.testing.assert_array_equal(bench.scipy_levels(mat, store.default_source()), level)


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
