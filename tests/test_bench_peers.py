"""tools/bench_cpu_peers.py on a small graph: every installed peer's result agrees with grstream's
(the checks the benchmark keeps a time by), and the table names every column."""
import pytest

from ._tools import tool_module


@pytest.fixture(scope="module")
def bench():
    return tool_module("bench_cpu_peers")


def test_peers_agree(bench, tmp_path, capsys):
    out = tmp_path / "table.md"
    bench.main(["--scale", "9", "--bc-scale", "8", "--bc-sources", "4", "--repeat", "1",
                "--shards", "3", "--markdown", str(out), "--memory", "--cli"])
    text = out.read_text()
    assert "differs" not in text and "RESULTS DIFFER" not in capsys.readouterr().out
    wall, cpu = text.split("grstream CPU")
    rows = [line for line in wall.splitlines() if line.startswith("| RMAT")]
    assert [r.split(" | ")[1] for r in rows] == ["bfs", "sssp", "cc", "pagerank",
                                                 "betweenness, 4 sources"]
    assert "scipy" in text
    assert "SSSP peak memory: grstream" in text and "MiB" in text
    first = [line.split(" | ") for line in text.split("first call on a freshly opened store")[1]
             .split("\n\n")[1].splitlines() if line.startswith("| RMAT")]
    assert [r[1] for r in first] == ["bfs", "sssp", "cc", "pagerank"]
    # CPU seconds beside the wall seconds, and the CLI's engine seconds against scipy's
    assert "| RMAT-9 | bfs |" in cpu
    cli = [line.split(" | ") for line in text.splitlines() if "`grstream run" in line]
    assert [r[1] for r in cli] == ["`grstream run bfs`", "`grstream run sssp`"]
    assert all(float(r[3].split()[0]) > 0 and r[7].endswith(" x") for r in cli)   # engine CPU
    assert "Commit: " in text and "at the start" in text


def test_partition_check(bench):
    assert bench.same_partition([0, 0, 2], [5, 5, 1])
    assert not bench.same_partition([0, 0, 2], [5, 1, 1])
    assert not bench.same_partition([0, 1, 2], [5, 5, 1])


def test_peers_asked_for(bench):
    # --peers: only the peers named are built and timed, scipy always (the checks use it)
    assert list(bench.peers_available(["igraph"])) in (["scipy", "igraph"], ["scipy"])
    assert list(bench.peers_available(["scipy"])) == ["scipy"]
