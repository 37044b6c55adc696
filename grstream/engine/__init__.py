"""The compute engine: sessions, per-iteration plans, the memory model and the executor contract."""
from .backend import Backend, IterationStats
from .result import Result
from .runner import run
from .session import Session

__all__ = ["Backend", "IterationStats", "Result", "Session", "run"]
