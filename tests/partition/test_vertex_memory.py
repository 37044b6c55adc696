"""One large id must not exhaust memory: the vertex arrays are estimated before they exist."""
import numpy as np
import pytest

import grstream as gr
from grstream.cli import main
from grstream.errors import MemoryBudgetError
from grstream.partition import build_shards, vertex_budget

LARGE_IDS = [2 ** 31 - 1, 2 ** 32, 2 ** 62]


@pytest.fixture
def one_gib_available(monkeypatch):
    # whatever this machine has, the build sees 1 GiB: nothing near the estimates is allocated
    monkeypatch.setattr(vertex_budget, "available_memory", lambda: 1 << 30)


def _triangle(tmp_path, big):
    path = tmp_path / "e.txt"
    path.write_text(f"0 1\n1 {big}\n{big} 0\n")
    return path


@pytest.mark.parametrize("big", LARGE_IDS)
@pytest.mark.parametrize("memory_limit", [None, 1 << 28])
def test_a_large_id_stops_with_the_estimate_and_leaves_nothing(tmp_path, one_gib_available, big,
                                                               memory_limit):
    path = _triangle(tmp_path, big)
    per_vertex = vertex_budget.IN_MEMORY_VERTEX_BYTES if memory_limit is None else 48
    # renumber=False: the default renumbers these sparse ids (test_the_default_renumbers_them)
    with pytest.raises(MemoryBudgetError, match="--renumber") as info:
        build_shards(path, tmp_path / "e.h5", memory_limit=memory_limit, renumber=False,
                     progress=False)
    assert info.value.minimum == (big + 1) * per_vertex
    assert f"{big + 1} vertices (largest id {big})" in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == ["e.txt"]


@pytest.mark.parametrize("renumber", [True, None])
@pytest.mark.parametrize("memory_limit", [None, 1 << 28])
def test_renumbering_builds_the_same_input(tmp_path, one_gib_available, renumber, memory_limit):
    # None, the default: sparse ids are renumbered (README "Vertex ids")
    path = build_shards(_triangle(tmp_path, 2 ** 62), tmp_path / "e.h5", renumber=renumber,
                        memory_limit=memory_limit, progress=False)
    with gr.open(path) as store:
        assert (store.num_vertices, store.num_edges) == (3, 3)
        np.testing.assert_array_equal(store.original_ids(), [0, 1, 2 ** 62])


def test_a_declared_vertex_count_is_checked_before_reading(tmp_path, one_gib_available):
    path = tmp_path / "d.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n4294967296 4294967296 1\n"
                    "1 2\n")
    with pytest.raises(MemoryBudgetError, match="4294967296 vertices"):
        build_shards(path, tmp_path / "d.h5", progress=False)


def test_cli_says_it_in_one_line(tmp_path, one_gib_available, capsys):
    path = _triangle(tmp_path, 2 ** 32)
    assert main(["shard", str(path), "-o", str(tmp_path / "e.h5"), "--quiet",
                 "--no-renumber"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "256.0 GiB" in err and "--renumber" in err
    assert [p.name for p in tmp_path.iterdir()] == ["e.txt"]
