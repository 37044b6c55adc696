"""The NetworkX test hook marks tests of uncovered functions and known failures."""
from pathlib import Path

from grstream.nx import testing


class Item:
    def __init__(self, path, name, keywords=()):
        self.path, self.name = Path(path), name
        self.keywords = {name: 1, Path(path).name: 1, **{k: 1 for k in keywords}}
        self.markers = []

    def add_marker(self, marker):
        self.markers.append(marker)


def test_uncovered_files_are_xfailed_without_running(monkeypatch):
    items = [Item("/x/networkx/algorithms/traversal/tests/test_dfs.py", "test_preorder"),
             Item("/x/networkx/algorithms/traversal/tests/test_bfs.py", "test_successor")]
    testing.on_start_tests(items)
    (mark,) = items[0].markers
    assert mark.name == "xfail" and mark.kwargs["run"] is False
    assert "depth-first" in mark.kwargs["reason"]
    assert items[1].markers == []


def test_known_failures_match_file_class_and_parametrized_name(monkeypatch):
    monkeypatch.setattr(testing, "XFAIL", {"test_bfs.py:TestBFS:test_x": "why"})
    items = [Item("/n/networkx/t/test_bfs.py", "test_x[a]", ["TestBFS"]),
             Item("/n/networkx/t/test_bfs.py", "test_x", ["TestOther"])]
    testing.on_start_tests(items)
    assert [m.kwargs["reason"] for m in items[0].markers] == ["why"]
    assert items[1].markers == []
