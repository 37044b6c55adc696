"""tools/bench_codec.py's build and PageRank modes: each measures the plain and the compressed
store of one graph in the same run and prints both, their ratio and the load."""
import re

from ._tools import tool_module

RATIO = r"plain ([\d.]+) m?s, compressed ([\d.]+) m?s, ratio ([\d.]+)"


def test_build_compares_both_stores(capsys):
    tool_module("bench_codec").build_walls(8, 2, 2)
    line = capsys.readouterr().out.strip()
    found = re.findall(RATIO, line)
    assert line.startswith("RMAT-8 build on 2 threads") and len(found) == 2   # wall and CPU
    for plain, packed, ratio in found:   # each printed to 2 decimals: the ratio of the unrounded
        plain, packed, ratio = float(plain), float(packed), float(ratio)   # values lies between
        low = (packed - 0.005) / (plain + 0.005)                           # the rounded bounds'
        high = (packed + 0.005) / max(plain - 0.005, 1e-9)
        assert low - 0.005 <= ratio <= high + 0.005
    assert "load average" in line


def test_pagerank_reports_resident_and_quarter_budget(tmp_path, capsys):
    tool_module("bench_codec").pagerank_iterations(8, 1, 3, str(tmp_path))
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "RMAT-8 PageRank per iteration, resident", "RMAT-8 PageRank per iteration, quarter budget"]
    for line in lines:   # run / iterations, steady iteration, CPU time
        assert len(re.findall(RATIO, line)) == 3 and "load average" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rmat8-compressed.h5", "rmat8.h5"]
