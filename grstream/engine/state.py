"""A run's initial state: declared constants (:class:`ConstantState`, made by the executor where
the state lives) or the program's ``init`` over every vertex on the host; and edge state."""
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from ..errors import ProgramError
from ..program.push import sender_reads_builtins
from ..program.views import FieldValueError, VertexView


def initial_state(program, store, lanes=None, alloc=None, ids=None, span=None):
    """Run the program's host-side init over every vertex: (state dict, seed mask or None).
    With ``lanes`` the state and the seed are (n, lanes) arrays. ``alloc(name, shape, dtype)``
    gives the arrays the state is written into (an executor's ``host_state``: reused between
    runs, their contents left from before); every entry is written here: the values init assigns,
    zeros elsewhere (a field init reads is zeroed before it reads it). ``ids()``: the vertex ids
    0..n-1 as a read-only int64 array kept between runs (a Session's), which ``v.id`` reads
    instead of a new arange of n per run. ``span`` ``(lo, hi)``: init over those vertices only
    (a program with ``local_init``, on an MPI rank): the arrays' other entries are left as they
    were, and the seed is the span's (hi - lo entries)."""
    spec = type(program).spec
    n = int(store.num_vertices)
    lo, hi = (0, n) if span is None else span
    shape = (n,) if lanes is None else (n, lanes)
    if alloc is None:
        state = {f: np.zeros(shape, dtype=dt) for f, dt in spec.vertex_fields.items()}
    else:
        state = {f: alloc(f, shape, dt) for f, dt in spec.vertex_fields.items()}
    builtins = _Builtins()
    if ids is not None:
        builtins["id"] = ids
    if "in_degree" in spec.vertex_reads:
        builtins["in_degree"] = store.in_degree()
    if "out_degree" in spec.vertex_reads:
        builtins["out_degree"] = store.out_degree()
    fields = _ZeroedOnRead(state, lo, hi, zeroed=alloc is None)
    v = VertexView(fields, builtins, slice(lo, hi), hi - lo, writable=True, lanes=lanes)
    seed = program.init(v)
    fields.reading = False   # (assigned() reads the fields' dtypes only)
    per = f"{hi - lo} vertices" + ("" if lanes is None else f" x {lanes} lanes")
    try:
        assigned = v.assigned()
    except FieldValueError as exc:
        raise ProgramError(f"init: v.{exc.field} must be one value or one per vertex ({per}), "
                           f"not {_described(exc.value)}", spec.name) from None
    for f, arr in state.items():
        if f in assigned:
            if not _is_entries(assigned[f], arr[lo:hi]):   # (init wrote them in place)
                arr[lo:hi] = assigned[f]
        elif f not in fields.zeroed:
            arr[lo:hi] = 0
    if seed is not None:
        try:
            seed = np.broadcast_to(np.asarray(seed, dtype=bool), (hi - lo, *shape[1:]))
        except (ValueError, TypeError):
            raise ProgramError(f"init returned a seed of {_described(seed)}: it must be None or a "
                               f"bool mask of the {per}", spec.name) from None
    return state, seed


def local_init(cls):
    """Whether ranks may run ``cls``'s init over their own vertices: the class that defines
    ``init`` declares ``local_init`` itself (a subclass's own init is not covered by its base's);
    the base's init (the declared ``initial`` and ``seeds``) is local."""
    if cls.spec.constant_init:
        return True
    owner = next((c for c in cls.__mro__ if "init" in vars(c)), None)
    return bool(owner is not None and vars(owner).get("local_init", False))


@dataclass(frozen=True)
class ConstantState:
    """A run's initial state as its program declares it (``initial``, ``seeds``): every vertex's
    fields at ``values``, the ``seed`` vertices' (sorted ids; None: no seed, every vertex active)
    at ``seed_values`` (per field, one value per seed id). The executor makes it where the state
    lives (``Executor.fill_state``): no host array of n values, no upload."""

    n: int
    values: Dict[str, np.generic]
    seed: Optional[np.ndarray]
    seed_values: Dict[str, np.ndarray]

    def rows(self):
        """``(state, seed)`` of the state's distinct rows, the values of the vertices outside
        the seed (where there are any) and each seed vertex's: a program whose messages read
        only the sender's fields sends from them what it sends from the whole state."""
        k = 0 if self.seed is None else len(self.seed)
        rest = [True] if self.n > k else []
        state = {f: np.array([x] * len(rest) + list(self.seed_values[f]), dtype=x.dtype)
                 for f, x in self.values.items()}
        return state, np.array([False] * len(rest) + [True] * k, dtype=bool)


def constant_state(program, n, lanes=None):
    """The run's :class:`ConstantState` where its class has no ``init`` of its own (the declared
    start); None where the host runs init: lanes, scheduled programs (the host reads the
    schedule), and seeded push programs whose messages read the sender's built-ins (the push
    check then needs every vertex's)."""
    spec = type(program).spec
    if (not spec.constant_init or lanes is not None or spec.activate == "schedule"
            or (spec.seeds and sender_reads_builtins(spec))):
        return None
    sources = {p: int(getattr(program, p)) for p in spec.seeds}
    seed = np.unique(np.fromiter(sources.values(), dtype=np.int64, count=len(sources))) if sources else None
    k = 0 if seed is None else len(seed)
    seed_values = {f: np.full(k, x) for f, x in spec.initial.items()}
    for p, given in spec.seeds.items():   # (in declaration order: a later param's values win)
        at = int(np.searchsorted(seed, sources[p]))
        for f, x in given.items():
            seed_values[f][at] = x
    return ConstantState(n, dict(spec.initial), seed, seed_values)


def start_state(program, store, lanes=None, alloc=None, ids=None, ranks=None):
    """A run's ``(state, seed)``: a :class:`ConstantState` and its seed's sorted ids (no mask of
    n) where the program declares its start, else ``initial_state``'s host arrays and seed mask
    (under MPI ranks ``Ranks.initial_state``'s). Every rank makes a declared state whole,
    exchanging nothing."""
    made = constant_state(program, int(store.num_vertices), lanes)
    if made is None:
        init = initial_state if ranks is None else ranks.initial_state
        return init(program, store, lanes=lanes, alloc=alloc, ids=ids)
    if ranks is not None:
        ranks.state_span = None   # (the executor's state is the whole state: no exchange)
    return made, made.seed


class _ZeroedOnRead(dict):
    """The state arrays as init sees them: a field's entries ``[lo, hi)`` are zeroed when init
    first reads it (the arrays come with the last run's contents; a field init only assigns is
    written once)."""

    def __init__(self, state, lo, hi, zeroed=False):
        super().__init__(state)
        self.lo, self.hi = lo, hi
        self.zeroed, self.reading = set(state) if zeroed else set(), True

    def entries(self, name):
        """Field ``name``'s array, not zeroed: init writes every entry (VertexView.entries)."""
        self.zeroed.add(name)
        return super().__getitem__(name)

    def __getitem__(self, name):
        arr = super().__getitem__(name)
        if self.reading and name not in self.zeroed:
            arr[self.lo:self.hi] = 0
            self.zeroed.add(name)
        return arr


class _Builtins(dict):
    """Vertex properties init may read; a callable value is made on the first read (the ids)."""

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if callable(value):
            value = value()
            self[name] = value
        return value


def vertex_ids(n):
    """0..n-1 as a read-only int64 array (what ``v.id`` reads in init, kept by a Session)."""
    ids = np.arange(n, dtype=np.int64)
    ids.flags.writeable = False
    return ids


class VertexIds:
    """A Session's :func:`vertex_ids`, made on the first call (the first run whose init reads
    ``v.id``) and kept for its later runs."""

    def __init__(self, n):
        self.n, self.ids = n, None

    def __call__(self):
        if self.ids is None:
            self.ids = vertex_ids(self.n)
        return self.ids


def _is_entries(value, entries):
    """Whether ``value`` is the array ``entries`` itself (a view of the same memory and layout)."""
    return (isinstance(value, np.ndarray) and value.shape == entries.shape
            and value.strides == entries.strides and value.dtype == entries.dtype
            and value.__array_interface__["data"][0] == entries.__array_interface__["data"][0])


def _described(value):
    return f"shape {np.shape(value)}" if isinstance(value, (np.ndarray, list, tuple)) else repr(value)


#: seeds found by successive argmax scans before seed_ids falls back to np.flatnonzero
ARGMAX_SEEDS = 64
#: masks of at least this many entries are scanned in SCAN_PARTS pieces on threads (numpy's argmax
#: releases the GIL): one thread reads a 16M mask at the host's single-core memory bandwidth, a
#: large share of BFS's start() (docs/BENCHMARKS.md, "Measured constants")
SCAN_PARALLEL = 1 << 22
SCAN_PARTS = 4
_POOL = []


def _scan(m, lo, hi, limit):
    """Ids of the True entries of m[lo:hi] by successive argmax scans; None beyond ``limit``."""
    out, pos = [], lo
    while pos < hi:
        k = pos + int(m[pos:hi].argmax())
        if not m[k]:
            break
        out.append(k)
        if len(out) > limit:
            return None
        pos = k + 1
    return out


def seed_ids(mask):
    """Sorted ids of the True entries of a bool mask (``np.flatnonzero``). A seed of at most
    ARGMAX_SEEDS vertices is found by successive ``argmax`` scans, which stop at the first True (a
    memchr-speed pass over the mask instead of numpy's full nonzero pass, an order of magnitude
    faster), a large mask's pieces on threads at once. The engine
    calls it once per run and hands the ids to the executor's ``set_frontier``, so no one scans
    the mask twice."""
    m = np.asarray(mask)
    # init's seed reaches here as a read-only np.broadcast_to view, on which argmax runs about ten
    # times slower: scan the array it views when that has the
    # same memory and layout
    while (not m.flags.writeable and isinstance(m.base, np.ndarray) and m.base.shape == m.shape
           and m.base.dtype == m.dtype and m.base.strides == m.strides
           and m.base.ctypes.data == m.ctypes.data):
        m = m.base
    if m.dtype != np.bool_ or m.ndim != 1 or m.strides != (1,):
        return np.flatnonzero(m)
    if m.size < SCAN_PARALLEL:
        found = _scan(m, 0, m.size, ARGMAX_SEEDS)
    else:
        if not _POOL:
            from concurrent.futures import ThreadPoolExecutor
            _POOL.append(ThreadPoolExecutor(SCAN_PARTS, thread_name_prefix="grstream-seed"))
        cuts = [m.size * k // SCAN_PARTS for k in range(SCAN_PARTS + 1)]
        parts = list(_POOL[0].map(lambda k: _scan(m, cuts[k], cuts[k + 1], ARGMAX_SEEDS), range(SCAN_PARTS)))
        found = None if any(p is None for p in parts) else [k for p in parts for k in p]
        if found is not None and len(found) > ARGMAX_SEEDS:
            found = None
    return np.flatnonzero(m) if found is None else np.asarray(found, dtype=np.int64)


def run_seed_ids(state, seed, lanes=None):
    """The sorted ids of a run's ``seed``: a declared state's own (:class:`ConstantState`), else
    found in its mask (in lanes, the union of the lanes')."""
    if isinstance(state, ConstantState):
        return state.seed
    return seed_ids(seed if lanes is None else seed.any(axis=1))


def initial_edge_state(store, spec, cache=None):
    """Each of ``spec.edge_state`` in global CSR order: the stored property of the same name, or
    zeros. ``cache`` (a dict) keeps stored properties between runs of a session."""
    out = {}
    m = int(store.num_edges)
    for name, dtype in spec.edge_state.items():
        if name in store.edge_props:
            key = (name, np.dtype(dtype).str)
            have = None if cache is None else cache.get(key)
            if have is None:
                parts = [store.read(i, f"out/{name}") for i in range(store.num_shards)]
                have = (np.concatenate(parts) if parts else np.zeros(0)).astype(dtype)
                if cache is not None:
                    cache[key] = have
            out[name] = have
        else:
            out[name] = np.zeros(m, dtype=dtype)
    return out


def union_ids(parts):
    """The sorted unique ids of int arrays ``parts`` (int64). Parts that are already sorted and
    in order (a plan's units in shard order) cost one pass; otherwise a sort, never numpy's
    hashing ``unique``, which costs an order of magnitude more on millions of ids."""
    if not len(parts):
        return np.zeros(0, dtype=np.int64)
    ids = np.concatenate(parts).astype(np.int64, copy=False) if len(parts) > 1 else \
        np.asarray(parts[0], dtype=np.int64)
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids
    ids = np.sort(ids)
    keep = np.empty(len(ids), dtype=bool)
    keep[0] = True
    np.not_equal(ids[1:], ids[:-1], out=keep[1:])
    return ids[keep]
