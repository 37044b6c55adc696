"""The compute engine: the backend-neutral GAS iteration loop and its planning."""
from .backend import Backend, IterationStats
from .runner import Result, run

__all__ = ["Backend", "IterationStats", "Result", "run"]
