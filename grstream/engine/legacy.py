"""The loop for backends that still own a whole ``iterate()`` (engine/backend.py's Backend).

Transitional: the CUDA backend runs here until it becomes an executor of the engine's plans
(grstream/engine/executor.py); then this module goes.
"""
import time

from .result import Result
from .session import _check_stops, default_limit, progress_bar, warn_limit
from .state import initial_state


def run_backend(session, program, max_iter, progress, callback):
    store = session.store
    t_start = time.perf_counter()
    program.num_vertices = int(store.num_vertices)
    program.num_edges = int(store.num_edges)
    program.iteration = 0
    options = dict(session.options)
    if session.pinned_budget is not None:
        options.setdefault("host_cache", session.pinned_budget)
    stats, converged, bar = [], False, None
    limit = default_limit(store.num_vertices, max_iter)
    # the backend checks the budget first, so a budget error comes before any work
    with session.cls(store, program, memory_budget=session.memory_budget, progress=progress,
                     **options) as backend:
        _check_stops(program, max_iter)
        state, seed = initial_state(program, store)
        active = backend.start(state, seed)
        _set(program, backend.aggregates())
        if progress:
            bar = progress_bar(program, max_iter, limit)
        try:
            it = 0
            while active > 0 and it < limit:
                if it > 0 and program.converged():
                    converged = True
                    break
                it += 1
                st = backend.iterate(it)
                stats.append(st)
                _set(program, st.aggregates or backend.aggregates())
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
            warn_limit(program, limit, active)
        values, edge_values, info = backend.state(), backend.edge_state(), backend.info()
        info["max_iter"] = limit
    return Result.of(program, store, values, edge_values, stats, converged, info,
                     time.perf_counter() - t_start)


def _set(program, aggs):
    for k, v in aggs.items():
        setattr(program, k, v)
