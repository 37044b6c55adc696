"""The reader contract shared by every input format.

A reader turns an input into an :class:`EdgeSource`: a *re-iterable* stream of edge chunks, so the
partition engine can make several passes over an input larger than memory (degrees first, then
bucketing) without ever holding the whole edge list.
"""
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence, Tuple

import numpy as np

#: one chunk: (src int64[k], dst int64[k], weight float64[k] or None); ids already 0-based.
Chunk = Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]


@dataclass
class EdgeSource:
    """A re-iterable edge stream.

    ``chunks()`` may be called any number of times and yields the same edges in the same order.
    ``num_vertices`` is the count declared by the input (Matrix Market / DIMACS header, an in-memory
    matrix's shape, a networkx graph's node count) or None when only the ids tell.
    ``weighted`` says whether chunks carry weights. ``size_bytes`` (if known) drives progress bars.
    ``symmetric``: the input is undirected and the chunks already hold both directions of each
    of its edges (Matrix Market ``symmetric``, KONECT ``sym``, an undirected networkx graph), so
    an undirected build stores them as they are instead of adding reverses again.
    ``id_base`` is 1 when the input numbers its vertices from 1 (``.mtx``, KONECT, DIMACS): chunks
    are still 0-based and the store keeps the base, so users see the file's ids.
    ``labels``, when set, returns the label of every source id (names of a text edge list, nodes
    of a networkx graph); it is complete once ``chunks()`` has been iterated through once.
    ``rows``, when set (readers with random access: ``.npy``), returns the input's edges
    ``start..stop-1`` (``meta["edges"]`` of them in all) as one chunk, the same edges and checks
    as ``chunks()`` gives them: ranks building a store read only their own share
    (grstream/distributed/rank_build.py).
    ``make_pieces``, when set (the text readers), yields the edges of ``chunks()`` in the same
    order, cut where the reader finds them (a block of text each) rather than regrouped into
    chunks of ``chunk_edges``: a consumer that does not need even chunks (the in-memory build's
    keys) skips the copies of regrouping them.
    """

    name: str
    make_chunks: Callable[[], Iterator[Chunk]]
    weighted: bool
    num_vertices: Optional[int] = None
    size_bytes: Optional[int] = None
    format: str = "memory"
    meta: dict = field(default_factory=dict)
    symmetric: bool = False
    id_base: int = 0
    labels: Optional[Callable[[], Sequence]] = None
    rows: Optional[Callable[[int, int], Chunk]] = None
    make_pieces: Optional[Callable[[], Iterator[Chunk]]] = None

    def chunks(self) -> Iterator[Chunk]:
        return self.make_chunks()

    def pieces(self) -> Iterator[Chunk]:
        """The edges of :meth:`chunks`, in its order, in the reader's own pieces (any size)."""
        return self.make_chunks() if self.make_pieces is None else self.make_pieces()
