"""``mpiexec -n N python -m tests.distributed.messages_check``: the host MPI messages
(grstream.distributed.messages, and the exchange's all-to-all-v and all-gather-v over them)
under limits from one byte to the default, with uneven and zero counts: each result equals what
every rank computes alone from the seeded data; rank 0 prints "messages equal on N ranks"."""
import os

import numpy as np
from mpi4py import MPI

from grstream.distributed import messages
from grstream.distributed.exchange import MpiExchange
from grstream.store.encode import encode_ids

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def data(seed, rows, dtype=np.int64, lanes=None):
    """Rank-independent rows: the same on every rank for a seed."""
    rng = np.random.default_rng(seed)
    shape = (rows,) if lanes is None else (rows, lanes)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def check_alltoallv(case):
    rng = np.random.default_rng(case)
    counts = rng.integers(0, 40, (SIZE, SIZE))   # [from, to] rows
    counts[rng.random((SIZE, SIZE)) < 0.3] = 0
    lanes = [None, 3][case % 2]
    dtype = [np.int64, np.float32, np.uint8][case % 3]
    sent = {(a, b): data(1000 * case + SIZE * a + b, int(counts[a, b]), dtype, lanes)
            for a in range(SIZE) for b in range(SIZE)}
    mine = np.concatenate([sent[RANK, b] for b in range(SIZE)])
    exchange = MpiExchange(COMM, np.arange(SIZE + 1))
    want = np.concatenate([sent[a, RANK] for a in range(SIZE)])
    for every in (None, counts):
        got = exchange.alltoallv(mine, counts[RANK], counts[:, RANK], every)
        assert got.dtype == want.dtype and np.array_equal(got, want), (case, every)


def check_allgatherv(case):
    rng = np.random.default_rng(case)
    lengths = rng.integers(0, 50, SIZE)
    lengths[rng.random(SIZE) < 0.3] = 0
    parts = [data(100 * case + r, int(lengths[r]), np.float64, [None, 2][case % 2]) for r in range(SIZE)]
    exchange = MpiExchange(COMM, np.arange(SIZE + 1))
    got = exchange.allgatherv(parts[RANK], lengths)
    assert np.array_equal(got, np.concatenate(parts)), case
    # in place, as the dense state moves owned slices (begins of any size)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    field = np.concatenate(parts).copy()
    field[:bounds[RANK]] = 0
    field[bounds[RANK + 1]:] = 0
    k = field.itemsize * (field.shape[1] if field.ndim > 1 else 1)
    messages.allgatherv(COMM, None, field.reshape(-1).view(np.uint8), lengths * k, bounds[:-1] * k)
    assert np.array_equal(field, np.concatenate(parts)), case


def check_scatterv(case):
    rng = np.random.default_rng(case)
    counts = rng.integers(0, 90, SIZE)
    counts[rng.random(SIZE) < 0.3] = 0
    root = case % SIZE
    whole = data(case, int(counts.sum()), np.uint8)
    out = np.empty(int(counts[RANK]), np.uint8)
    messages.scatterv(COMM, whole if RANK == root else None, counts, out, root)
    begin = int(counts[:RANK].sum())
    assert np.array_equal(out, whole[begin:begin + counts[RANK]]), case


def check_reductions(case):
    """All-reduce, broadcast and reduce-scatter (uneven and zero parts) against numpy."""
    rng = np.random.default_rng(case)
    length = int(rng.integers(0, 60))
    every = [data(10 * case + r, length, [np.int64, np.float64, np.uint8][case % 3]) for r in range(SIZE)]
    summed = every[RANK].copy()
    messages.allreduce(COMM, summed, MPI.SUM)
    want = every[0].copy()
    for other in every[1:]:
        want += other
    assert np.array_equal(summed, want), case
    bits = every[RANK].astype(np.uint8)
    messages.allreduce(COMM, bits, MPI.BOR, MPI.BYTE)
    assert np.array_equal(bits, np.bitwise_or.reduce([e.astype(np.uint8) for e in every])), case
    root = case % SIZE
    got = every[RANK].copy()
    messages.bcast(COMM, got, root)
    assert np.array_equal(got, every[root]), case
    counts = rng.multinomial(length, np.ones(SIZE) / SIZE)
    out = np.empty(int(counts[RANK]), every[0].dtype)
    messages.reduce_scatter(COMM, every[RANK], counts, out, MPI.MAX)
    begin = int(counts[:RANK].sum())
    assert np.array_equal(out, np.maximum.reduce(every)[begin:begin + counts[RANK]]), case


def check_objects(case):
    """A shard's sides (arrays, encoded ids, None) point to point and gathered."""
    def obj(r):
        ids = np.sort(data(case + r, 20 + 7 * r, np.int64) % 500)
        return {"out": (np.arange(5, dtype=np.int64), ids, None),
                "in": (data(r, 3, np.int32), encode_ids(ids, 500), data(r, 4, np.float32)),
                "eid": data(case, 0), "rank": r, "records": records(r)}

    def records(r):   # (as the build's edge-id pairs go: a structured array)
        out = np.zeros(3 * r + 1, [("p", np.int64), ("s", np.int64), ("side", np.uint8)])
        out["p"], out["s"], out["side"] = data(r, len(out)), data(r + 9, len(out)), r % 2
        return out
    got = messages.gather(COMM, obj(RANK), case % SIZE, tag=case)
    if RANK == case % SIZE:
        for r, one in enumerate(got):
            same(one, obj(r))
    else:
        assert got is None
    if SIZE > 1:
        to, of = (RANK + 1) % SIZE, (RANK - 1) % SIZE
        request = COMM.isend(None, dest=to, tag=99)   # (a ring: each sends on, then receives)
        if RANK % 2 == 0:
            messages.send(COMM, obj(RANK), to, case)
            same(messages.recv(COMM, of, case), obj(of))
        else:
            same(messages.recv(COMM, of, case), obj(of))
            messages.send(COMM, obj(RANK), to, case)
        COMM.recv(source=of, tag=99)
        request.wait()


def same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    elif hasattr(a, "parts"):
        assert a.num_ids == b.num_ids
        same(tuple(a.parts), tuple(b.parts))
    else:
        assert a == b


def main():
    for limit in ("1", "7", "64", "1000", str(messages.DEFAULT_LIMIT)):
        os.environ["GRSTREAM_MPI_LIMIT"] = limit
        for case in range(6):
            check_alltoallv(case)
            check_allgatherv(case)
            check_scatterv(case)
            check_reductions(case)
            check_objects(case)
    COMM.Barrier()
    if RANK == 0:
        print(f"messages equal on {SIZE} ranks")


if __name__ == "__main__":
    main()
