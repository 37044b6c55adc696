"""``grstream split STORE --parts N``: one part file per rank, for disks local to each node.

Part ``r`` holds the shards rank ``r`` of ``N`` owns (grstream/distributed/part_files.py) and opens as
the whole store; ranks open theirs through a path holding ``{rank}``. Under ``mpiexec`` each
rank writes the parts ``r, r + size, ...``: with ``-n N`` every rank its own, e.g. onto its
node's disk.
"""
import os
import sys
import time

from ..errors import UsageError


def add_parser(sub):
    p = sub.add_parser("split", help="write one part file per rank of a shard store",
                       description="Write each rank's shards of a store as a file of its own (a "
                                   "part opens as the whole store, with only its rank's shards' "
                                   "edges), for ranks that read node-local disks: run with a "
                                   "path holding {rank}, e.g. mpiexec -n N grstream run "
                                   "pagerank /local/g.part{rank}.h5.")
    p.add_argument("store", help="shard store (.h5) to split")
    p.add_argument("--parts", type=int, required=True, metavar="N",
                   help="number of parts: the number of ranks that will open them")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="path of the parts, holding {rank} (default: STORE's name with "
                        ".part{rank} before .h5)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.set_defaults(func=main)
    return p


def default_output(store):
    """``g.h5`` -> ``g.part{rank}.h5`` beside it."""
    root, ext = os.path.splitext(os.fspath(store))
    return f"{root}.part{{rank}}{ext or '.h5'}"


def main(args):
    from ..distributed import world_from_environment
    from ..distributed.part_files import RANK, part_path, write_part
    from ..distributed.ranks import collectively
    from ..io.atomic import check_output
    from ..store import open as open_store
    if args.parts < 1:
        raise UsageError(f"--parts must be at least 1, got {args.parts}")
    output = args.output or default_output(args.store)
    if RANK not in output:
        raise UsageError(f"-o {output}: the path of the parts must hold {RANK} (each part's number)")
    world = world_from_environment()
    rank, size = (0, 1) if world is None else (world.Get_rank(), world.Get_size())
    mine = range(rank, args.parts, size)   # under mpiexec: every rank its own parts
    with collectively(world):   # (a part one rank cannot write: every rank stops)
        for index in mine:
            check_output(part_path(output, index), inputs=[args.store], what="-o")
    t0 = time.perf_counter()
    if world is not None:   # (ranks on several hosts may share the parts' folder)
        from ..distributed.rank_output import tidy_first
        tidy_first(world, [part_path(output, index) for index in mine])
    with open_store(args.store) as store:
        for index in mine:
            path = part_path(output, index)
            first, end = write_part(store, index, args.parts, path, tidy=world is None)
            if not args.quiet:
                print(f"{path}: part {index} of {args.parts}, shards {first}..{end - 1} of "
                      f"{store.num_shards} ({os.path.getsize(path) / 2**20:.1f} MiB)", file=sys.stderr)
    if world is not None:
        world.Barrier()   # every part written when any rank returns
    if not args.quiet and rank == 0:
        print(f"grstream split: {args.parts} parts of {args.store} in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
    return 0
