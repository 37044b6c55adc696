"""The shard store: open, validate and read the HDF5 file the partition engine writes."""
from .shard_store import ShardInfo, ShardStore, open  # noqa: A004

__all__ = ["ShardInfo", "ShardStore", "open"]
