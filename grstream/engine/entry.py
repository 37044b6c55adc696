"""What the public entry points (``gr.run``, ``gr.Session`` and its methods) check before any
work: each argument, refused with a UsageError that names it, and one run at a time per Session.
Byte sizes (budgets) are read by :func:`grstream.units.byte_size`.
"""
import math
import numbers
import threading
from contextlib import contextmanager, nullcontext

import numpy as np

from ..errors import UsageError, plain
from ..units import byte_size  # noqa: F401  (the budgets' check, used as entry.byte_size)


def count(name, value, allow_none=True):
    """``value`` as an int >= 0 (an iteration limit, a number of rounds); None passes when
    ``allow_none``. A float holding a whole number counts; a bool, a string or 2.5 does not."""
    if value is None and allow_none:
        return None
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer())
    if isinstance(value, (bool, np.bool_)) or not integral:
        raise UsageError(f"{name} must be an integer >= 0{' or None' if allow_none else ''}, "
                         f"not {plain(value)}")
    if value < 0:
        raise UsageError(f"{name} must be >= 0, not {plain(value)}")
    return int(value)


def seconds(name, value):
    """``value`` as a finite number of seconds >= 0 (an int or a float; not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value < 0:
        raise UsageError(f"{name} must be a finite number of seconds >= 0, not {plain(value)}")
    return float(value)


def flag(name, value):
    """``value`` as a bool: True or False (or numpy's)."""
    if not isinstance(value, (bool, np.bool_)):
        raise UsageError(f"{name} must be True or False, not {plain(value)}")
    return bool(value)


def callback(value):
    if value is not None and not callable(value):
        raise UsageError(f"callback must be a callable taking IterationStats, or None, not {plain(value)}")
    return value


def options(value):
    """``backend_options``: a dict of str keys (None: {})."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"backend_options must be a dict {{option name: value}}, not {plain(value)}")
    return dict(value)


def program(value, method="run"):
    """``value`` if it is a GASProgram instance."""
    from ..program import GASProgram
    if not isinstance(value, GASProgram):
        what = "a GASProgram class: instantiate it" if isinstance(value, type) and issubclass(
            value, GASProgram) else type(value).__name__
        raise UsageError(f"{method}() needs an instance of a GASProgram subclass, not {what}")
    return value


def programs(values):
    """``run_lanes``'s argument: a non-string iterable of instances of one GASProgram class."""
    from ..program import GASProgram
    if isinstance(values, GASProgram) or isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UsageError(f"run_lanes() needs a list of GASProgram instances (one per lane), not "
                         f"{type(values).__name__}: run() runs one")
    out = [program(p, "run_lanes") for p in values]
    if any(type(p) is not type(out[0]) for p in out):
        raise UsageError("run_lanes() needs instances of one GASProgram class")
    return out


def open_store(store):
    """``(store, owned)``: a ShardStore as given, or the one opened from a path (``owned``: the
    caller closes it)."""
    from ..store import ShardStore
    from ..store import open as open_path
    if isinstance(store, ShardStore):
        return check_open(store), False
    if isinstance(store, (str, bytes)) or hasattr(store, "__fspath__"):
        return open_path(store), True
    raise UsageError(f"store must be a ShardStore (grstream.open) or the path of a store, not "
                     f"{type(store).__name__}")


def check_open(store, session=None):
    """``store``, if neither it nor the ``session`` running on it was closed."""
    if session is not None and session.closed:
        raise UsageError("the Session is closed: open a new one (with gr.Session(...) as s:)")
    if store.closed:
        raise UsageError(f"the store {store.path} is closed: open it again with grstream.open")
    return store


def vertex_params(program, n):
    """Every param the program declares a vertex id (``vertex_params``) is in 0..n-1."""
    spec = type(program).spec
    for name in spec.vertex_params:
        value = getattr(program, name)
        bad = np.asarray(value)
        bad = bad[(bad < 0) | (bad >= n)]
        if bad.size:
            has = f"{n} vertices (internal ids 0..{n - 1})" if n else "no vertices"
            raise UsageError(f"{spec.name}: {name} vertex {bad.flat[0]} is out of range: the graph "
                             f"has {has}")


class OneAtATime:
    """Serialises a Session's runs: a thread that calls ``run`` while another's run is going
    waits for it; a run started from inside a run of the same thread (a callback) is refused,
    since it would overwrite the state of the run that called it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = None

    @contextmanager
    def __call__(self, what):
        me = threading.get_ident()
        if self._owner == me:
            raise UsageError(f"{what} called during a run of the same session (from a callback?): "
                             f"a session runs one program at a time; open another Session")
        with self._lock:
            self._owner = me
            try:
                yield
            finally:
                self._owner = None


def collectively(comm, undo=None):
    """The block raising on every rank of ``comm`` where it raises on one (grstream/distributed/
    ranks.py ``collectively``; None: one process, the block as it is)."""
    if comm is None:
        return nullcontext()
    from ..distributed.ranks import collectively
    return collectively(comm, undo)
