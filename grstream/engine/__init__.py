"""The compute engine: sessions, per-iteration plans, the memory model and the executor contract."""
from .backend import IterationStats
from .result import Result
from .runner import run
from .session import Session

__all__ = ["IterationStats", "Result", "Session", "run"]
