"""Shared plumbing of the algorithm modules: mapping user ids to internal ids, running a program.

Every algorithm entry point takes vertex **labels** (the ids as the input wrote them: 1-based
for ``.mtx``/KONECT/DIMACS, original ids of a renumbered store, names) and returns arrays in
**internal order**; ``store.labels()`` / ``store.by_label(values)`` key them (README "Vertex ids").
"""
import numpy as np

from ..errors import UsageError


def _check_not_empty(store, what):
    if int(store.num_vertices) == 0:
        # "out of range (0..-1)" would not say why no vertex can be given
        raise UsageError(f"the graph has no vertices: there is no {what} vertex to start from")


def internal_source(store, source, what="source"):
    """The internal id of the vertex labelled ``source`` (None: ``store.default_source()``, the
    first vertex with an out-edge); UsageError when there is none."""
    _check_not_empty(store, what)
    if source is None:
        return int(store.default_source())
    try:
        return int(store.to_internal(source))
    except UsageError as exc:
        raise UsageError(f"{what} {exc}") from None


#: the name this helper had before labels: algorithms written against it keep working
check_source = internal_source


def internal_sources(store, sources, what="source"):
    """Internal ids (int64 array) of a sequence of vertex labels."""
    if isinstance(sources, (str, bytes)) or np.ndim(sources) != 1:
        raise UsageError(f"{what}s must be a sequence of vertex ids, not {sources!r}")
    try:
        return store.to_internal(list(sources)).astype(np.int64)
    except UsageError as exc:
        raise UsageError(f"{what} {exc}") from None


#: the run options of checkpoints (gr.run's)
CHECKPOINT_OPTIONS = ("checkpoint", "checkpoint_every", "resume")


def journal(store, run_options):
    """The checkpoints of an algorithm that makes several runs (grstream/engine/journal.py),
    taking the checkpoint options out of ``run_options``."""
    from ..engine.journal import Journal
    return Journal(store, run_options)


def one_run(run_options, what):
    """``run_options`` of an algorithm that makes several runs (``what``): refused when they ask
    for checkpoints, which a resume could not match to the run that wrote them."""
    given = [k for k in CHECKPOINT_OPTIONS if run_options.get(k) is not None]
    if given:
        raise UsageError(f"{what} makes several runs, which checkpoints do not cover: "
                         f"{', '.join(given)} is for the algorithms of one run")
    return run_options


def helper_options(run_options):
    """``run_options`` for a short preliminary run an algorithm makes before its own (its
    checkpoints are the algorithm's run's, not the helper's)."""
    return {k: v for k, v in run_options.items() if k not in CHECKPOINT_OPTIONS}


def execute(program, store, run_options, journal=None):
    """Run ``program`` with the engine options the algorithm entry points accept (one run of an
    algorithm of several with its ``journal``, grstream/engine/journal.py)."""
    from ..engine import run
    if journal is None:
        return run(program, store, **run_options)
    return journal.run([program], lambda extra: run(program, store, **run_options, **extra))


def run_in(session, journal, program, run_kwargs, **how):
    """``session.run(program, **run_kwargs)`` as one run of the algorithm's ``journal``
    (``how``: Journal.run's ``whole`` and ``note``)."""
    if how.get("whole"):
        how["callback"] = run_kwargs.get("callback")
    return journal.run([program], lambda extra: session.run(program, **dict(run_kwargs, **extra)),
                       **how)


def open_session(store, run_options):
    """A Session for many runs with the options the algorithm entry points accept, and the
    keyword arguments each ``session.run`` takes: ``(session, run_kwargs)``."""
    from ..engine import Session
    opts = dict(one_run(run_options, "this algorithm"))
    run_kwargs = {k: opts.pop(k) for k in ("max_iter", "progress", "callback") if k in opts}
    backend_options = opts.pop("backend_options", None) or {}
    return Session(store, **opts, **backend_options), run_kwargs
