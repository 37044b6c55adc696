"""Atomic outputs: temporaries, permissions, full disks, stale leftovers, output checks."""
import errno
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from grstream.errors import OutputError, OutputExistsError, UsageError
from grstream.io import atomic
from grstream.io.atomic import (atomic_file, check_distinct, check_folder, check_output,
                                remove_stale_temporaries, write_array)

from .._outputs import disk_full, read_only


def dead_pid():
    """The id of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_atomic_file_renames_on_success_and_removes_the_temporary_on_error(tmp_path):
    target = tmp_path / "out.bin"
    with atomic_file(target) as f:
        f.write(b"new")
        assert atomic.temporary_path(target).exists() and not target.exists()
    assert target.read_bytes() == b"new"
    with pytest.raises(RuntimeError):
        with atomic_file(target) as f:
            f.write(b"half")
            raise RuntimeError("stop")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        with atomic_file(tmp_path / "a.txt", text=True) as f:
            f.write("x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_full_disk_names_the_target_and_leaves_nothing(tmp_path, monkeypatch):
    disk_full(monkeypatch, room=10)
    target = tmp_path / "big.npy"
    with pytest.raises(OutputError, match=r"cannot write .*big\.npy: no space left on device") as err:
        with atomic_file(target) as f:
            write_array(f, np.arange(1000))
    assert err.value.errno == errno.ENOSPC and isinstance(err.value.__cause__, OSError)
    assert list(tmp_path.iterdir()) == []


def test_write_array_writes_the_raw_bytes(tmp_path):
    records = np.zeros(3, dtype=[("p", np.int32), ("w", np.float64)])
    records["p"], records["w"] = [1, 2, 3], [0.5, 1.5, 2.5]
    with open(tmp_path / "r.bin", "wb") as f:
        write_array(f, records[::2])  # not contiguous: written as its contiguous copy
    back = np.fromfile(tmp_path / "r.bin", dtype=records.dtype)
    np.testing.assert_array_equal(back, records[::2])


def test_stale_leftovers_of_dead_writers_are_removed(tmp_path):
    dead, alive = dead_pid(), os.getpid()
    (tmp_path / f"g.h5.tmp-{dead}").write_bytes(b"partial")
    (tmp_path / f"other.npy.tmp-{dead}").write_bytes(b"partial")
    (tmp_path / f"g.h5.buckets-{dead}-abc123").mkdir()
    (tmp_path / f"g.h5.buckets-{dead}-abc123" / "in-0.bin").write_bytes(b"x")
    keep = [f"g.h5.tmp-{alive}", f"g.h5.buckets-{alive}-xyz", "notes.tmp-old", "g.h5"]
    for name in keep:
        (tmp_path / name).write_bytes(b"keep")
    # same names, other kinds: a folder is no temporary, a file no bucket directory
    keep += [f"photos.tmp-{dead}", f"list.buckets-{dead}-1"]
    (tmp_path / keep[-2]).mkdir()
    (tmp_path / keep[-1]).write_bytes(b"keep")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted(
        [f"g.h5.tmp-{dead}", f"other.npy.tmp-{dead}", f"g.h5.buckets-{dead}-abc123"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


def test_a_new_output_removes_dead_writers_temporaries_in_its_folder(tmp_path):
    stale = tmp_path / f"x.npy.tmp-{dead_pid()}"
    stale.write_bytes(b"partial")
    with atomic_file(tmp_path / "y.txt") as f:
        f.write(b"y")
    assert not stale.exists()


def test_same_file_as_an_input_is_refused(tmp_path):
    source = tmp_path / "in.npy"
    source.write_bytes(b"data")
    (tmp_path / "link.npy").symlink_to(source)
    os.link(source, tmp_path / "hard.npy")
    for output in (source, tmp_path / "link.npy", tmp_path / "hard.npy",
                   tmp_path / "sub" / ".." / "in.npy"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(UsageError, match="is the input"):
            check_output(output, inputs=[source], what="-o")
    # the input named through the link: the real file is still the output
    with pytest.raises(UsageError, match="is the input"):
        check_output(source, inputs=[tmp_path / "link.npy"])
    assert check_output(tmp_path / "other.npy", inputs=[source]) == tmp_path / "other.npy"


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    check_distinct({"-o": tmp_path / "a.npy", "--stats-json": tmp_path / "a.json", "--plot": None})
    with pytest.raises(UsageError, match="-o and --stats-json both name"):
        check_distinct({"-o": tmp_path / "a.npy", "--stats-json": tmp_path / "." / "a.npy"})


def test_unwritable_or_missing_folders_are_refused(tmp_path):
    with pytest.raises(OutputError, match=r"cannot write -o .*: folder .*nope does not exist"):
        check_output(tmp_path / "nope" / "a.npy", what="-o")
    # missing folders are refused, however deep, and none is created
    with pytest.raises(OutputError, match=r"folder .*nope/deeper does not exist"):
        check_output(tmp_path / "nope" / "deeper" / "a.h5")
    assert not (tmp_path / "nope").exists()
    with pytest.raises(UsageError, match="is a folder"):
        check_output(tmp_path)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(UsageError, match=r"cannot write -o .*file/a\.npy: .*file is not a folder"):
        check_output(tmp_path / "file" / "a.npy", what="-o")
    with read_only(tmp_path / "ro") as folder:
        with pytest.raises(OutputError, match=r"cannot write --plot .*p\.png: folder .* is not writable"):
            check_output(folder / "p.png", what="--plot")


def test_a_file_given_as_a_folder_is_said_to_be_no_folder(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(UsageError, match=r"cannot write --tmp-dir .*: .*f is not a folder"):
        check_folder(tmp_path / "f", "--tmp-dir f")
    with pytest.raises(OutputError, match="does not exist"):
        check_folder(tmp_path / "g", "--tmp-dir g")


def special_files(tmp_path):
    """(name, path, kind) of a FIFO, a socket and, as root, a character device, made here."""
    import socket
    made = []
    os.mkfifo(tmp_path / "fifo")
    made.append(("fifo", tmp_path / "fifo", "a FIFO"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    made.append(("socket", tmp_path / "sock", "a socket"))
    if os.geteuid() == 0:
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made.append(("chardev", tmp_path / "null", "a character device"))
    (tmp_path / "link").symlink_to(made[0][1])  # through a link: what it points to counts
    made.append(("link", tmp_path / "link", "a FIFO"))
    return made


def test_special_files_are_refused_as_outputs_and_never_replaced(tmp_path):
    for _, path, kind in special_files(tmp_path):
        before = os.lstat(path)
        with pytest.raises(UsageError, match=f"-o {path} is {kind}.*, not a regular file"):
            check_output(path, what="-o")
        with pytest.raises(UsageError, match="'-' writes to standard output"):
            check_output(path, what="--stats-json", stdout=True)
        # the writers themselves refuse it too (an API call, or one that appeared since)
        with pytest.raises(UsageError, match="not a regular file"):
            with atomic_file(path) as f:
                f.write(b"data")
        after = os.lstat(path)
        assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert not list(tmp_path.glob("*.tmp-*"))
    assert check_output(tmp_path / "regular.npy", what="-o")


def test_no_replace_takes_a_free_name_and_refuses_a_taken_one(tmp_path):
    target = tmp_path / "n.bin"
    with atomic_file(target, overwrite=False) as f:
        f.write(b"first")
    with pytest.raises(OutputExistsError, match="exists"):
        with atomic_file(target, overwrite=False) as f:
            f.write(b"second")
    assert target.read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.bin"]


@pytest.mark.parametrize("system", ["renameat2", "link", "neither"])
def test_no_replace_is_exclusive_on_every_file_system(tmp_path, monkeypatch, system):
    """The name is taken exclusively whichever primitive the system has: a target created
    while the output was being written is kept, and the complete file is not renamed onto it."""
    if system != "renameat2":
        monkeypatch.setattr(atomic, "_renameat2", lambda: None)
    elif atomic._renameat2() is None:
        pytest.skip("no renameat2 in this C library")
    if system == "neither":
        def no_links(src, dst):
            raise OSError(errno.EPERM, "Operation not permitted", str(src))
        monkeypatch.setattr(os, "link", no_links)
    target = tmp_path / "n.bin"
    with atomic_file(target, overwrite=False) as f:
        f.write(b"mine")
    assert target.read_bytes() == b"mine"
    target.unlink()
    with pytest.raises(OutputExistsError):
        with atomic_file(target, overwrite=False) as f:
            f.write(b"mine")
            target.write_bytes(b"theirs")  # another writer takes the name meanwhile
    assert target.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.bin"]
