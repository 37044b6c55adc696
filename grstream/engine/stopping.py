"""When a run stops: the default iteration limit, programs that never stop by themselves, the
progress bar over iterations and the warning when the safety net is hit."""
import warnings

from ..errors import UsageError


def default_limit(n, max_iter):
    """``max_iter``, or the safety net of 10 n + 10 iterations."""
    return max_iter if max_iter is not None else max(1, 10 * int(n) + 10)


def check_stops(program, max_iter):
    if max_iter is None and not type(program).spec.stops_itself:
        raise UsageError(f"{type(program).__name__} has activate = 'all' and no converged(), "
                         f"so it never stops by itself: define converged(self) or pass max_iter")


def progress_bar(program, max_iter, limit):
    from tqdm import tqdm
    # the default limit is a safety net, not an estimate: show it without an ETA
    desc = type(program).__name__ + ("" if max_iter is not None else f" (limit {limit})")
    return tqdm(total=max_iter, desc=desc, unit="iter", leave=False)


def warn_limit(program, limit, active):
    warnings.warn(f"{type(program).__name__} stopped at the default limit of 10 n + 10 = "
                  f"{limit} iterations with {active} vertices still active; pass max_iter "
                  f"or define converged()", RuntimeWarning, stacklevel=4)
