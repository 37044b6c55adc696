"""Host MPI messages of any size, on every MPI implementation.

An MPI call's counts and displacements are C ints where the implementation has no MPI-4
large-count routines (Open MPI 4.1, for one): a message of 2 GiB or more, or a buffer whose
parts start 2 GiB or more in, overflows them. The collectives here take byte counts of any
size (int64) and move them in rounds where the whole would not fit: each round moves every
peer's next piece of at most ``limit() // size`` bytes (so a round's counts and displacements
stay below :func:`limit`) through staging buffers; where every count and displacement fits,
one call moves the buffers as they are. Objects holding large arrays (a shard's sides) go
point-to-point as a pickle (protocol 5) whose arrays travel out of band, as raw bytes in
pieces of at most :func:`limit` (pickling them in band is slow and one message).

:func:`limit` is ``GRSTREAM_MPI_LIMIT`` (bytes; the tests set it tiny so that small graphs
take the rounds), else :data:`DEFAULT_LIMIT` (2^30).
"""
import os
import pickle

import numpy as np

from ..errors import UsageError

_VARIABLE = "GRSTREAM_MPI_LIMIT"


#: the most bytes one MPI call moves or addresses in one buffer, unless ``GRSTREAM_MPI_LIMIT``
#: says otherwise
DEFAULT_LIMIT = 1 << 30


def limit():
    """The most bytes one MPI call moves or addresses in one buffer (read at each call)."""
    raw = os.environ.get(_VARIABLE, str(DEFAULT_LIMIT))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value < 1 << 31:
        raise UsageError(f"{_VARIABLE}={raw!r}: a number of bytes from 1 to 2^31-1 is needed")
    return value


def starts(counts):
    """Where each of ``counts`` begins when laid one after another (int64)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def _fits(counts):
    return int(np.sum(counts)) <= limit()


def _rounds(counts, size):
    """Rounds of pieces of ``limit() // size`` bytes that move the largest of ``counts``."""
    piece = max(1, limit() // size)
    return max(1, -(-int(np.max(counts, initial=0)) // piece)), piece


def _alltoall_rounds(parts, size):
    """1 where each of ``parts`` (a rank's byte counts to or from each peer) fits one call,
    else the rounds of pieces that move the largest count (2 at least)."""
    if all(_fits(p) for p in parts):
        return 1
    return max(2, max(_rounds(p, size)[0] for p in parts))


def _pieces(counts, at, piece):
    """Each count's piece of round starting at byte ``at`` (``piece`` bytes at most)."""
    return np.clip(np.asarray(counts, dtype=np.int64) - at, 0, piece)


def _pack(buf, begins, counts, at):
    """The pieces ``buf[begin + at : begin + at + count]``, one after another."""
    return np.concatenate([buf[b + at:b + at + c] for b, c in zip(begins.tolist(), counts.tolist())]
                          or [buf[:0]])


def _unpack(out, begins, staged, counts, at):
    for b, s, c in zip(begins.tolist(), starts(counts).tolist(), counts.tolist()):
        out[b + at:b + at + c] = staged[s:s + c]


def alltoallv(comm, mine, send, out, recv, every=None):
    """Bytes ``mine`` (uint8, ``send[r]`` bytes to rank r, one part after another) to every
    rank, into ``out`` (uint8, ``recv[r]`` bytes from rank r, in rank order). Collective; where
    ``every`` (every rank's ``send``, [from, to]) is not given, one small all-reduce agrees on
    the rounds."""
    from mpi4py import MPI
    send, recv = np.asarray(send, dtype=np.int64), np.asarray(recv, dtype=np.int64)
    size = comm.Get_size()
    if every is None:
        rounds = comm.allreduce(_alltoall_rounds([send, recv], size), op=MPI.MAX)
    else:
        every = np.asarray(every, dtype=np.int64)
        rounds = _alltoall_rounds(list(every) + list(every.T), size)
    if rounds == 1:
        comm.Alltoallv([mine, (send, starts(send)), MPI.BYTE], [out, (recv, starts(recv)), MPI.BYTE])
        return out
    piece = max(1, limit() // size)
    sbegin, rbegin = starts(send), starts(recv)
    for r in range(rounds):
        sc, rc = _pieces(send, r * piece, piece), _pieces(recv, r * piece, piece)
        staged = np.empty(int(rc.sum()), np.uint8)
        comm.Alltoallv([_pack(mine, sbegin, sc, r * piece), (sc, starts(sc)), MPI.BYTE],
                       [staged, (rc, starts(rc)), MPI.BYTE])
        _unpack(out, rbegin, staged, rc, r * piece)
    return out


def allgatherv(comm, mine, out, counts, begins=None):
    """Every rank's bytes into ``out`` (uint8): rank r's ``counts[r]`` bytes at ``begins[r]``
    (default one after another). ``mine``: this rank's bytes, or None where they already lie
    in ``out`` (in place). Collective; every rank holds the same ``counts`` and ``begins``, so
    each finds the same rounds."""
    from mpi4py import MPI
    counts = np.asarray(counts, dtype=np.int64)
    begins = starts(counts) if begins is None else np.asarray(begins, dtype=np.int64)
    rank, size = comm.Get_rank(), comm.Get_size()
    if _fits(counts) and int(np.max(begins + counts, initial=0)) <= limit():
        comm.Allgatherv(MPI.IN_PLACE if mine is None else [mine, MPI.BYTE],
                        [out, (counts, begins), MPI.BYTE])
        return out
    if mine is None:
        mine = out[int(begins[rank]):int(begins[rank] + counts[rank])]
    rounds, piece = _rounds(counts, size)
    for r in range(rounds):
        rc = _pieces(counts, r * piece, piece)
        staged = np.empty(int(rc.sum()), np.uint8)
        at = r * piece
        comm.Allgatherv([mine[at:at + int(rc[rank])], MPI.BYTE], [staged, (rc, starts(rc)), MPI.BYTE])
        _unpack(out, begins, staged, rc, at)
    return out


def scatterv(comm, mine, counts, out, root):
    """``root``'s bytes ``mine`` (uint8, ``counts[r]`` bytes for rank r, one part after
    another; None elsewhere) to every rank, into ``out`` (uint8, ``counts[rank]`` bytes).
    Collective; every rank holds the same ``counts``."""
    from mpi4py import MPI
    counts = np.asarray(counts, dtype=np.int64)
    rank, size = comm.Get_rank(), comm.Get_size()
    if _fits(counts):
        comm.Scatterv([mine, (counts, starts(counts)), MPI.BYTE] if rank == root else None,
                      [out, MPI.BYTE], root=root)
        return out
    rounds, piece = _rounds(counts, size)
    begins = starts(counts)
    for r in range(rounds):
        rc, at = _pieces(counts, r * piece, piece), r * piece
        send = [_pack(mine, begins, rc, at), (rc, starts(rc)), MPI.BYTE] if rank == root else None
        comm.Scatterv(send, [out[at:at + int(rc[rank])], MPI.BYTE], root=root)
    return out


def allreduce(comm, array, op, datatype=None):
    """``array`` (contiguous) combined with ``op`` over every rank's, in place, in rounds of at
    most :func:`limit` bytes (``datatype``: the MPI type of its items, where not numpy's own).
    Collective; every rank's ``array`` has the same size."""
    from mpi4py import MPI
    flat = array.reshape(-1)
    step = max(1, limit() // flat.itemsize)
    for at in range(0, len(flat), step):
        piece = flat[at:at + step]
        comm.Allreduce(MPI.IN_PLACE, piece if datatype is None else [piece, datatype], op=op)
    return array


def bcast(comm, array, root):
    """``root``'s ``array`` (contiguous) into every rank's, in rounds of at most :func:`limit`
    bytes. Collective; every rank's ``array`` has the same size."""
    flat = array.reshape(-1)
    step = max(1, limit() // flat.itemsize)
    for at in range(0, len(flat), step):
        comm.Bcast(flat[at:at + step], root=root)
    return array


def reduce_scatter(comm, mine, counts, out, op):
    """Every rank's ``mine`` (flat) combined with ``op``; rank r keeps ``counts[r]`` items of
    it (one part after another) in ``out``. Collective; every rank holds the same ``counts``."""
    counts = np.asarray(counts, dtype=np.int64)
    rank, size = comm.Get_rank(), comm.Get_size()
    if int(counts.sum()) * mine.itemsize <= limit():
        comm.Reduce_scatter(mine, out, counts, op=op)
        return out
    piece = max(1, limit() // size // mine.itemsize)
    rounds = max(1, -(-int(counts.max()) // piece))
    begins = starts(counts)
    for r in range(rounds):
        rc, at = _pieces(counts, r * piece, piece), r * piece
        comm.Reduce_scatter(_pack(mine, begins, rc, at), out[at:at + int(rc[rank])], rc, op=op)
    return out


def send(comm, obj, dest, tag):
    """``obj`` to rank ``dest``: its pickle, then each array it holds as raw bytes in pieces of
    at most :func:`limit` (see :func:`recv`)."""
    buffers = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views, step = [b.raw() for b in buffers], limit()
    comm.send((head, [v.nbytes for v in views]), dest=dest, tag=tag)
    for view in views:
        for at in range(0, view.nbytes, step):
            comm.Send([view[at:at + step], _byte()], dest=dest, tag=tag)


def recv(comm, source, tag):
    """The object :func:`send` sent from ``source`` with ``tag``."""
    head, sizes = comm.recv(source=source, tag=tag)
    buffers, step = [], limit()
    for nbytes in sizes:
        buf = np.empty(nbytes, np.uint8)
        for at in range(0, nbytes, step):
            comm.Recv([buf[at:at + step], _byte()], source=source, tag=tag)
        buffers.append(buf)
    return pickle.loads(head, buffers=buffers)


def gather(comm, obj, root, tag):
    """Every rank's ``obj`` as a list in rank order on ``root`` (None elsewhere), each sent
    as :func:`send` sends it."""
    if comm.Get_rank() != root:
        send(comm, obj, root, tag)
        return None
    return [obj if r == root else recv(comm, r, tag) for r in range(comm.Get_size())]


def _byte():
    from mpi4py import MPI
    return MPI.BYTE
