"""The pinned host tier on the GPU: sized from the host by default, each shard's tier in the plans
and statistics, and the same values whatever tier the shards come from."""
import numpy as np
import pytest

import grstream as gr
from grstream.engine import memory

from .test_cuda_backend import build, cuda_run, gpu_minimum, largest_region, skewed_graph  # noqa: F401

pytestmark = pytest.mark.cuda


def _tiers(stats):
    return [{t: s.tier_bytes.get(t, 0) for t in memory.TIERS} for s in stats]


def test_host_sized_cache_serves_every_later_iteration(cuda_run, tmp_path, rng):  # noqa: F811
    n, src, dst, w = skewed_graph(rng, n=2000, m=20000, hub_edges=1000)
    store = build(tmp_path, n, src, dst, w, num_shards=6)
    prog = gr.algorithms.pagerank.PageRank
    low = gpu_minimum(prog(), store)
    # default pinned budget: the host has room for the whole graph, whatever the device budget
    host = cuda_run(gr.run, prog(), store, max_iter=5, memory_budget=low)
    mem = host.info["memory"]
    assert mem["pinned_rule"] == "host" and mem["residency"] in ("streaming", "partial")
    streamed = mem["num_shards"] - mem["resident_shards"]
    assert mem["pinned_shards"] == streamed > 0
    tiers = _tiers(host.stats)
    assert tiers[0]["store"] > 0 and tiers[0]["pinned"] == 0
    for t, s in zip(tiers[1:], host.stats[1:]):
        assert t["store"] == 0 and t["pinned"] > 0 and s.bytes_read == 0
        # the rest came from device memory: resident shards and shards a slot still holds
        assert sum(s.tier_shards.values()) == s.shards_processed
        assert s.tier_shards["resident"] >= mem["resident_shards"]
        # shard by shard in the plan: none from the store, the counts those of the stats
        per_shard = list(s.plan["shard_tiers"].values())
        assert "store" not in per_shard
        assert {t: per_shard.count(t) for t in memory.TIERS} == s.tier_shards
    assert set(host.stats[0].plan["shard_tiers"].values()) >= {"store"}
    assert host.totals()["tier_bytes"]["store"] == tiers[0]["store"]
    # a bounded cache (three staging buffers and one shard) re-reads what it cannot hold
    region = largest_region(prog(), store)
    bounded = cuda_run(gr.run, prog(), store, max_iter=5, memory_budget=low, pinned_budget=4 * region)
    bmem = bounded.info["memory"]
    assert bmem["pinned_rule"] == "given" and bmem["pinned_shards"] < streamed
    assert all(t["store"] > 0 for t in _tiers(bounded.stats)[1:])
    assert all(s.bytes_read > 0 for s in bounded.stats[1:])
    # staging only: every streamed shard from the store every iteration
    staging = cuda_run(gr.run, prog(), store, max_iter=5, memory_budget=low, staging_only=prog())
    assert staging.info["memory"]["pinned_shards"] == 0
    assert all(t["pinned"] == 0 and t["store"] > 0 for t in _tiers(staging.stats))
    cpu = gr.run(prog(), store, max_iter=5).values["rank"]
    for r in (host, bounded, staging):
        np.testing.assert_allclose(r.values["rank"], cpu, rtol=1e-9, atol=1e-12)


def test_host_memory_bounds_the_default_cache(cuda_run, tmp_path, rng, monkeypatch):  # noqa: F811
    """A host with little available memory caches only what its share holds."""
    n, src, dst, w = skewed_graph(rng, n=2000, m=20000, hub_edges=1000)
    store = build(tmp_path, n, src, dst, w, num_shards=6)
    prog = gr.algorithms.pagerank.PageRank
    low = gpu_minimum(prog(), store)
    region = largest_region(prog(), store)
    meminfo = tmp_path / "meminfo"
    kb = (memory.HOST_RESERVE_MIN + 5 * region) // 1024 + 1
    meminfo.write_text(f"MemTotal: {4 * kb} kB\nMemAvailable: {kb} kB\n")
    monkeypatch.setattr(memory, "MEMINFO", str(meminfo))
    r = cuda_run(gr.run, prog(), store, max_iter=4, memory_budget=low)
    mem = r.info["memory"]
    assert mem["pinned_rule"] == "host" and mem["pinned_budget"] <= 5 * region + 1024
    assert 0 < mem["pinned_shards"] < mem["num_shards"] - mem["resident_shards"]
    later = _tiers(r.stats)[1:]
    assert all(t["store"] > 0 for t in later) and sum(t["pinned"] for t in later) > 0
    np.testing.assert_allclose(r.values["rank"], gr.run(prog(), store, max_iter=4).values["rank"],
                               rtol=1e-9, atol=1e-12)


def test_cli_stats_json_names_the_tiers(gpu, tmp_path, rng, capsys):
    import json

    from grstream.cli import main
    n, src, dst, w = skewed_graph(rng, n=2000, m=20000, hub_edges=1000)
    store = build(tmp_path, n, src, dst, w, num_shards=6)
    # the program the CLI runs on this (weighted) store, whose minimum the budget is
    from grstream.algorithms.pagerank import pagerank_program
    low = gpu_minimum(pagerank_program(store), store)
    out = tmp_path / "stats.json"
    assert main(["run", "pagerank", str(store.path), "--device", "cuda", "--max-iter", "3",
                 "--memory-budget", str(low), "--stats-json", str(out)]) == 0
    assert "shard data from the pinned cache" in capsys.readouterr().err
    run = json.loads(out.read_text())["runs"][0]
    assert run["per_iteration"][-1]["tier_bytes"]["store"] == 0
    assert run["per_iteration"][-1]["tier_bytes"]["pinned"] > 0
    assert run["info"]["memory"]["pinned_rule"] == "host"
