"""Compressed stores (format version 3, docs/FORMAT.md "Compressed ids"): built the same in
every build mode, read back as the plain store's ids, refused cleanly by older readers, their
damage a typed error, verified, described and split."""
import json
from unittest import mock

import h5py
import numpy as np
import pytest

import grstream as gr
from grstream.cli import main
from grstream.distributed.part_files import held, write_part
from grstream.errors import ChecksumError, CodecError, EXIT_CORRUPT, FormatVersionError
from grstream.io.generate import rmat
from grstream.store import encode, format as fmt
from grstream.store.decode import numba_available

from ..partition.graphs import store_contents
from .tamper import drop_index, rewrite

ID_NAMES = ("in/src", "out/dst")


@pytest.fixture(scope="module")
def graph():
    src, dst, w = rmat(10, 8, seed=5, weights=True)
    src[:50] = 1000   # a hub row beyond the others' ids
    return src, dst, w


def build(graph, path, **options):
    src, dst, w = graph
    edges = np.column_stack([src, dst, w]).astype(np.float64)
    return gr.build_shards(edges, path, progress=False, weighted=True, **options)


def same_graph(plain, packed):
    assert (plain.num_shards, plain.num_edges) == (packed.num_shards, packed.num_edges)
    for i in range(plain.num_shards):
        assert plain.shard_info(i).num_in_edges == packed.shard_info(i).num_in_edges
        for name in plain.dataset_names(i):
            np.testing.assert_array_equal(plain.read(i, name), packed.read(i, name))


@pytest.mark.parametrize("options", [{}, {"edge_ids": True}, {"undirected": True}])
def test_every_build_mode_and_thread_count_writes_one_store(graph, tmp_path, options):
    with gr.open(build(graph, tmp_path / "plain.h5", num_shards=5, **options)) as plain:
        plain_degrees = plain.in_degree().copy()
    for limit in (None, 1 << 20):   # each limit is compared with its own serial build
        stores = [build(graph, tmp_path / f"c{threads}-{limit}.h5", num_shards=5, compress=True,
                        threads=threads, memory_limit=limit, **options) for threads in (1, 3)]
        assert store_contents(stores[0]) == store_contents(stores[1]), limit
        with gr.open(stores[0]) as packed, gr.open(tmp_path / "plain.h5") as plain:
            assert packed.compressed and packed.format_version == fmt.COMPRESSED_VERSION
            np.testing.assert_array_equal(packed.in_degree(), plain_degrees)
            if packed.num_shards == plain.num_shards:
                same_graph(plain, packed)


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
@pytest.mark.parametrize("options", [{"weighted": False}, {}, {"edge_ids": True}])
def test_the_compiled_encoder_writes_the_reference_store(graph, tmp_path, monkeypatch, options):
    """Every build mode, on three threads with the compiled encoder (each side of every size,
    its blocks spread over the threads), writes the store the numpy reference encoder writes
    on one thread."""
    def make(name, threads, limit):
        src, dst, w = graph
        weighted = options.get("weighted", True)
        edges = np.column_stack([src, dst, w] if weighted else [src, dst])
        return gr.build_shards(edges.astype(np.float64 if weighted else np.int64),
                               tmp_path / name, progress=False, num_shards=5, compress=True,
                               threads=threads, memory_limit=limit,
                               **dict(options, weighted=weighted))

    for limit in (None, 1 << 20):
        monkeypatch.setattr(encode, "numba_available", lambda: False)
        reference = make(f"numpy-{limit}.h5", 1, limit)
        monkeypatch.setattr(encode, "numba_available", lambda: True)
        monkeypatch.setattr(encode, "COMPILED_IDS", 1)
        monkeypatch.setattr(encode, "BLOCKS_PER_TASK", 4)      # a side's blocks over threads
        compiled = make(f"numba-{limit}.h5", 3, limit)
        monkeypatch.undo()
        assert store_contents(compiled) == store_contents(reference), limit


def test_reads_without_the_index_and_into_buffers(graph, tmp_path):
    plain = gr.open(build(graph, tmp_path / "plain.h5", num_shards=3))
    path = build(graph, tmp_path / "packed.h5", num_shards=3, compress=True)
    drop_index(path)
    with gr.open(path, verify="always") as packed:
        assert not packed.indexed
        same_graph(plain, packed)
        info = packed.shard_info(1)
        out = np.full(info.num_in_edges, -1, dtype=packed.id_dtype)
        assert packed.read(1, "in/src", out=out) is out
        np.testing.assert_array_equal(out, plain.read(1, "in/src"))
        # the parts read by name (what a GPU decodes itself), and sizes for both
        words = packed.read(1, "in/src.words")
        assert words.dtype == np.uint32 and info.dataset_nbytes["in/src.words"] == words.nbytes
        assert info.dataset_nbytes["in/src"] == plain.shard_info(1).dataset_nbytes["in/src"]
    plain.close()


def test_older_readers_refuse_it_cleanly(graph, tmp_path):
    path = build(graph, tmp_path / "g.h5", num_shards=2, compress=True)
    with mock.patch.object(fmt, "READABLE_VERSIONS", (1, 2)):
        with pytest.raises(FormatVersionError, match="format version 3"):
            gr.open(path)
    with h5py.File(path, "r+") as f:
        f.attrs[fmt.CODEC_ATTR] = "zstd"
    with pytest.raises(FormatVersionError, match="codec 'zstd'"):
        gr.open(path)


def test_damage_is_a_typed_error(graph, tmp_path):
    path = build(graph, tmp_path / "g.h5", num_shards=2, compress=True)
    with h5py.File(path, "r") as f:
        masks = f["shards/0/in/src.masks"][()]
        words = f["shards/1/out/dst.words"][()]
    rewrite(path, "shards/0/in/src.masks", masks & ~np.uint32(1))     # lane 0 not a reset
    with gr.open(path) as store:
        with pytest.raises(CodecError, match="shard 0, dataset shards/0/in/src: block 0"):
            store.read(0, "in/src")
    words[:] = 0xFFFFFFFF                                             # ids beyond the range
    rewrite(path, "shards/1/out/dst.words", words)
    with gr.open(path) as store:
        with pytest.raises(CodecError, match="out of range"):
            store.read(1, "out/dst")
    with h5py.File(path, "r+") as f:                                  # a flipped bit
        f["shards/1/in/src.words"][0] ^= 1
    with gr.open(path) as store:
        with pytest.raises(ChecksumError):
            store.read(1, "in/src")
    code = main(["verify", str(path), "--quiet", "--json"])
    assert code == EXIT_CORRUPT


def test_verify_and_info(graph, tmp_path, capsys):
    path = build(graph, tmp_path / "g.h5", num_shards=3, compress=True)
    assert main(["verify", str(path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format_version"] == 3 and info["codec"] == fmt.CODEC_NAME
    with gr.open(path) as store:
        stored = sum(store.shard_info(i).dataset_nbytes[n] for i in range(3)
                     for n in fmt.codec_parts("in/src"))
        assert info["id_bytes_per_edge"]["in"] == pytest.approx(stored / store.num_edges)
    assert 0 < info["id_bytes_per_edge"]["out"] < 4
    assert main(["info", str(path)]) == 0
    assert "compressed (delta-blocks-32): in " in capsys.readouterr().out


def test_shard_command_compresses(graph, tmp_path):
    src, dst, _ = graph
    text = tmp_path / "g.txt"
    np.savetxt(text, np.column_stack([src, dst]), fmt="%d")
    assert main(["shard", str(text), "-o", str(tmp_path / "g.h5"), "--compress", "--quiet"]) == 0
    with gr.open(tmp_path / "g.h5") as store:
        assert store.compressed and store.build["options"]["compress"] is True


def test_split_parts_of_a_compressed_store(graph, tmp_path):
    path = build(graph, tmp_path / "g.h5", num_shards=4, compress=True)
    with gr.open(path) as whole:
        write_part(whole, 1, 2, tmp_path / "p1.h5")
        with gr.open(tmp_path / "p1.h5") as part:
            assert part.compressed and list(held(part)) == [2, 3]
            for i in held(part):
                for name in ID_NAMES:
                    np.testing.assert_array_equal(part.read(i, name), whole.read(i, name))
    assert main(["verify", str(tmp_path / "p1.h5"), "--quiet"]) == 0
