"""Constants and small helpers of the shard store format (docs/FORMAT.md is the contract)."""
try:
    # ISA-L's CRC32 (the optional dependency ``grstream[fast]``): the same values as zlib's,
    # several times faster (folding with carry-less multiplies)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - exercised by the fallback test
    from zlib import crc32 as _crc32

import numpy as np

FORMAT_NAME = "grstream-shards"
#: the version a store gets when it uses no feature of a later one
FORMAT_VERSION = 1
#: a store whose vertices were reordered at build time: its label table is a permutation of
#: the input's ids (not increasing), which readers of version 1 may assume
REORDERED_VERSION = 2
#: a store whose id datasets are compressed (``codec``), reordered or not
COMPRESSED_VERSION = 3
#: versions this reader reads
READABLE_VERSIONS = (1, 2, 3)
#: root attribute of a reordered store: the order's name (``degree``, ``bfs``, ``rcm``)
VERTEX_ORDER = "vertex_order"
#: h5py ``libver`` pinned so files written today stay readable by the HDF5 versions we test with.
LIBVER = ("v110", "latest")
#: the writer places every file object of at least this many bytes (the datasets' data among
#: them) at a multiple of it in the file: a cache line, and a multiple of every item size
ALIGNMENT = 64

#: root attribute of a compressed store: the codec of its id datasets (grstream.store.codec)
CODEC_ATTR = "codec"
CODEC_NAME = "delta-blocks-32"
#: the parts (suffixes) a compressed id dataset ``<d>/<ids>`` is stored as, in order
CODEC_PARTS = ("offsets", "masks", "widths", "words")
#: store-wide dataset of a compressed store: each shard's in- and out-edge counts
SHARD_EDGES = "shard_edges"

INTERVALS = "intervals"
IN_DEGREE = "vertex/in_degree"
OUT_DEGREE = "vertex/out_degree"
ORIGINAL_ID = "vertex/original_id"

#: per-shard id datasets: direction -> name of the neighbour-id dataset
ID_DATASET = {"in": "src", "out": "dst"}
INDPTR = "indptr"
#: optional per-shard in-edge dataset: each in-edge's global CSR position (root attr edge_ids)
EDGE_ID = "eid"
EDGE_ID_ATTR = "edge_ids"

ROOT_ATTRS = ("format", "format_version", "num_vertices", "num_edges", "num_shards", "id_dtype",
              "edge_props", "directed", "renumbered", "build")
SHARD_ATTRS = ("lo", "hi", "num_in_edges", "num_out_edges", "nbytes")
#: optional store-wide dataset (added within version 1): every shard dataset's file offset,
#: length and CRC32, read once on open in place of the shard groups' objects and attributes
SHARD_INDEX = "shard_index"
#: attribute of SHARD_INDEX: JSON list of the per-shard dataset names, in column order
INDEX_NAMES_ATTR = "datasets"
#: the fields of one index entry, in order (an empty dataset, which has no storage, has offset -1)
INDEX_FIELDS = ("offset", "length", "crc32")


def id_dtype_for(num_vertices):
    """Vertex-id dtype of a store with ``num_vertices`` vertices: int32 below 2**31, else int64."""
    return np.dtype(np.int32) if num_vertices < 2 ** 31 else np.dtype(np.int64)


def shard_group(i):
    return f"shards/{i}"


def codec_parts(name):
    """The stored parts of compressed id dataset ``name`` (``"in/src"`` -> ``"in/src.offsets"``...)."""
    return [f"{name}.{part}" for part in CODEC_PARTS]


def shard_dataset_names(edge_props, edge_ids=False, compressed=False):
    """Dataset names of one shard as stored, relative to its group."""
    names = []
    for direction, ids in ID_DATASET.items():
        names.append(f"{direction}/{INDPTR}")
        ids = f"{direction}/{ids}"
        names += codec_parts(ids) if compressed else [ids]
        names += [f"{direction}/{prop}" for prop in edge_props]
        if edge_ids and direction == "in":
            names.append(f"in/{EDGE_ID}")
    return names


#: elements a block of :func:`extremes` takes at once (its min and max read it from cache)
EXTREMES_BLOCK = 1 << 17


def extremes(array):
    """``(min, max)`` of a non-empty array as ints, in one pass over its memory: each block's
    min and max are taken while the block is in cache (two whole-array reductions would read a
    large array from memory twice)."""
    flat = array.reshape(-1)
    lows, highs = [], []
    for lo in range(0, flat.size, EXTREMES_BLOCK):
        block = flat[lo:lo + EXTREMES_BLOCK]
        lows.append(block.min())
        highs.append(block.max())
    return int(min(lows)), int(max(highs))


def crc32_update(data, value):
    """The CRC32 of the bytes before ``data`` (``value``) carried on over ``data`` (a buffer)."""
    return _crc32(data, value) & 0xFFFFFFFF


def crc32(array):
    """``zlib.crc32`` of an array's raw bytes, without copying it when it is contiguous
    (computed by ISA-L when installed: the same value)."""
    arr = np.ascontiguousarray(array)
    if arr.size == 0:
        return 0
    return _crc32(memoryview(arr).cast("B")) & 0xFFFFFFFF
