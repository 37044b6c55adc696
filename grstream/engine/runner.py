"""``grstream.run(program, store, ...)``: one run, a Session used once."""
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Union

if TYPE_CHECKING:  # names for the annotations only
    from ..program import GASProgram
    from ..store import ShardStore
    from .backend import IterationStats

from . import entry
from .checkpoint import Checkpoints
from .result import Result, jsonable  # noqa: F401  (re-exported)
from .session import Session
from .state import initial_state  # noqa: F401  (re-exported)


def run(program: "GASProgram", store: Union["ShardStore", str, "os.PathLike[str]"], *,
        device: str = "cpu", memory_budget: Optional[int] = None,
        pinned_budget: Optional[int] = None, max_iter: Optional[int] = None,
        progress: bool = False, callback: Optional[Callable[["IterationStats"], Any]] = None,
        backend_options: Optional[Dict[str, Any]] = None, direction: str = "auto",
        push_threshold: Optional[float] = None, queue_fraction: Optional[float] = None,
        comm: Any = None, checkpoint: Optional[Union[str, "os.PathLike[str]"]] = None,
        checkpoint_every: Optional[float] = None,
        resume: Optional[Union[str, "os.PathLike[str]"]] = None) -> "Result":
    """Run a GAS program over a shard store.

    Parameters
    ----------
    program : GASProgram
        An instance of a GASProgram subclass (parameters already set).
    store : ShardStore or path
        The shard store (``grstream.open``) or its path.
    device : {"cpu", "cuda", "auto"}
        Where to run; "auto" picks the GPU when PyCUDA and a GPU are present.
    memory_budget : int or str, optional
        Bytes the engine may use for vertex state, scratch and shard data (host memory on the CPU,
        device memory on the GPU): an int, or a size as the command line writes it (``"512M"``,
        binary units); a bool, a fraction of a byte, NaN or a negative size is a UsageError.
        Below the minimum (vertex state plus scratch plus the largest shard) is a
        MemoryBudgetError stating it.
    pinned_budget : int or str, optional
        Pinned host bytes for the GPU's staging buffers and streamed-shard cache (default:
        min(memory budget, 8 GiB)).
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
        Executor options (CPU: ``threads``; CUDA: ``load_balance``, ``streams``, ``slots``, ...),
        and ``local_rounds`` (int, default 0): asynchronous rounds over a loaded unit for
        programs declaring ``asynchronous = True`` (docs/PROGRAMS.md).
    direction, push_threshold, queue_fraction
        Push or pull per iteration: ``"auto"`` (default), ``"push"``, ``"pull"``, and the
        fractions of the rule (grstream/engine/direction.py; docs/PROGRAMS.md).

    comm : mpi4py communicator, optional
        Run as one rank of ``comm`` (``MPI.COMM_WORLD`` under ``mpiexec``): see
        docs/DISTRIBUTED.md. Every rank's Result holds the whole graph's values.
    checkpoint : path, optional
        A folder (created if missing) where the run writes its checkpoint every
        ``checkpoint_every`` seconds (default 600) at the end of an iteration, and, in the main
        thread, when SIGTERM arrives: then the run stops with :class:`~grstream.errors.Checkpointed`
        (docs/DISTRIBUTED.md "Checkpoints").
    checkpoint_every : float, optional
        Seconds between checkpoints (0: after every iteration).
    resume : path, optional
        A checkpoint folder to continue from: the Result equals the uninterrupted run's. A
        checkpoint of another store, program, parameters, ``max_iter``, device or world size is
        refused (:class:`~grstream.errors.CheckpointError`), a damaged or half-written one too
        (:class:`~grstream.errors.DamagedCheckpointError`).

    Returns
    -------
    Result

    Raises
    ------
    UsageError
        An argument of the wrong type or out of range (naming it), a closed store, a program
        param declared a vertex id (``vertex_params``, e.g. BFS's ``source``) outside 0..n-1.

    Examples
    --------
    >>> import grstream as gr                                          # doctest: +SKIP
    >>> r = gr.run(gr.algorithms.pagerank.PageRank(), gr.open("shards/g.h5"))  # doctest: +SKIP
    >>> r.value[:3]                                                     # doctest: +SKIP
    """
    # the arguments are checked before the store is opened (Session checks its own), on
    # every rank: where one rank refuses them, every rank raises
    with entry.collectively(comm):
        program, max_iter = entry.program(program), entry.count("max_iter", max_iter)
        progress, callback = entry.flag("progress", progress), entry.callback(callback)
        Checkpoints.of(checkpoint, checkpoint_every, resume)
    args = dict(device=device, memory_budget=memory_budget, pinned_budget=pinned_budget,
                direction=direction, push_threshold=push_threshold, queue_fraction=queue_fraction,
                comm=comm, **entry.options(backend_options))
    cls = type(program)
    session = _reuse(store, args, cls) or Session(store, **args)
    try:
        result = session.run(program, max_iter=max_iter, progress=progress, callback=callback,
                             checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume)
    except BaseException:
        session.close()
        raise
    if order_free(cls.spec):
        _keep(store, args, session)
    else:
        session.close()
    return result


def order_free(spec):
    """Whether a program's values are the same whichever units its gathers are grouped in (none,
    or an idempotent monoid: min, max, or, and), so that its one-shot runs may reuse a session
    whose shards are loaded already (whose first iteration groups them otherwise than a fresh
    one's, which changes the order of a sum's additions)."""
    return not spec.has_gather or spec.gather_reduce.idempotent


#: grstream.run's entry in ``ShardStore.kept``
KEPT = "run"


class _Kept:
    """A Session kept with a store, and the arguments it was made with."""

    __slots__ = ("args", "session")

    def __init__(self, args, session):
        self.args, self.session = args, session

    def close(self):
        self.session.close()


def _same(a, b):
    try:
        return bool(a == b)
    except Exception:   # (arguments whose == is not one bool: never the same)
        return False


def _reuse(store, args, cls):
    """The Session an earlier run on the open ``store`` kept, where it was made with the same
    ``args`` and ``cls`` is :func:`order_free`, holding only program class ``cls``'s executors;
    else None (a kept session is closed then, so that the run's memory adds to no other's). It
    is taken from the store for the run: a run made meanwhile (another thread, a callback) makes
    its own."""
    kept = getattr(store, "kept", None)
    held = None if kept is None or args["comm"] is not None else kept.pop(KEPT, None)
    if held is None:
        return None
    session = held.session
    if session.closed or not order_free(cls.spec) or not _same(held.args, args):
        session.close()
        return None
    session.keep_only(cls)
    return session


def _keep(store, args, session):
    """Keep ``session`` with the open ``store`` for the next run with the same arguments: its
    executors, plans' facts and resident shards are set up once, and the next one-shot call
    costs what a Session's run does (CPU sessions of one process; the store's close, or a run
    with other arguments, closes it). Else, or where the store keeps one already (another
    thread's, or a callback's run), close it."""
    from ..store import ShardStore
    if (not isinstance(store, ShardStore) or args["comm"] is not None or store.closed
            or session.cls.name != "cpu"):
        session.close()
        return
    held = _Kept(args, session)
    # (one step: a session another thread's run kept meanwhile is never overwritten unclosed)
    if store.kept.setdefault(KEPT, held) is not held:
        session.close()
