"""Standard input (``-``), ``/dev/stdin`` and FIFOs are read as streams: text formats in one
pass, anything needing a second pass or offsets refused with the input's name (exit 2)."""
import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream.cli import main
from grstream.errors import InputFormatError
from grstream.io import open_source, pipes

ROOT = Path(__file__).resolve().parents[2]
BOM = b"\xef\xbb\xbf"


def edges_text(m=200000, seed=0):
    """An edge list larger than what the header readers keep (so it really streams)."""
    table = np.random.default_rng(seed).integers(0, 5000, (m, 2))
    return "".join(f"{a} {b}\n" for a, b in table.tolist()).encode()


def same_graph(a, b):
    with gr.open(a) as x, gr.open(b) as y:
        assert (x.num_vertices, x.num_edges, x.directed) == (y.num_vertices, y.num_edges,
                                                             y.directed)
        assert (x.to_scipy() != y.to_scipy()).nnz == 0


def cli(args, data):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "grstream", *args], input=data,
                          capture_output=True, env=env, timeout=120)


@pytest.fixture(autouse=True)
def close_pipes():
    """Each test's FIFOs are closed after it (the process keeps a pipe open once read)."""
    yield
    for name in list(pipes._streams):
        pipes.reopen(name)


def fifo(tmp_path, data, name="p.txt"):
    """A FIFO a thread fills with ``data`` once a reader opens it."""
    path = tmp_path / name
    os.mkfifo(path)

    def write():
        with open(path, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass

    threading.Thread(target=write, daemon=True).start()
    return path


@pytest.mark.parametrize("name, wrap", [("-", lambda d: d), ("-", gzip.compress),
                                        ("/dev/stdin", lambda d: BOM + d)])
def test_standard_input_streams_into_a_store(tmp_path, name, wrap):
    data = edges_text()
    (tmp_path / "g.txt").write_bytes(data)
    assert main(["shard", str(tmp_path / "g.txt"), "-o", str(tmp_path / "file.h5"),
                 "--quiet"]) == 0
    done = cli(["shard", name, "-o", str(tmp_path / "pipe.h5"), "--quiet"], wrap(data))
    assert done.returncode == 0, done.stderr
    same_graph(tmp_path / "pipe.h5", tmp_path / "file.h5")


def test_a_fifo_streams_into_a_store(tmp_path):
    data = edges_text()
    (tmp_path / "g.txt").write_bytes(data)
    gr.build_shards(tmp_path / "g.txt", tmp_path / "file.h5", progress=False)
    assert main(["shard", str(fifo(tmp_path, data)), "-o", str(tmp_path / "pipe.h5"),
                 "--quiet"]) == 0
    same_graph(tmp_path / "pipe.h5", tmp_path / "file.h5")


@pytest.mark.parametrize("text, directed", [
    (b"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n", False),
    (b"Napoleon Myriel\nMyriel Valjean\n", True),
    (b"c x\np sp 3 2\na 1 2 5\na 2 3 6\n", True),
])
def test_every_text_format_reads_from_a_pipe(tmp_path, text, directed):
    done = cli(["shard", "-", "-o", str(tmp_path / "s.h5"), "--quiet"], text)
    assert done.returncode == 0, done.stderr
    with gr.open(tmp_path / "s.h5") as store:
        assert store.directed == directed and store.build["input"] == "<stdin>"


def test_a_small_stream_can_be_read_again(tmp_path):
    source = open_source(str(fifo(tmp_path, b"0 1\n1 2\n")))
    first = [c[0].tolist() for c in source.chunks()]
    assert first == [[0, 1]] and [c[0].tolist() for c in source.chunks()] == first


def test_a_second_pass_over_a_large_stream_is_refused(tmp_path):
    source = open_source(str(fifo(tmp_path, edges_text())))
    assert sum(len(c[0]) for c in source.chunks()) == 200000
    with pytest.raises(InputFormatError, match="p.txt: a pipe \\(FIFO\\) can be read only once"):
        list(source.chunks())


@pytest.mark.parametrize("args, data, message", [
    (["--memory-limit", "64M"], b"0 1\n",
     "grstream shard: error: <stdin> is a pipe, which can be read only once, and "
     "--memory-limit (memory_limit) reads the input more than once"),
    (["--renumber"], b"0 1\n", "and --renumber reads the input more than once"),
    ([], b"\x93NUMPY\x01\x00", "grstream shard: error: <stdin>: a .npy input is read at "
                               "offsets, which a pipe cannot give: save it to a file first"),
    ([], b"0 1\n1 x\n", "grstream shard: error: <stdin>:2: vertex id 'x' is not an integer"),
])
def test_what_a_pipe_cannot_do_is_refused_by_name(tmp_path, args, data, message):
    done = cli(["shard", "-", "-o", str(tmp_path / "s.h5"), "--quiet", *args], data)
    err = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_refused_in_process_names_the_fifo(tmp_path, capsys):
    path = fifo(tmp_path, b"0 1\n")
    assert main(["shard", str(path), "-o", str(tmp_path / "s.h5"), "--memory-limit", "64M"]) == 2
    assert f"{path} is a pipe" in capsys.readouterr().err
