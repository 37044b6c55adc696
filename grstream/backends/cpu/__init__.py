"""The CPU backend (numpy), the reference every other backend must agree with."""
from .backend import CpuBackend

__all__ = ["CpuBackend"]
