"""Shared plumbing of the algorithm modules: checking a source vertex and running a program."""
import numpy as np

from ..engine import Session, run
from ..errors import UsageError


def _check_not_empty(store, what):
    if int(store.num_vertices) == 0:
        # "out of range (0..-1)" would not say why no vertex can be given
        raise UsageError(f"the graph has no vertices: there is no {what} vertex to start from")


def check_source(store, source, what="source"):
    n = int(store.num_vertices)
    _check_not_empty(store, what)
    if source is None:
        raise UsageError(f"a {what} vertex is required (--source V)")
    try:
        s = int(source)
    except (TypeError, ValueError):
        raise UsageError(f"{what} vertex must be an integer, not {source!r}") from None
    if s != source:
        raise UsageError(f"{what} vertex must be an integer, not {source!r}")
    if not 0 <= s < n:
        raise UsageError(f"{what} vertex {s} is out of range: the graph has {n} vertices (0..{n - 1})")
    return s


def internal_source(store, source):
    """Map a user-given source id to the store's id (original ids when the store was renumbered)."""
    _check_not_empty(store, "source")
    original = store.original_ids()
    if original is None:
        return check_source(store, source)
    try:
        s = int(source)
    except (TypeError, ValueError):
        raise UsageError(f"source vertex must be an integer, not {source!r}") from None
    pos = int(np.searchsorted(original, s))
    if pos >= len(original) or original[pos] != s:
        raise UsageError(f"source vertex {s} does not occur in the graph (store was renumbered)")
    return pos


def execute(program, store, run_options):
    """Run ``program`` with the engine options the algorithm entry points accept."""
    return run(program, store, **checked(run_options))


def checked(run_options):
    """``run_options`` with ``max_iter`` checked (a count, or None)."""
    if run_options.get("max_iter") is not None:
        from ._params import check_count
        run_options = dict(run_options, max_iter=check_count("max_iter", run_options["max_iter"]))
    return run_options


def open_session(store, run_options):
    """A Session for many runs with the options the algorithm entry points accept, and the
    keyword arguments each ``session.run`` takes: ``(session, run_kwargs)``."""
    opts = dict(checked(run_options))
    run_kwargs = {k: opts.pop(k) for k in ("max_iter", "progress", "callback") if k in opts}
    backend_options = opts.pop("backend_options", None) or {}
    return Session(store, **opts, **backend_options), run_kwargs
