"""Per-rank part files: each rank's shards in a file of its own, for disks local to its node.

A part file is a store of the format of docs/FORMAT.md that opens as the whole store: every root
attribute, the intervals and vertex datasets, and every shard group with its attributes, offsets
(``indptr``) and checksums. Only the shards of its own rank's run (ranks.py ``partition`` for
the world size it was written for) hold their edge datasets; the other shards' are declared
(dtype, shape, ``crc32``) without storage, which HDF5 allocates only when written, so they take
no bytes on disk. A part has no shard index (docs/FORMAT.md: its offsets would place the
undeclared data nowhere), so it opens from the shard objects. A part's size is its shards' plus the vertex arrays (degrees, offsets) that
every rank holds anyway. The root attribute ``build`` records ``{"part": {"index", "parts",
"shards", "of"}}``; a rank that opens a part checks that it is its own (ranks.py), and any
store object opened on a part (one process too) refuses to read or map the edges of the shards
it does not hold (``ShardStore.part_shards``).

A path holding ``{rank}`` names one file per rank: ``gr.Session("g.part{rank}.h5", comm=comm)``
and ``mpiexec -n 2 grstream run pagerank /local/g.part{rank}.h5`` open ``g.part0.h5`` on rank 0
and ``g.part1.h5`` on rank 1. ``grstream split`` writes them (docs/DISTRIBUTED.md).
"""
import json
import os

import h5py

from ..errors import UsageError
from ..store import format as fmt
from .ranks import partition

#: the placeholder of a part file's path that each rank replaces by its own rank
RANK = "{rank}"


def part_path(path, rank):
    """``path`` with :data:`RANK` replaced by ``rank``: this rank's part file (a store object or
    a path without the placeholder is returned as it is)."""
    if isinstance(path, (str, os.PathLike)) and RANK in os.fspath(path):
        return os.fspath(path).replace(RANK, str(rank))
    return path


def part_of(store):
    """The ``build`` record of a part file (``{"index", "parts", "shards", "of"}``), or None for
    a whole store."""
    return (store.build or {}).get("part")


def write_part(store, index, parts, path, overwrite=True, tidy=True):
    """Write part ``index`` of ``parts`` of the open ``store`` to ``path`` (atomically: a
    temporary file renamed when complete; ``tidy``: as StoreWriter's). Returns the part's shard
    run ``(first, end)``."""
    from ..partition.writer import StoreWriter
    if not 0 <= index < parts:
        raise UsageError(f"part {index} of {parts}: parts are numbered 0..{parts - 1}")
    if part_of(store) is not None:
        raise UsageError(f"{store.path} is itself a part file: split the whole store")
    cut = partition(store, parts)
    first, end = int(cut[index]), int(cut[index + 1])
    with h5py.File(store.path, "r") as src, StoreWriter(path, overwrite=overwrite, tidy=tidy) as out:
        for name in src:   # the intervals and vertex datasets, as they are
            if name not in ("shards", fmt.SHARD_INDEX):
                src.copy(src[name], out.file, name)
        shards = out.file.create_group("shards")
        for i in range(int(store.num_shards)):
            group = src[fmt.shard_group(i)]
            if first <= i < end:
                src.copy(group, shards, str(i))
                continue
            _declare(group, shards.create_group(str(i)))
        attrs = {k: v for k, v in src.attrs.items()}
        build = json.loads(attrs["build"]) if "build" in attrs else {}
        build["part"] = {"index": int(index), "parts": int(parts), "shards": [first, end],
                         "of": os.path.abspath(str(store.path))}
        attrs["build"] = build
        out.commit(attrs)
    return first, end


def _declare(group, into):
    """Shard ``group`` in ``into`` with its attributes and offsets, its edge datasets declared
    without storage (their dtype, shape and checksum kept)."""
    for k, v in group.attrs.items():
        into.attrs[k] = v
    for direction in fmt.ID_DATASET:
        if direction not in group:
            continue
        sub, dest = group[direction], into.create_group(direction)
        for name, dset in sub.items():
            if name == fmt.INDPTR:
                sub.copy(dset, dest, name)
                continue
            empty = dest.create_dataset(name, shape=dset.shape, dtype=dset.dtype)
            for k, v in dset.attrs.items():
                empty.attrs[k] = v


def check_part(store, rank, size, shards):
    """Refuse a part file that is not this rank's: written for another world size, another rank,
    or (the store re-shaped since) another shard run than ``shards`` (``[first, end]``)."""
    part = part_of(store)
    if part is None:
        return
    want = [int(s) for s in shards]
    if (part["parts"], part["index"], list(part["shards"])) != (size, rank, want):
        raise UsageError(f"{store.path} is part {part['index']} of {part['parts']} (shards "
                         f"{part['shards'][0]}..{part['shards'][1] - 1}) of {part['of']}; rank "
                         f"{rank} of {size} owns shards {want[0]}..{want[1] - 1}: open the part "
                         f"file of each rank (a path with {RANK}), split for {size} ranks")


def held(store):
    """The shards whose edge datasets ``store`` holds: its own run for a part file, every shard
    of a whole store."""
    run = store.part_shards
    return range(int(store.num_shards)) if run is None else range(*run)
