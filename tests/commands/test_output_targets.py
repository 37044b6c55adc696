"""Where outputs may go: never onto a device, FIFO or socket; never into a folder that does not
exist; --no-overwrite exclusive even against a racing writer; quoted CSV/TSV; a closed pipe ends
a command quietly; a disk full at creation is one line that leaves nothing."""
import csv
import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import grstream as gr
from grstream.cli import main
from grstream.errors import OutputExistsError
from grstream.partition import build as build_module
from grstream.partition import writer as store_writer

from .test_outputs import edges_npy, one_error_line, store  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[2]

#: every output option of every command; {out} is the special file, named with its extension
OUTPUTS = [
    (["generate", "rmat", "--scale", "4", "-o", "{out}"], "g.npy"),
    (["generate", "grid", "--rows", "3", "--cols", "3", "-o", "{out}"], "g.el"),
    (["shard", "{edges}", "-o", "{out}"], "s.h5"),
    (["run", "cc", "{store}", "-o", "{out}"], "cc.npy"),
    (["run", "cc", "{store}", "-o", "{out}"], "cc.csv"),
    (["run", "bfs", "{store}", "--stats-json", "{out}"], "s.json"),
    (["run", "bfs", "{store}", "--plot", "{out}"], "p.png"),
]


def make_special(kind, path):
    """A FIFO, a socket or (root only) a character device like /dev/null at ``path``."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        import socket
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can make a device node")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


@pytest.mark.parametrize("kind, message", [("fifo", "a FIFO"), ("socket", "a socket"),
                                           ("chardev", "a character device")])
@pytest.mark.parametrize("argv, name", OUTPUTS)
def test_an_output_that_is_a_special_file_is_refused_and_kept(tmp_path, edges_npy, store, capsys,
                                                              kind, message, argv, name):
    out = tmp_path / "special" / name
    out.parent.mkdir()
    make_special(kind, out)
    before = os.lstat(out)
    argv = [a.format(out=out, edges=edges_npy, store=store) for a in argv] + ["--quiet"]
    assert main(argv) == 2
    err = one_error_line(capsys)
    assert f"{out} is {message}" in err and "not a regular file" in err
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino, after.st_rdev) == \
        (before.st_mode, before.st_ino, before.st_rdev)
    assert os.listdir(out.parent) == [name]


def test_stats_json_names_the_dash_for_standard_output(tmp_path, store, capsys):
    os.mkfifo(tmp_path / "s.json")
    assert main(["run", "bfs", str(store), "--stats-json", str(tmp_path / "s.json"),
                 "--quiet"]) == 2
    assert "'-' writes to standard output" in one_error_line(capsys)
    assert main(["run", "bfs", str(store), "--stats-json", "-", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the run's CPU seconds beside its wall seconds (on a shared machine the wall follows the load)
    assert doc["algorithm"] == "bfs" and 0 < doc["cpu_seconds"] and 0 < doc["seconds"]


def test_the_api_refuses_a_device_as_a_store(tmp_path, edges_npy):
    os.mkfifo(tmp_path / "g.h5")
    with pytest.raises(gr.errors.UsageError, match="is a FIFO"):
        gr.build_shards(edges_npy, tmp_path / "g.h5", progress=False)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "g.h5").st_mode)


def test_no_overwrite_refuses_an_existing_store_in_the_clis_words(tmp_path, edges_npy, capsys):
    out = tmp_path / "n.h5"
    out.write_bytes(b"theirs")
    assert main(["shard", str(edges_npy), "-o", str(out), "--no-overwrite", "--quiet"]) == 2
    err = one_error_line(capsys)
    assert f"-o {out} exists and --no-overwrite is given" in err and "overwrite=True" not in err
    assert out.read_bytes() == b"theirs"


def store_appears_during_the_build(monkeypatch, target):
    """Another writer creates ``target`` after the up-front check, while this build runs."""
    real = build_module.build_in_memory

    def build(plan, writer):
        target.write_bytes(b"theirs")
        return real(plan, writer)

    monkeypatch.setattr(build_module, "build_in_memory", build)


def test_no_overwrite_is_exclusive_when_the_store_appears_during_the_build(
        tmp_path, edges_npy, capsys, monkeypatch):
    out = tmp_path / "n.h5"
    store_appears_during_the_build(monkeypatch, out)
    assert main(["shard", str(edges_npy), "-o", str(out), "--no-overwrite", "--quiet"]) == 2
    err = one_error_line(capsys)
    assert "--no-overwrite" in err and "nothing was written" in err
    assert out.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "n.h5"]
    # the API says it in its own words
    out.unlink()
    with pytest.raises(OutputExistsError, match=r"exists \(pass overwrite=True"):
        gr.build_shards(edges_npy, out, overwrite=False, progress=False)
    assert out.read_bytes() == b"theirs"


def test_two_no_overwrite_builds_at_once_one_wins(tmp_path, edges_npy):
    """Real processes: exactly one of several racing builds makes the store, the others fail."""
    out = tmp_path / "n.h5"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    children = [subprocess.Popen([sys.executable, "-m", "grstream", "shard", str(edges_npy),
                                  "-o", str(out), "--no-overwrite", "--quiet"],
                                 env=env, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(child.wait(timeout=120), child.stderr.read()) for child in children]
    for child in children:
        child.stderr.close()
    assert sorted(code for code, _ in results) == [0, 2, 2, 2], results
    assert all("exists and --no-overwrite" in err for code, err in results if code)
    assert gr.open(out).num_edges == 3000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "n.h5"]


LABELS = ["a,b", 'say "hi"', "tab\there", "line\nbreak", "plain", "", " spaced "]


@pytest.mark.parametrize("suffix, delimiter", [(".csv", ","), (".tsv", "\t")])
@pytest.mark.parametrize("carriage_return", [False, True])
def test_csv_and_tsv_outputs_read_back_with_the_csv_module(tmp_path, capsys, suffix, delimiter,
                                                           carriage_return):
    labels = LABELS[:-2] + ["cr\rhere"] * carriage_return
    graph = nx.DiGraph()
    nx.add_path(graph, labels)
    graph.add_edge("lonely", "lonely, too")
    store_path = gr.build_shards(graph, tmp_path / "l.h5", progress=False)
    out = tmp_path / f"cc{suffix}"
    assert main(["run", "cc", str(store_path), "-o", str(out), "--quiet"]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter=delimiter))
    assert rows[0] == ["id", "value"]
    components = dict(rows[1:])
    assert sorted(components) == sorted(labels + ["lonely", "lonely, too"])
    assert {components[x] for x in labels} == {labels[0]}
    assert components["lonely, too"] == "lonely"
    out = tmp_path / f"bfs{suffix}"
    assert main(["run", "bfs", str(store_path), "--source", "a,b", "-o", str(out),
                 "--quiet"]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter=delimiter))
    levels = {key: int(value) for key, value in rows[1:]}
    assert [levels[x] for x in labels] == list(range(len(labels)))
    assert levels["lonely"] == -1


def test_plain_ids_are_written_unquoted(tmp_path, store):
    out = tmp_path / "cc.csv"
    assert main(["run", "cc", str(store), "-o", str(out), "--quiet"]) == 0
    assert out.read_text().splitlines()[:2] == ["id,value", "0,0"]


def full_disk_at_creation(monkeypatch):
    """h5py creates the file, then fails to write its first bytes, as on a full disk."""
    def create(name, mode, **kwargs):
        open(name, "wb").close()
        raise OSError(errno.ENOSPC, "Unable to synchronously create file (file write failed: "
                      "time = Thu Nov 26 13:59:26 2026\n, filename = '{name}', file descriptor = "
                      "4, errno = 28, error message = 'No space left on device', buf = 0x5623, "
                      "total write size = 48, bytes this sub-write = 48, offset = 0)")

    monkeypatch.setattr(store_writer.h5py, "File", create)


def test_full_disk_when_the_store_is_created(tmp_path, edges_npy, capsys, monkeypatch):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    full_disk_at_creation(monkeypatch)
    target = out_dir / "s.h5"
    assert main(["shard", str(edges_npy), "-o", str(target), "--quiet"]) == 1
    err = one_error_line(capsys)
    assert err == f"grstream shard: error: cannot write {target}: no space left on device " \
                  "(nothing was written under that name)"
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["shard", "{edges}", "-o", "{dir}/nodir/sub/x.h5"],
    ["shard", "{edges}", "-o", "{dir}/nodir/x.h5", "--memory-limit", "1M"],
    ["generate", "rmat", "--scale", "4", "-o", "{dir}/nodir/g.npy"],
    ["run", "cc", "{store}", "-o", "{dir}/nodir/cc.npy"],
    ["run", "cc", "{store}", "--stats-json", "{dir}/nodir/s.json"],
    ["run", "cc", "{store}", "--plot", "{dir}/nodir/p.png"],
])
def test_every_command_refuses_a_missing_folder(tmp_path, edges_npy, store, capsys, argv):
    argv = [a.format(dir=tmp_path, edges=edges_npy, store=store) for a in argv] + ["--quiet"]
    assert main(argv) == 1
    err = one_error_line(capsys)
    assert "does not exist" in err and "nodir" in err
    assert not (tmp_path / "nodir").exists()


def test_the_api_refuses_a_missing_folder_too(tmp_path, edges_npy):
    with pytest.raises(gr.errors.OutputError, match="does not exist"):
        gr.build_shards(edges_npy, tmp_path / "nodir" / "x.h5", progress=False)
    assert not (tmp_path / "nodir").exists()


def test_tmp_dir_naming_a_file_says_it_is_not_a_folder(tmp_path, edges_npy, capsys):
    (tmp_path / "f").write_bytes(b"")
    assert main(["shard", str(edges_npy), "-o", str(tmp_path / "s.h5"), "--memory-limit", "1M",
                 "--tmp-dir", str(tmp_path / "f"), "--quiet"]) == 2
    err = one_error_line(capsys)
    assert "is not a folder" in err and "does not exist" not in err
    assert not (tmp_path / "s.h5").exists()


@pytest.mark.parametrize("argv", [
    ["info", "{store}"],
    ["info", "{store}", "--json"],
    ["verify", "{store}", "--json"],
    ["run", "bfs", "{store}", "--stats-json", "-", "--quiet"],
])
def test_a_closed_pipe_ends_the_command_quietly(store, argv):
    """As ``grstream ... | head -1`` when head has already exited: status 141, no message."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        child = subprocess.run([sys.executable, "-m", "grstream"]
                               + [a.format(store=store) for a in argv],
                               stdout=write_end, stderr=subprocess.PIPE, text=True, env=env,
                               timeout=120)
    finally:
        os.close(write_end)
    assert child.returncode == 141, child.stderr
    assert "Broken pipe" not in child.stderr and "Errno" not in child.stderr
    assert "Traceback" not in child.stderr and "Exception ignored" not in child.stderr


def test_head_reads_the_first_line(store):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.run(f"{sys.executable} -m grstream info {store} | head -1", shell=True,
                           capture_output=True, text=True, env=env, timeout=120)
    assert child.stdout.startswith("store:") and len(child.stdout.splitlines()) == 1
    assert child.stderr == ""


@pytest.mark.parametrize("threads", ["0", "-3"])
def test_generate_refuses_fewer_than_one_thread(tmp_path, capsys, threads):
    out = tmp_path / "g.npy"
    assert main(["generate", "rmat", "--scale", "4", "--threads", threads, "-o", str(out)]) == 2
    assert f"--threads must be at least 1, got {threads}" in one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("argv", [
    ["run", "bfs", "{store}", "--memory-budget", "99999P"],
    ["shard", "{edges}", "-o", "{dir}/s.h5", "--memory-limit", "8192P"],
    ["shard", "{edges}", "-o", "{dir}/s.h5", "--shard-size", "9223372036854775808"],
])
def test_sizes_beyond_int64_are_refused(tmp_path, edges_npy, store, capsys, argv):
    argv = [a.format(dir=tmp_path, edges=edges_npy, store=store) for a in argv] + ["--quiet"]
    assert main(argv) == 2
    assert "beyond the largest, 2^63 - 1 bytes" in one_error_line(capsys)
    assert not (tmp_path / "s.h5").exists()
