"""Throughput in the summary lines of ``shard`` and ``run`` and in ``run --stats-json``."""
import json
import re

import numpy as np

from grstream.cli import main
from grstream.commands.run import run_totals, throughput
from grstream.engine.backend import IterationStats
from grstream.engine.result import Result


def test_shard_summary_reports_edges_per_second(tmp_path, capsys):
    edges = tmp_path / "g.npy"
    np.save(edges, np.array([[0, 1], [1, 2], [2, 0]] * 1000))
    assert main(["shard", str(edges), "-o", str(tmp_path / "g.h5"), "--threads", "2"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"3000 edges, .* s \([0-9.]+[kMG]? edges/s\)$", line), line


def test_run_summary_and_stats_json_report_gb_per_second(tmp_path, capsys):
    edges = tmp_path / "g.npy"
    np.save(edges, np.array([[0, 1], [1, 2], [2, 0]] * 1000))
    store = tmp_path / "g.h5"
    assert main(["shard", str(edges), "-o", str(store), "--quiet"]) == 0
    stats = tmp_path / "s.json"
    assert main(["run", "bfs", str(store), "--source", "0", "--stats-json", str(stats)]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"B read \([0-9.]+ GB/s\)", line), line
    doc = json.loads(stats.read_text())
    read = sum(r["totals"]["bytes_read"] for r in doc["runs"])
    # a store this small is held in memory after its first read: few or no bytes per run
    assert doc["throughput"]["store_gb_per_s"] == read / doc["seconds"] / 1e9
    assert doc["throughput"]["link_gb_per_s"] is None   # nothing went to a GPU


def test_link_rate_is_bytes_over_copy_time():
    stats = [IterationStats(bytes_read=4e9, bytes_h2d=2e9, time_copy=0.5),
             IterationStats(bytes_read=4e9, bytes_h2d=2e9, time_copy=0.5)]
    result = Result(values={}, output="x", iterations=2, converged=True, stats=stats)
    assert throughput([result], 4.0) == {"store_gb_per_s": 2.0, "h2d_gb_per_s": 1.0,
                                         "link_gb_per_s": 4.0}
    assert throughput([result], 0.0)["store_gb_per_s"] is None


def test_run_totals_sum_every_run_and_tier():
    # bc makes several runs: the summary and --stats-json add their totals, tiers by name
    one = Result(values={}, output="x", iterations=1, converged=True, stats=[
        IterationStats(bytes_read=3, bytes_h2d=2, tier_bytes={"store": 3})])
    two = Result(values={}, output="x", iterations=2, converged=True, stats=[
        IterationStats(bytes_read=1, tier_bytes={"pinned": 5}),
        IterationStats(bytes_read=2, time_copy=0.5, tier_bytes={"store": 1, "pinned": 1})])
    totals = run_totals([one, two])
    assert (totals["bytes_read"], totals["bytes_h2d"], totals["time_copy"]) == (6, 2, 0.5)
    assert totals["tier_bytes"] == {"store": 4, "pinned": 6}
    assert throughput([one, two], 2.0, totals) == throughput([one, two], 2.0)
    assert run_totals([])["bytes_read"] == 0
