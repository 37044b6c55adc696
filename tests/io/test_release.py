"""Punching a temporary file's consumed pages out."""
import mmap
import os

import pytest

from grstream.io import release as release_module
from grstream.io.release import release

PAGE = mmap.PAGESIZE


def _file(tmp_path, pages):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(1, 256)) * (pages * PAGE // 255 + 1))
    return path


def test_release_drops_the_whole_pages_within_the_range(tmp_path):
    path = _file(tmp_path, 4)
    before = path.read_bytes()
    with open(path, "r+b") as handle:
        done = release(handle.fileno(), 100, 3 * PAGE + 5)
    after = path.read_bytes()
    assert len(after) == len(before)
    if not done:
        pytest.skip("this file system cannot punch holes")
    # pages 1 and 2 lie wholly within the range; pages 0 and 3 keep every byte
    assert after[:PAGE] == before[:PAGE]
    assert after[PAGE:3 * PAGE] == bytes(2 * PAGE)
    assert after[3 * PAGE:] == before[3 * PAGE:]


def test_release_of_less_than_a_page_keeps_everything(tmp_path):
    path = _file(tmp_path, 2)
    before = path.read_bytes()
    with open(path, "r+b") as handle:
        assert not release(handle.fileno(), 10, PAGE + 10)
    assert path.read_bytes() == before


def test_release_where_it_cannot_be_done(tmp_path, monkeypatch):
    monkeypatch.setattr(release_module, "_CALL", None)
    path = _file(tmp_path, 3)
    with open(path, "r+b") as handle:
        assert not release(handle.fileno(), 0, 3 * PAGE)
    assert os.path.getsize(path) >= 3 * PAGE
