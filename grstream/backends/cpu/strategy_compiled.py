"""Push plans through the compiled kernels generated from the program (compiled.py).

The same plans as :class:`~.strategy_push.Push` (synchronous and asynchronous, every frontier
format), with the sends and the apply replaced: a unit's senders go through ``push_<d>`` (one
pass over their edges, messages combined into the accumulator as they are computed, each
receiver listed once in arrival order in the stamp array, which this strategy does not
otherwise use), and the apply over the receivers through ``apply_all``. The receivers are
sorted (few) or read from the accumulator or the flags (many) when the messages are combined,
so the changed set and the values written are the numpy path's, and ranks exchange the
combined messages as they do the numpy path's (``combine`` and ``receive``).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...errors import UsageError
from . import compiled
from .strategy_push import SENDS, UNIFORM_SHARE, Push

#: without an extension module of the kernels (aot.py), a process loads them through numba once
#: its qualifying runs reach this many edges, the store of the run that loads them included:
#: importing numba and its first call cost about 0.6 s of CPU, which the kernels save over about
#: 16M edges of BFS or SSSP (docs/BENCHMARKS.md, "Measured constants"); with the module built,
#: loading costs under a millisecond and every qualifying run compiles
COMPILED_EDGES = 1 << 24
#: receivers of a plan are read back by scanning the n flags from this share of n on (below,
#: sorting the listed ones costs less)
SCAN_SHARE = 1 / 16
#: a folded uniform send runs in parts on the executor's threads (the kernels release the GIL)
#: where each part walks at least this many edges
PARALLEL_EDGES = 1 << 16


def in_threads(calls):
    """Run the zero-argument ``calls`` at once, the first on this thread and the others on a
    shared pool; returns the first's result (the others' are not needed: see push_uniform's
    fold)."""
    if len(calls) == 1:
        return calls[0]()
    global _POOL
    if _POOL is None or _POOL[0] < len(calls) - 1:
        _POOL = (len(calls) - 1, ThreadPoolExecutor(len(calls) - 1, thread_name_prefix="grstream-push"))
    futures = [_POOL[1].submit(call) for call in calls[1:]]
    out = calls[0]()
    for f in futures:
        f.result()
    return out


_POOL = None   # (workers, the pool)


def push_class(ex, choice, pushes=True):
    """(the push strategy class, its compiled kernels or None) for the executor ``ex`` and the
    option ``kernels`` = ``choice``: "numba" insists (a UsageError saying why the program or the
    installation cannot), "auto" compiles where numba is installed, the program qualifies and
    the kernels pay for their loading (:func:`pays`), "numpy" never. ``pushes``: the executor's
    memory model holds push's arrays (else no kernel is needed)."""
    if choice == "numpy":
        return Push, None
    dtypes = {p: ex.store.edge_props.get(p) for p in ex.spec.edge_reads}
    why = compiled.why_not(ex.spec, {p: dt for p, dt in dtypes.items() if dt is not None})
    if not why:
        why = compiled.numba_missing()
        if why:
            why = f"numba is not installed ({why}): pip install grstream[compiled]"
    if why and choice == "numba":
        raise UsageError(f"kernels='numba': {ex.spec.name} runs on numpy here: {why}")
    dirs = ("in", "out") if ex.spec.gather_edges == "all" else (ex.spec.gather_edges,)
    if why or not pushes or (choice == "auto" and not pays(ex.spec, dirs, ex.store)):
        return Push, None
    return CompiledPush, compiled.push_kernels(ex.spec, dirs)


def pays(spec, dirs, store):
    """Whether compiled kernels pay for themselves: they load at no cost (loaded in this process
    already, or built as an extension module), or the qualifying runs of this process, this one
    included, reach COMPILED_EDGES edges (a process's first kernels through numba cost importing
    numba and loading the machine code from the cache, more than the numpy passes spend on one
    smaller graph; a process that keeps running such programs loads them once it has spent that
    much)."""
    global _SEEN
    _SEEN += int(store.num_edges)
    try:
        cheap = compiled.push_kernels(spec, dirs).ready()
    except OSError:   # (no writable cache directory: the numpy passes)
        return False
    return cheap or _SEEN >= COMPILED_EDGES


_SEEN = 0   # edges of the stores of this process's qualifying runs so far


class CompiledPush(Push):
    """Push plans through compiled kernels (``kernels``: a compiled.PushKernels)."""

    def __init__(self, ex, ledger, kernels):
        super().__init__(ex, ledger)
        self.kernels = kernels
        self.count = 0   # receivers listed in self.stamp since the last apply
        # push_uniform's bits: the receivers of the one message ``self.seen_value`` so far;
        # ``folded``: every message since the last combine is that one, and its receivers are
        # only flagged (not listed), their accumulators left at the identity. Between plans
        # the bits are kept (see :meth:`_uniform`): every vertex marked then absorbs
        # ``self.absorbed``
        self.seen = np.zeros((ex.n + 63) // 64, dtype=np.uint64)
        self.seen_value, self.folded, self.absorbed = None, False, None

    def forget(self):
        """A run starts (the fields are set anew): no bit holds."""
        if self.seen_value is not None or self.absorbed is not None:
            self.seen.fill(0)
        self.seen_value, self.folded, self.absorbed = None, False, None

    def _params(self):
        program = self.ex.program
        return {p: getattr(program, p) for p in self.kernels.params}

    def _vertex(self):
        ex = self.ex
        return {f: ex.cur[f] if f in ex.cur else ex.builtins[f] for f in self.kernels.vertex}

    def send_all(self, piece, senders, full, keep):
        ex, params, vertex = self.ex, self._params(), self._vertex()
        local = senders - piece.lo
        walked = 0
        with self.lock:
            for d in self.dirs:
                ptr_name, ids_name, side = SENDS[d]
                indptr, ids = piece.arrays[ptr_name], piece.arrays[ids_name]
                if full:   # (the rows' ends are indptr's own)
                    first = int(indptr[local[0]])
                    ends = indptr[local[0] + 1:local[-1] + 2]
                else:   # the senders' edges counted once, for the total and the parts
                    first, ends = 0, np.cumsum(indptr[local + 1] - indptr[local])
                edges = int(ends[-1]) - first
                walked += edges
                m = self._uniform(d, senders, edges)
                if m is not None:
                    self.folded = self.folded or self.count == 0
                    parts = (self._parts(ends, first, edges) if self.folded
                             else [(0, len(senders))])
                    runs = [lambda part=part: self.kernels.push_uniform(
                        d, indptr, ids, piece.lo, part, self.acc, self.identity, self.seen,
                        self.flag, self.stamp, self.count, m, self.folded, vertex)
                        for part in (senders[a:b] for a, b in parts)]
                    self.count = in_threads(runs)
                    continue
                self._unfold()
                edge = {p: piece.arrays[f"{side}/{p}"] for p in self.kernels.edge}
                self.count = self.kernels.push(d, indptr, ids, piece.lo, senders, self.acc,
                                               self.identity, self.flag, self.stamp,
                                               self.count, vertex, edge, params)
        ex.tally.add(edges=walked)

    def _uniform(self, d, senders, edges):
        """The senders' one message over ``d``-edges where push_uniform may send it, else None:
        absorbing programs whose message reads only the sender, every sender's the same, over
        at least UNIFORM_SHARE * n edges (the bits are cleared at each combine, n / 8 bytes).
        The bits are cleared when the message differs from the one they hold. Bits kept from
        earlier plans (their receivers applied since) hold for ``m`` where the message they were
        set for absorbs it, M(absorbed, m) == absorbed: apply keeps f = M(v.f, acc), so a
        vertex's field only moves further (M is idempotent and associative) and a vertex with
        M(v.f, absorbed) == v.f has M(v.f, m) == M(M(v.f, absorbed), m) == v.f. BFS: the
        vertices reached at earlier levels cost later levels one bit test an edge, not a read
        of their level."""
        if not (self.kernels.absorbing and self.per_sender[d]) or edges < self.ex.n * UNIFORM_SHARE:
            return None
        m = self._message(d, senders)
        if np.ndim(m):
            return None
        if self.seen_value is not None and self.seen_value != m:
            self._unfold()
            self.seen.fill(0)
        elif self.seen_value is None and self.absorbed is not None:
            if self.ex.spec.gather_reduce.ufunc(self.absorbed, m) != self.absorbed:
                self.seen.fill(0)
        self.seen_value, self.absorbed = m, None
        return m

    def _parts(self, ends, first, edges):
        """[(a, b)]: the senders in parts of about equal edges, one for each of the executor's
        threads, each of at least PARALLEL_EDGES edges (``ends``: each sender's last edge + 1,
        counted from ``first``)."""
        count = min(self.ex.threads, edges // PARALLEL_EDGES)
        if count <= 1:
            return [(0, len(ends))]
        # (integer keys: float ones would convert ``ends`` whole)
        cuts = np.searchsorted(ends, first + np.arange(1, count) * edges // count)
        bounds = [0, *(int(c) + 1 for c in cuts), len(ends)]
        return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]

    def _unfold(self):
        """Combine the folded message into its receivers (flagged, their accumulators at the
        identity) and list them, so that other messages may follow."""
        if self.folded:
            listed = np.flatnonzero(self.flag)
            self.flag[listed] = False
            self.acc[listed] = self.seen_value
            self.stamp[self.count:self.count + len(listed)] = listed
            self.count += len(listed)
            self.folded = False

    def combine(self):
        """(sorted receivers, their combined message) since the last combine; their
        accumulator is back at the identity (and their flags cleared)."""
        ex = self.ex
        with self.lock:
            value, folded = self.seen_value, self.folded
            if value is not None:   # push_uniform's bits: kept, for messages ``value`` absorbs
                self.absorbed, self.seen_value, self.folded = value, None, False
            k, self.count = self.count, 0
            if folded:   # (nothing listed: the flags hold the receivers)
                receivers = np.flatnonzero(self.flag)
                self.flag[receivers] = False
                return receivers, np.full(len(receivers), value, dtype=self.acc.dtype)
            if k == 0:
                return np.zeros(0, dtype=np.int64), self.acc[:0].copy()
            if k < ex.n * SCAN_SHARE:
                receivers = np.sort(self.stamp[:k]).astype(np.int64, copy=False)
            elif self.kernels.absorbing:   # (the kernels leave the flags clear)
                receivers = np.flatnonzero(self.acc != self.identity)
            else:
                receivers = np.flatnonzero(self.flag)
            acc = self.acc[receivers]
            self.acc[receivers] = self.identity
            if not self.kernels.absorbing:
                self.flag[receivers] = False
        return receivers, acc

    def _apply_receivers(self, receivers, acc):
        ex = self.ex
        if len(receivers) == 0:
            return receivers, (), receivers
        changed = np.empty(len(receivers), dtype=np.int64)
        c = self.kernels.apply(np.asarray(receivers, dtype=np.int64), acc, changed,
                               self.asynchronous, self._vertex(), ex.nxt, ex.cur, self._params())
        changed = changed[:c]
        if self.asynchronous:
            self.unsent[changed] = True
        return receivers, self.kernels.writes, changed


def check_choice(choice):
    if choice not in compiled.KERNEL_CHOICES:
        raise UsageError(f"kernels must be one of {', '.join(compiled.KERNEL_CHOICES)} on the "
                         f"CPU, not {choice!r}")
