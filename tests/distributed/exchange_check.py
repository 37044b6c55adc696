"""Run under ``mpiexec -n R python -m tests.distributed.exchange_check``: the GPU ranks' exchange
(grstream/distributed/nccl.py) on host arrays equals the MPI exchange of CPU ranks, call by
call: dense and sparse state of several dtypes, the union of ids (sparse and through a bitmap)
and of bitmaps, and a push's messages combined at their owners (dense and sparse, each monoid),
on partitions with empty ranks and odd sizes.

NcclExchange runs here on numpy arrays through :class:`HostCollectives`, the same calls as
NCCL's (grouped broadcasts, reduces, sends and receives, all-gather) made over MPI, so everything but the NCCL and CuPy calls
themselves runs without a GPU; tests/distributed/test_gpu_ranks.py runs the real thing on GPUs.
"""
import sys
import time
from contextlib import nullcontext

import numpy as np
from mpi4py import MPI

import grstream as gr
from grstream.distributed.exchange import MpiExchange
from grstream.distributed.nccl import NcclExchange, owned_ids

COMM = MPI.COMM_WORLD


class HostCollectives:
    """NcclCollectives' calls on numpy arrays over MPI."""

    xp = np

    def __init__(self, comm):
        self.comm, self.seconds = comm, 0.0

    def using(self):
        return nullcontext()

    def broadcasts(self, pairs):
        for send, recv, root in pairs:
            if self.comm.Get_rank() == root:
                recv[...] = send
            self.comm.Bcast(recv.view(np.uint8), root=root)

    def reduces(self, pairs, op):
        for buf, root in pairs:
            mpi_op = getattr(MPI, op[len("NCCL_"):])
            if self.comm.Get_rank() == root:
                self.comm.Reduce(MPI.IN_PLACE, buf, op=mpi_op, root=root)
            else:
                self.comm.Reduce(buf, None, op=mpi_op, root=root)

    def allreduce(self, buf, op):
        self.comm.Allreduce(MPI.IN_PLACE, buf, op=getattr(MPI, op[len("NCCL_"):]))

    def sendrecvs(self, pairs):
        for send, recv, peer in pairs:
            self.comm.Sendrecv(send.view(np.uint8), dest=peer, recvbuf=recv.view(np.uint8), source=peer)

    def allgather(self, send, recv):
        self.comm.Allgather(send.view(np.uint8), recv.view(np.uint8))

    def start(self):
        return time.perf_counter()

    def stop(self, start):
        self.seconds += time.perf_counter() - start

    def elapsed(self):
        out, self.seconds = self.seconds, 0.0
        return out


def exchanges(bounds):
    return (MpiExchange(COMM, bounds),
            NcclExchange(COMM, bounds, lambda: HostCollectives(COMM)))


def check_state(rng, n, bounds, sparse):
    rank = COMM.Get_rank()
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    # the same replicated state everywhere, then each rank changes some of its own vertices
    base = {"x": rng.uniform(0, 1, n), "d": rng.integers(-9, 9, n).astype(np.int32),
            "b": rng.integers(0, 2, n).astype(np.uint8)}
    own = np.random.default_rng(1000 + rank)
    applied = np.sort(own.choice(np.arange(lo, hi), size=min(hi - lo, 3 if sparse else hi - lo),
                                 replace=False)).astype(np.int64)
    mine = {k: v.copy() for k, v in base.items()}
    for k, v in mine.items():
        v[applied] = own.integers(0, 100, len(applied)).astype(v.dtype)
    lengths = np.array(COMM.allgather(len(applied)), dtype=np.int64)
    total = int(lengths.sum())
    results = []
    for ex in exchanges(bounds):
        fields = {k: v.copy() for k, v in mine.items()}
        results.append((ex.state(fields, applied, lengths, dense=not sparse), fields, ex.bytes))
    (k1, f1, b1), (k2, f2, b2) = results
    assert k1 == k2 == ("sparse" if sparse and total * (8 + 13) < n * 13 else "dense"), (k1, k2)
    for k in f1:
        assert np.array_equal(f1[k], f2[k]), k
    assert b1 == b2, (b1, b2)
    return 1


def check_union(rng, n, bounds, count):
    own = np.random.default_rng(2000 + COMM.Get_rank())
    ids = np.sort(own.choice(n, size=min(count, n), replace=False)).astype(np.int64)
    lengths = np.array(COMM.allgather(len(ids)), dtype=np.int64)
    mpi, nccl = exchanges(bounds)
    want, got = mpi.union(ids, n, lengths), nccl.union(ids, n, lengths)
    assert np.array_equal(want, got)
    words = bitmap(ids, n)   # the bitmap of the same ids
    nccl.union_bitmap(words, np.empty(COMM.Get_size() * len(words) + 5, dtype=np.uint32))
    assert np.array_equal(owned_ids(np, words, 0, n), want)
    lo, hi = sorted(own.integers(0, n + 1, 2))
    assert np.array_equal(owned_ids(np, words, lo, hi), want[(want >= lo) & (want < hi)])
    return 1


def bitmap(ids, n):
    words = np.zeros((n + 31) // 32, dtype=np.uint32)
    np.bitwise_or.at(words, ids // 32, (np.uint32(1) << (ids % 32).astype(np.uint32)))
    return words


def check_push(n, bounds, count, monoid, dtype):
    """Each rank's messages to any vertices, combined at the owners: the device exchange's
    accumulator and bitmap against the MPI exchange's (receivers, values)."""
    rank = COMM.Get_rank()
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    own = np.random.default_rng(3000 + rank + n)
    ids = np.sort(own.choice(n, size=min(count, n), replace=False)).astype(np.int64)
    values = own.integers(0, 50, len(ids)).astype(dtype)   # (integral: sums in any order agree)
    mpi, nccl = exchanges(bounds)
    want_ids, want = mpi.combine(ids, values, monoid)
    identity = monoid.identity(dtype)
    acc = np.full(n, identity, dtype=dtype)
    acc[ids] = values
    touched = bitmap(ids, n)
    listed = nccl.combine(ids, values, monoid)   # (the interface's, through push)
    assert all(np.array_equal(a, b) for a, b in zip(listed, (want_ids, want)))
    nccl.push(acc, touched, monoid, np.empty(COMM.Get_size() * len(touched), dtype=np.uint32))
    got = owned_ids(np, touched, 0, n)
    assert np.array_equal(got, want_ids), (got, want_ids)
    assert np.array_equal(acc[got], want), (acc[got], want)
    outside = np.ones(n, dtype=bool)
    outside[lo:hi] = False
    assert (acc[outside] == identity).all() and np.all((got >= lo) & (got < hi))
    return 1


def check_push_everywhere(n, bounds, count, monoid, dtype):
    """Each rank's messages to any vertices, combined on every rank for every vertex: the
    accumulator and bitmap against every rank's messages combined in rank order."""
    own = np.random.default_rng(4000 + COMM.Get_rank() + n)
    ids = np.sort(own.choice(n, size=min(count, n), replace=False)).astype(np.int64)
    values = own.integers(0, 50, len(ids)).astype(dtype)
    identity = monoid.identity(dtype)
    want = np.full(n, identity, dtype=dtype)
    for their_ids, their_values in COMM.allgather((ids, values)):
        monoid.ufunc.at(want, their_ids, their_values)
    receivers = np.flatnonzero(np.isin(np.arange(n), np.concatenate(COMM.allgather(ids))))
    acc = np.full(n, identity, dtype=dtype)
    acc[ids] = values
    touched = bitmap(ids, n)
    nccl = exchanges(bounds)[1]
    kind = nccl.push_everywhere(acc, touched, monoid, np.empty(COMM.Get_size() * len(touched), dtype=np.uint32))
    assert np.array_equal(owned_ids(np, touched, 0, n), receivers)
    assert np.array_equal(acc, want), (acc, want)
    return {"dense": 1, "sparse": 2}[kind]


def main():
    rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
    size, checks, kinds = COMM.Get_size(), 0, set()
    for n in (1, 31, 33, 200, 1000):
        cuts = np.sort(rng.integers(0, n + 1, size - 1))
        for bounds in (np.concatenate([[0], cuts, [n]]), np.array([0] * size + [n])):  # (one owns all)
            for sparse in (False, True):
                checks += check_state(rng, n, bounds, sparse)
            for count in (1, n // 100 + 1, n // 2 + 1, n):
                checks += check_union(rng, n, bounds, count)
            for count, (monoid, dtype) in zip((0, 2, n // 3 + 1, n), [(gr.monoid.sum, np.float32), (gr.monoid.min, np.int64),
                                                                      (gr.monoid.max, np.float64), (gr.monoid.sum, np.uint32)]):
                checks += check_push(n, bounds, count, monoid, dtype)
                kinds.add(check_push_everywhere(n, bounds, count, monoid, dtype))
    assert kinds == {1, 2}, kinds   # (both ways of combining everywhere ran)
    if COMM.Get_rank() == 0:
        print(f"exchange_check: {checks} checks equal on {size} ranks")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:   # one rank's failure: say so and stop the others
        sys.stderr.write(f"exchange_check rank {COMM.Get_rank()}: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        COMM.Abort(2)
