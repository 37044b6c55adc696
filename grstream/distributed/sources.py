"""Many sources spread over ranks: algorithms that sum independent single-source runs
(betweenness) give each rank its share of the sources, every ``size``-th one from its rank, to
run alone over the whole store on its own device (no exchange per level), and add the ranks'
sums at the end with one all-reduce."""
import numpy as np

from .ranks import collectively


def spread(comm, store, sources, run_options, work):
    """``work(mine, options)`` -> ``(sums, results)`` over this rank's share ``mine`` of
    ``sources``, with ``options`` the run options of one process: no ``comm``, the rank's GPU
    chosen for device "cuda", the CPU for "auto" (as ranks run). Returns every rank's sums added
    (on every rank) and this rank's results; None where the sources do not spread: one process,
    or a part file (its rank holds only its own shards' edges). Collective: an error on any rank
    raises on every rank."""
    from .part_files import part_of
    if comm is None or comm.Get_size() <= 1 or part_of(store) is not None:
        return None
    from mpi4py import MPI
    options = {k: v for k, v in run_options.items() if k != "comm"}
    if options.get("device") == "auto":
        options["device"] = "cpu"
    elif options.get("device") == "cuda":
        from .gpu_rank import rank_gpu
        rank_gpu(comm)
    with collectively(comm):
        sums, results = work(np.asarray(sources)[comm.Get_rank()::comm.Get_size()], options)
    comm.Allreduce(MPI.IN_PLACE, sums, op=MPI.SUM)
    return sums, results
