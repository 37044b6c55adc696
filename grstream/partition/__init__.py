"""Partition engine: an edge source in, a load-balanced HDF5 shard store out."""
from .build import build_shards
from .intervals import choose_intervals
from .layout import compress

__all__ = ["build_shards", "choose_intervals", "compress"]
