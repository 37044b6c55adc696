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
    with Session(store, device=device, memory_budget=memory_budget, pinned_budget=pinned_budget,
                 direction=direction, push_threshold=push_threshold,
                 queue_fraction=queue_fraction, comm=comm, **entry.options(backend_options)) as session:
        return session.run(program, max_iter=max_iter, progress=progress, callback=callback,
                           checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume)
