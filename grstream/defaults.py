"""The embedded default graph: what ``grstream run ALGO`` uses when no store is named.

An R-MAT graph (scale 16, edge factor 16, seed 1, integer weights 1..255), generated and sharded
on first use under ``$GRSTREAM_SHARDS`` (default ``./shards``), so a fresh checkout runs every
algorithm, SSSP included, with no download.
"""
import os
from pathlib import Path

DEFAULT_NAME = "default.h5"
SCALE, EDGE_FACTOR, SEED, SHARDS = 16, 16, 1, 8


def shards_dir():
    return Path(os.environ.get("GRSTREAM_SHARDS", "shards"))


def default_store(progress=True):
    """Path of the default store, building it first when absent (atomically)."""
    path = shards_dir() / DEFAULT_NAME
    if path.exists():
        return path
    from .io.generate import rmat
    from .partition import build_shards
    path.parent.mkdir(parents=True, exist_ok=True)
    src, dst, weight = rmat(SCALE, edge_factor=EDGE_FACTOR, seed=SEED, weights=True)
    build_shards((src, dst, weight), path, num_shards=SHARDS, weighted=True, progress=progress)
    return path
