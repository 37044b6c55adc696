"""One rule for vertex ids (README "Vertex ids"): the CLI and the API take the input's ids and
key their outputs by them; API arrays are in internal order."""
import re
import shlex
import subprocess
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import bfs
from grstream.algorithms.pagerank import pagerank
from grstream.cli import main

LESMIS = """# a few Les Miserables characters
Napoleon Myriel
Myriel Valjean
Valjean Javert
Javert Valjean
Valjean Cosette
Fantine Valjean
Thenardier Eponine
"""


def shard(tmp_path, text_or_path, name, *options):
    source = text_or_path
    if "\n" in str(text_or_path):
        source = tmp_path / f"{name}.txt"
        source.write_text(text_or_path)
    out = tmp_path / f"{name}.h5"
    assert main(["shard", str(source), "-o", str(out), "--quiet", *options]) == 0
    return str(out)


def read_table(path):
    lines = path.read_text().splitlines()
    sep = "\t" if path.suffix == ".tsv" else ","
    assert lines[0] == f"id{sep}value"
    return {k: v for k, v in (line.split(sep) for line in lines[1:])}


def test_named_edge_list_bfs_from_a_name_keyed_by_names(tmp_path):
    # today: the shard step fails ("vertex id 'Napoleon' is not an integer")
    path = shard(tmp_path, LESMIS, "lesmis")
    tsv, npy = tmp_path / "levels.tsv", tmp_path / "levels.npy"
    assert main(["run", "bfs", path, "--source", "Napoleon", "-o", str(tsv), "--quiet"]) == 0
    assert main(["run", "bfs", path, "--source", "Napoleon", "-o", str(npy), "--quiet"]) == 0
    want = {"Napoleon": 0, "Myriel": 1, "Valjean": 2, "Javert": 3, "Cosette": 3, "Fantine": -1,
            "Thenardier": -1, "Eponine": -1}
    assert {k: int(v) for k, v in read_table(tsv).items()} == want
    rec = np.load(npy)                       # no pickle needed: names are fixed-width unicode
    assert dict(zip(rec["id"].tolist(), rec["value"].tolist())) == want
    with gr.open(path) as store:             # the API agrees, keyed through by_label
        levels, _ = bfs(store, "Napoleon")
        assert store.by_label(levels) == want
        nxg = nx.read_edgelist(tmp_path / "lesmis.txt", create_using=nx.DiGraph)
        assert store.labels().tolist() == list(nxg.nodes)
    assert main(["run", "bfs", path, "--source", "Gavroche", "--quiet"]) == 2


def test_named_components_are_named(tmp_path):
    path = shard(tmp_path, LESMIS, "lesmis")
    out = tmp_path / "cc.csv"
    assert main(["run", "cc", path, "-o", str(out), "--quiet"]) == 0
    comp = read_table(out)
    assert comp["Cosette"] == comp["Napoleon"] == "Napoleon"
    assert comp["Eponine"] == "Thenardier"


def test_karate_mtx_sources_are_the_files_ids(tmp_path, datasets_dir, capsys):
    # today --source 1 was the file's vertex 2 and --source 34 was "out of range"
    path = shard(tmp_path, datasets_dir / "karate.mtx", "karate")
    ref = nx.single_source_shortest_path_length(nx.karate_club_graph(), 33)  # node 33 = file 34
    out = tmp_path / "k.npy"
    assert main(["run", "bfs", path, "--source", "34", "-o", str(out), "--quiet"]) == 0
    rec = np.load(out)
    np.testing.assert_array_equal(rec["id"], np.arange(1, 35))
    assert dict(zip(rec["id"].tolist(), rec["value"].tolist())) == {k + 1: v for k, v in ref.items()}
    with gr.open(path) as store:
        levels, _ = bfs(store, 34)
        np.testing.assert_array_equal(levels, rec["value"])     # API: internal order
    capsys.readouterr()
    assert main(["run", "bfs", path, "--source", "0", "--quiet"]) == 2
    assert "source vertex 0 is out of range: the graph has 34 vertices (ids 1..34)" in \
        capsys.readouterr().err
    # no --source: the first vertex, the file's 1
    assert main(["run", "bfs", path, "-o", str(out), "--quiet"]) == 0
    assert np.load(out)["value"][0] == 0


def test_rome99_last_vertex_is_a_source(tmp_path, datasets_dir):
    # today: "source vertex 3353 is out of range"
    path = shard(tmp_path, datasets_dir / "rome99.gr", "rome")
    out = tmp_path / "d.tsv"
    assert main(["run", "sssp", path, "--source", "3353", "-o", str(out), "--quiet"]) == 0
    dist = read_table(out)
    assert len(dist) == 3353 and float(dist["3353"]) == 0.0 and "0" not in dist


def test_sparse_ids_are_renumbered_and_pagerank_has_no_ghosts(tmp_path, rng):
    # CA-GrQc in small: 300 vertices with ids up to 6,000 (today: 6,000 vertices, 95% isolated,
    # taking their share of PageRank's mass)
    ids = np.sort(rng.choice(6000, size=300, replace=False))
    g = nx.gnm_random_graph(300, 1200, seed=3, directed=True)
    g = nx.relabel_nodes(g, dict(enumerate(ids.tolist())))
    text = "".join(f"{u} {v}\n" for u, v in g.edges)
    path = shard(tmp_path, text, "sparse")
    out = tmp_path / "pr.npy"
    assert main(["run", "pagerank", path, "--tol", "1e-12", "-o", str(out), "--quiet"]) == 0
    rec = np.load(out)
    want = nx.pagerank(g, tol=1e-13, weight=None)
    occurring = sorted({v for e in g.edges for v in e})
    assert rec["id"].tolist() == occurring
    np.testing.assert_allclose(rec["value"], [want[v] for v in occurring], atol=1e-10)
    with gr.open(path) as store:
        assert store.num_vertices == len(occurring)
        ranks, _ = pagerank(store, tol=1e-12)
        np.testing.assert_array_equal(ranks, rec["value"])
        levels, _ = bfs(store, occurring[-1])
        assert levels[store.to_internal(occurring[-1])] == 0
    # --no-renumber keeps the ids (and the isolated vertices between them)
    kept = shard(tmp_path, text, "kept", "--no-renumber")
    with gr.open(kept) as store:
        assert store.num_vertices == occurring[-1] + 1


@pytest.mark.parametrize("suffix", [".txt", ".json"])
def test_output_suffix_is_checked_before_running(tmp_path, suffix):
    path = shard(tmp_path, LESMIS, "lesmis")
    assert main(["run", "bfs", path, "--source", "Napoleon", "-o", str(tmp_path / f"x{suffix}"),
                 "--quiet"]) == 2


def readme_section():
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Vertex ids\n", 1)[1].split("\n## ", 1)[0]
    return (re.search(r"```bash\n(.*?)```", section, re.S).group(1),
            re.search(r"```python\n(.*?)```", section, re.S).group(1))


def test_readme_vertex_ids_examples_run(tmp_path, monkeypatch, capsys):
    bash, python = readme_section()
    monkeypatch.chdir(tmp_path)
    for line in bash.strip().splitlines():
        command = line.split("#")[0].strip()
        if command.startswith("grstream "):
            assert main(shlex.split(command)[1:]) == 0, command
        else:
            subprocess.run(command, shell=True, check=True)
    assert read_table(tmp_path / "levels.tsv") == {"Napoleon": "0", "Myriel": "1", "Valjean": "2",
                                                   "Javert": "3"}
    capsys.readouterr()
    exec(compile(python, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    # each print shows what its comment says
    comments = [line.split("# ", 1)[1] for line in python.splitlines() if line.startswith("print(")]
    assert printed == comments


def test_info_says_how_vertices_are_named(tmp_path, datasets_dir, capsys):
    for source, text in ((datasets_dir / "karate.mtx", "vertices answer to ids 1..34"),
                         (LESMIS, "vertices are named"),
                         ("0 9000\n9000 7\n", "answer to the input's original ids")):
        path = shard(tmp_path, source, "g")
        capsys.readouterr()
        assert main(["info", path]) == 0
        assert text in capsys.readouterr().out
