"""The backend-neutral iteration loop: ``grstream.run(program, store, ...)``."""
import json
import time
import warnings
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ..errors import DeviceError, UsageError
from .backend import IterationStats

DEVICES = ("cpu", "cuda", "auto")


@dataclass
class Result:
    """What a run returns: final vertex state, per-iteration statistics and run facts."""

    values: Dict[str, np.ndarray]
    output: str
    iterations: int
    converged: bool
    stats: List[IterationStats] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: mutable edge state (programs with edge_state), each array in the global CSR order
    edge_values: Dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def value(self):
        """The program's output field."""
        return self.values[self.output]

    def totals(self):
        keys = ("active_edges", "shards_processed", "shards_skipped", "bytes_read", "bytes_h2d",
                "bytes_d2h", "time_read", "time_gather", "time_apply", "time_activate", "time_scatter",
                "time_copy", "time_kernel", "copy_hidden")
        return {k: sum(getattr(s, k) for s in self.stats) for k in keys}

    def to_json_dict(self):
        return {"iterations": self.iterations, "converged": self.converged,
                "seconds": self.seconds, "info": self.info, "totals": self.totals(),
                "per_iteration": [s.to_dict() for s in self.stats]}

    def to_json(self, **kwargs):
        return json.dumps(_plain(self.to_json_dict()), **kwargs)


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)
    return obj


def resolve_device(device):
    """Map "cpu" / "cuda" / "auto" to a backend class; "cuda" without a GPU is a DeviceError."""
    if device not in DEVICES:
        raise UsageError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if device == "cpu":
        from ..backends.cpu import CpuBackend
        return CpuBackend
    try:
        from ..backends import cuda
    except ImportError as exc:  # the GPU path is not built into this installation
        if device == "auto":
            from ..backends.cpu import CpuBackend
            return CpuBackend
        raise DeviceError(f"the GPU path is not available: {exc}") from None
    ok, reason = cuda.available()
    if ok:
        return cuda.CudaBackend
    if device == "auto":
        from ..backends.cpu import CpuBackend
        return CpuBackend
    raise DeviceError(f"device 'cuda' is not available: {reason}")


def initial_state(program, store):
    """Run the program's host-side init over every vertex: (state dict, seed mask or None)."""
    from ..backends.cpu.views import VertexView
    spec = type(program).spec
    n = int(store.num_vertices)
    state = {f: np.zeros(n, dtype=dt) for f, dt in spec.vertex_fields.items()}
    builtins = {}
    if "in_degree" in spec.vertex_reads:
        builtins["in_degree"] = store.in_degree()
    if "out_degree" in spec.vertex_reads:
        builtins["out_degree"] = store.out_degree()
    v = VertexView(state, builtins, slice(0, n), n, writable=True)
    seed = program.init(v)
    for f, val in v.assigned().items():
        state[f][:] = val
    if seed is not None:
        seed = np.broadcast_to(np.asarray(seed, dtype=bool), (n,))
    return state, seed


def run(program, store, *, device="cpu", memory_budget=None, max_iter=None, progress=False,
        callback=None, backend_options=None):
    """Run a GAS program over a shard store.

    Parameters
    ----------
    program : GASProgram
        An instance of a GASProgram subclass (parameters already set).
    store : ShardStore or path
        The shard store (``grstream.open``) or its path.
    device : {"cpu", "cuda", "auto"}
        Where to run; "auto" picks the GPU when PyCUDA and a GPU are present.
    memory_budget : int, optional
        Bytes the engine may use for vertex state plus shard data (host memory on the CPU,
        device memory on the GPU). Below vertex state plus the largest shard is a MemoryBudgetError.
    max_iter : int, optional
        Stop after this many iterations. Default: until the frontier empties or converged(),
        at most 10 n + 10 iterations (a warning says when that limit stopped the run); a
        program with ``activate = "all"`` and no ``converged()`` never stops by itself and
        needs it (UsageError otherwise).
    progress : bool
        Show a tqdm bar of iterations and frontier size on stderr.
    callback : callable, optional
        Called with each IterationStats.
    backend_options : dict, optional
        Extra keyword arguments for the backend (CPU: ``threads``; CUDA: ``load_balance``,
        ``streams``, ``slots``, ...).

    Returns
    -------
    Result

    Examples
    --------
    >>> import grstream as gr                                          # doctest: +SKIP
    >>> r = gr.run(gr.algorithms.pagerank.PageRank(), gr.open("shards/g.h5"))  # doctest: +SKIP
    >>> r.value[:3]                                                     # doctest: +SKIP
    """
    from ..program import GASProgram
    if not isinstance(program, GASProgram):
        raise UsageError("run() needs an instance of a GASProgram subclass")
    if isinstance(store, (str, bytes)) or hasattr(store, "__fspath__"):
        from ..store import open as open_store
        store = open_store(store)
    if max_iter is not None and max_iter < 0:
        raise UsageError(f"max_iter must be >= 0, not {max_iter}")
    t_start = time.perf_counter()
    backend_cls = resolve_device(device)
    program.num_vertices = int(store.num_vertices)
    program.num_edges = int(store.num_edges)
    program.iteration = 0
    stats = []
    converged = False
    limit = max_iter if max_iter is not None else max(1, 10 * int(store.num_vertices) + 10)
    bar = None
    # the backend checks the budget first, so a budget error comes before any work
    with backend_cls(store, program, memory_budget=memory_budget, progress=progress,
                     **(backend_options or {})) as backend:
        if max_iter is None and not type(program).spec.stops_itself:
            raise UsageError(f"{type(program).__name__} has activate = 'all' and no converged(), "
                             f"so it never stops by itself: define converged(self) or pass max_iter")
        state, seed = initial_state(program, store)
        active = backend.start(state, seed)
        _set_aggregates(program, backend.aggregates())
        if progress:
            from tqdm import tqdm
            # the default limit is a safety net, not an estimate: show it without an ETA
            desc = type(program).__name__ + ("" if max_iter is not None else f" (limit {limit})")
            bar = tqdm(total=max_iter, desc=desc, unit="iter", leave=False)
        try:
            it = 0
            while active > 0 and it < limit:
                if it > 0 and program.converged():
                    converged = True
                    break
                it += 1
                st = backend.iterate(it)
                stats.append(st)
                _set_aggregates(program, st.aggregates or backend.aggregates())
                active = st.next_active_vertices
                if callback is not None:
                    callback(st)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(active=st.active_vertices, changed=st.changed_vertices)
            else:
                converged = active == 0 or (it > 0 and program.converged())
        finally:
            if bar is not None:
                bar.close()
        if not converged and max_iter is None:
            warnings.warn(f"{type(program).__name__} stopped at the default limit of 10 n + 10 = "
                          f"{limit} iterations with {active} vertices still active; pass max_iter "
                          f"or define converged()", RuntimeWarning, stacklevel=2)
        values = backend.state()
        edge_values = backend.edge_state()
        info = backend.info()
    info.update({"program": type(program).__name__, "params": program.param_values,
                 "num_vertices": int(store.num_vertices), "num_edges": int(store.num_edges),
                 "num_shards": int(store.num_shards), "device": info.get("backend"),
                 "max_iter": limit})
    return Result(values=values, output=type(program).spec.output, iterations=len(stats),
                  converged=bool(converged), stats=stats, info=info,
                  seconds=time.perf_counter() - t_start, edge_values=edge_values)


def _set_aggregates(program, aggs):
    for k, v in aggs.items():
        setattr(program, k, v)
