"""The memory a build's vertex arrays need, checked before they are allocated.

A build holds arrays of one entry per vertex (degrees, offsets, counts), and without
renumbering the vertex count is the largest id + 1: one id of 2**31 in a three-edge file asks
for gigabytes. The largest id is known chunk by chunk while the input is read, before any of
those arrays exist, so a build that cannot fit stops there with the estimate.
"""
import os

from ..errors import MemoryBudgetError
from ..units import format_bytes

#: peak bytes per vertex of an in-memory build (both layouts' counts and offsets, degree
#: arrays, the intervals' cumulative counts): 56 B measured with 2**25 vertices and 3 edges
IN_MEMORY_VERTEX_BYTES = 64


def available_memory():
    """Bytes a build may use when no memory limit is given: MemAvailable, else physical
    memory, else None (unknown: nothing is checked)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


class VertexBudget:
    """Refuses a vertex count whose arrays would not fit ``memory_limit`` (or the memory
    available when it is None), at ``per_vertex`` bytes a vertex."""

    def __init__(self, name, per_vertex, memory_limit=None, renumbered=False):
        self.name = name
        self.per_vertex = per_vertex
        self.limited = memory_limit is not None
        self.budget = memory_limit if self.limited else available_memory()
        self.renumbered = renumbered
        self.largest = 0

    def check(self, num_vertices):
        """Raise :class:`MemoryBudgetError` when ``num_vertices`` vertices do not fit."""
        if num_vertices <= self.largest:
            return
        self.largest = num_vertices
        need = num_vertices * self.per_vertex
        if self.budget is None or need <= self.budget:
            return
        where = "the memory limit" if self.limited else "the memory available"
        hint = "" if self.renumbered else (
            "; if the ids are sparse, --renumber (renumber=True) maps the ids that occur to "
            "0..k-1")
        raise MemoryBudgetError(
            f"{self.name}: {num_vertices} vertices (largest id {num_vertices - 1}) need about "
            f"{format_bytes(need)} for the build's vertex arrays ({self.per_vertex} B per vertex), "
            f"more than {where} ({format_bytes(self.budget)}){hint}", minimum=need)
