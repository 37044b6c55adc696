"""The CPU executor (numpy), the reference every other executor must agree with."""
from .executor import CpuExecutor

__all__ = ["CpuExecutor"]
