"""Every writing command: outputs never replace inputs, are checked before the work, follow the
umask, and a full disk is a one-line error naming the target that leaves nothing behind."""
import os

import numpy as np
import pytest

import grstream as gr
from grstream.cli import main

from .._outputs import disk_full, read_only


@pytest.fixture
def edges_npy(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "in.npy"
    np.save(path, np.stack([rng.integers(0, 300, 3000), rng.integers(0, 300, 3000)], axis=1))
    return path


@pytest.fixture
def store(tmp_path, edges_npy):
    path = tmp_path / "g.h5"
    gr.build_shards(edges_npy, path, num_shards=3, progress=False)
    return path


def one_error_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotted"])
def test_shard_refuses_to_replace_its_input(tmp_path, edges_npy, capsys, alias):
    before = edges_npy.read_bytes()
    output = {"same": edges_npy, "symlink": tmp_path / "link.npy", "hardlink": tmp_path / "hard.npy",
              "dotted": tmp_path / "." / "in.npy"}[alias]
    if alias == "symlink":
        output.symlink_to(edges_npy)
    elif alias == "hardlink":
        os.link(edges_npy, output)
    assert main(["shard", str(edges_npy), "-o", str(output), "--quiet"]) == 2
    assert "is the input" in one_error_line(capsys)
    assert edges_npy.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp-*"))


@pytest.mark.parametrize("flag, name", [("-o", "x.npy"), ("--stats-json", "x.json"),
                                        ("--plot", "x.png")])
def test_run_refuses_to_replace_its_store(tmp_path, store, capsys, flag, name):
    target = tmp_path / name
    target.symlink_to(store)
    before = store.read_bytes()
    assert main(["run", "cc", str(store), flag, str(target), "--quiet"]) == 2
    assert "is the input" in one_error_line(capsys)
    assert store.read_bytes() == before


def test_run_refuses_two_outputs_in_one_file(tmp_path, store, capsys):
    out = tmp_path / "both.npy"
    assert main(["run", "cc", str(store), "-o", str(out), "--stats-json", str(out), "--quiet"]) == 2
    assert "both name" in one_error_line(capsys) and not out.exists()


@pytest.mark.parametrize("argv", [
    ["generate", "rmat", "--scale", "12", "-o", "{dir}/g.npy"],
    ["generate", "rmat", "--scale", "12", "--weights", "-o", "{dir}/g.npy"],
    ["generate", "uniform", "--vertices", "900", "--edges", "40000", "-o", "{dir}/g.el"],
    ["generate", "grid", "--rows", "90", "--cols", "90", "-o", "{dir}/g.txt.gz"],
    ["shard", "{edges}", "-o", "{dir}/g.h5"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M", "--edge-ids"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M", "--tmp-dir", "{dir}/b"],
    ["run", "cc", "{store}", "-o", "{dir}/cc.npy"],
    ["run", "bfs", "{store}", "--stats-json", "{dir}/s.json"],
    ["run", "bfs", "{store}", "--plot", "{dir}/p.png"],
])
def test_full_disk_is_one_line_naming_the_target_and_leaves_nothing(tmp_path, edges_npy, store,
                                                                    capsys, monkeypatch, argv):
    out_dir = tmp_path / "out"
    (out_dir / "b").mkdir(parents=True)
    argv = [a.format(dir=out_dir, edges=edges_npy, store=store) for a in argv] + ["--quiet"]
    target = argv[argv.index("--plot" if "--plot" in argv else "--stats-json" if "--stats-json"
                             in argv else "-o") + 1]
    disk_full(monkeypatch, room=2000)
    assert main(argv) == 1
    err = one_error_line(capsys)
    assert f"cannot write {target}: no space left on device" in err
    assert sorted(p.name for p in out_dir.rglob("*")) == ["b"]


@pytest.mark.parametrize("argv", [
    ["generate", "rmat", "--scale", "4", "-o", "{dir}/g.npy"],
    ["shard", "{edges}", "-o", "{dir}/g.h5"],
    ["shard", "{edges}", "-o", "{free}/g.h5", "--memory-limit", "1M", "--tmp-dir", "{dir}"],
    ["run", "cc", "{store}", "-o", "{dir}/cc.npy"],
    ["run", "cc", "{store}", "--stats-json", "{dir}/s.json"],
    ["run", "cc", "{store}", "--plot", "{dir}/p.png"],
])
def test_unwritable_folder_fails_before_any_work(tmp_path, edges_npy, store, capsys, monkeypatch,
                                                 argv):
    import grstream.io.generate
    import grstream.partition
    import grstream.store

    def no_work(*args, **kwargs):
        raise AssertionError("the work started before the output was checked")

    for module, name in ((grstream.store, "open"), (grstream.partition, "build_shards"),
                         (grstream.io.generate, "rmat_chunks")):
        monkeypatch.setattr(module, name, no_work)
    with read_only(tmp_path / "ro") as folder:
        argv = [a.format(dir=folder, edges=edges_npy, store=store, free=tmp_path)
                for a in argv] + ["--quiet"]
        assert main(argv) == 1
        err = one_error_line(capsys)
        assert "is not writable" in err and str(folder) in err


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_outputs_get_the_umask_permissions(tmp_path, edges_npy, store, umask):
    old = os.umask(umask)
    try:
        outputs = [tmp_path / n for n in ("g.npy", "s.h5", "cc.npy", "s.json", "p.png")]
        assert main(["generate", "rmat", "--scale", "4", "-o", str(outputs[0]), "--quiet"]) == 0
        assert main(["shard", str(edges_npy), "-o", str(outputs[1]), "--quiet"]) == 0
        assert main(["run", "cc", str(store), "-o", str(outputs[2]), "--stats-json",
                     str(outputs[3]), "--plot", str(outputs[4]), "--quiet"]) == 0
    finally:
        os.umask(old)
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in outputs} == \
        {p.name: oct(0o666 & ~umask) for p in outputs}


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 256 KiB file system (tmpfs), where the machine lets us mount one (root)."""
    import shutil
    import subprocess
    folder = tmp_path / "tiny"
    folder.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount") or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
            capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (the monkeypatched tests cover the writers)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("argv", [
    ["generate", "rmat", "--scale", "14", "-o", "{dir}/g.npy"],
    ["generate", "rmat", "--scale", "14", "-o", "{dir}/g.el.gz"],
    ["shard", "{edges}", "-o", "{dir}/g.h5"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M", "--weighted"],
])
def test_a_really_full_disk(tmp_path, tiny_disk, capsys, argv):
    rng = np.random.default_rng(5)
    edges = tmp_path / "big.npy"
    np.save(edges, np.stack([rng.integers(0, 5000, 60000), rng.integers(0, 5000, 60000),
                             rng.integers(1, 9, 60000)], axis=1).astype(np.float64))
    argv = [a.format(dir=tiny_disk, edges=edges) for a in argv] + ["--quiet"]
    assert main(argv) == 1
    assert f"cannot write {argv[argv.index('-o') + 1]}: no space left on device" in \
        one_error_line(capsys)
    assert list(tiny_disk.iterdir()) == []


def test_a_store_is_not_resharded_onto_itself(store, capsys):
    before = store.read_bytes()
    assert main(["shard", str(store), "-o", str(store), "--shards", "2", "--quiet"]) == 2
    assert "is the input" in one_error_line(capsys)
    assert store.read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["shard", "{edges}", "-o", "{dir}/g.h5"],
    ["shard", "{edges}", "-o", "{dir}/g.h5", "--memory-limit", "1M"],
    ["generate", "rmat", "--scale", "4", "-o", "{dir}/g.npy"],
])
def test_a_disk_already_full_when_the_output_is_created(tmp_path, tiny_disk, edges_npy, capsys,
                                                        argv):
    filler = tiny_disk / "filler"
    with pytest.raises(OSError):
        with open(filler, "wb") as f:
            while True:
                f.write(b"x" * 4096)
                f.flush()
    argv = [a.format(dir=tiny_disk, edges=edges_npy) for a in argv] + ["--quiet"]
    assert main(argv) == 1
    assert one_error_line(capsys).endswith(
        f"cannot write {argv[argv.index('-o') + 1]}: no space left on device "
        "(nothing was written under that name)")
    assert list(tiny_disk.iterdir()) == [filler]
