"""Several processes (MPI ranks) running one program over one store: ranks.py partitions the
shards, exchange.py moves vertex state between ranks, rank_executor.py runs a rank's plans over
its own shards. docs/DISTRIBUTED.md describes the whole."""
from .ranks import Ranks, world_from_environment

__all__ = ["Ranks", "world_from_environment"]
