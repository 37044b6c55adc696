"""Graph input: readers for every supported format behind :func:`open_source`, and generators.

Every reader returns an :class:`EdgeSource` whose ``chunks()`` streams ``(src, dst, weight)``
chunks with 0-based int64 ids, so inputs larger than memory never load whole.
"""
from .base import Chunk, EdgeSource
from .dispatch import FORMATS, detect_format, open_source

__all__ = ["Chunk", "EdgeSource", "FORMATS", "detect_format", "open_source"]
