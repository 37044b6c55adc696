"""``grstream shard``: build a shard store from an edge list."""
import argparse

from ..errors import OutputExistsError, UsageError
from ..units import parse_bytes


def add_parser(sub):
    p = sub.add_parser("shard", help="partition an edge list into a shard store",
                       description="Partition a graph into load-balanced CSR/CSC shards in one HDF5 store.")
    p.add_argument("input", help="edge list (.txt/.el/.gz, KONECT out.*, .mtx, .gr, .npy) or a shard store (.h5) "
                        "to re-shard; - (standard input) or a FIFO streams a text input once")
    p.add_argument("-o", "--output", required=True,
                   help="store to write, e.g. shards/NAME.h5; under mpiexec a path holding "
                        "{rank} writes one part file per rank instead, e.g. "
                        "/local/NAME.part{rank}.h5 (docs/DISTRIBUTED.md)")
    p.add_argument("--format", help="input format (default: from the file name)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--shards", type=int, metavar="N", help="number of shards")
    size.add_argument("--shard-size", metavar="BYTES", help="target bytes per shard (default 64M)")
    p.add_argument("--memory-limit", metavar="BYTES",
                   help="build in passes with external buckets, within about this much memory "
                        "(under mpiexec: each rank's)")
    p.add_argument("--tmp-dir", help="directory for bucket files (default: next to the output)")
    p.add_argument("--undirected", action="store_true", help="store every edge in both directions; a symmetric input (.mtx symmetric, "
                        "KONECT sym, an undirected store) is undirected without it")
    weights = p.add_mutually_exclusive_group()
    weights.add_argument("--weighted", dest="weighted", action="store_true", default=None,
                         help="keep edge weights (error if the input has none)")
    weights.add_argument("--no-weights", dest="weighted", action="store_false",
                         help="ignore the input's weights")
    p.add_argument("--drop-self-loops", action="store_true", help="drop edges (v, v)")
    p.add_argument("--drop-duplicates", action="store_true",
                   help="keep one edge per (src, dst), the one with the smallest weight")
    p.add_argument("--renumber", action=argparse.BooleanOptionalAction, default=None,
                   help="map the ids that occur to 0..n-1, keeping the input's ids as labels "
                        "(default: when ids are sparse, max id + 1 > 2 x distinct ids, and the "
                        "input declares no vertex count; README \"Vertex ids\")")
    p.add_argument("--compress", action="store_true",
                   help="store the neighbour ids compressed in blocks of 32 edges (format version "
                        "3, docs/FORMAT.md 'Compressed ids'); off by default")
    p.add_argument("--reorder", choices=("none", "auto", "degree", "rcm"), default="none",
                   help="give the vertices internal ids in this order (decreasing degree, or "
                        "reverse Cuthill-McKee; auto: degree when the input's ids show no "
                        "locality) "
                        "so a row's neighbour ids lie closer together; results keep the "
                        "input's ids (default none)")
    p.add_argument("--edge-ids", action="store_true",
                   help="also store each in-edge's global CSR position (in/eid), for programs "
                        "whose scatter writes edge state that gather reads")
    p.add_argument("--weight-dtype", default="float64", help="stored weight dtype (default float64); a weight it cannot hold "
                        "(stored as inf or as 0) is refused")
    p.add_argument("--no-overwrite", action="store_true", help="fail if the output exists, also when another writer creates it during "
                        "the build")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads that read, sort and write, and processes that parse a text "
                        "input (default: the cores available to the process); the store is the "
                        "same for every count")
    p.add_argument("--quiet", action="store_true", help="no progress bars or summary")
    p.set_defaults(func=main)
    return p


def main(args):
    from ..distributed import world_from_environment
    from ..distributed.part_files import part_path
    from ..engine.entry import collectively
    from ..io.atomic import check_folder, check_output
    from ..partition import build_shards
    # under an MPI launcher with several ranks each process is one rank that builds its own
    # intervals, rank 0 writes the store and the summary (docs/DISTRIBUTED.md)
    world = world_from_environment()
    with collectively(world):
        if args.shards is not None and args.shards < 1:
            raise UsageError(f"--shards must be at least 1, got {args.shards}")
        if args.threads is not None and args.threads < 1:
            raise UsageError(f"--threads must be at least 1, got {args.threads}")
        # (part files: this rank's)
        check_output(part_path(args.output, 0 if world is None else world.Get_rank()),
                     inputs=[args.input], what="-o")
        if args.tmp_dir is not None:
            check_folder(args.tmp_dir, f"--tmp-dir {args.tmp_dir}")
    try:
        build_shards(
            args.input, args.output, format=args.format, num_shards=args.shards,
            shard_size=None if args.shard_size is None else parse_bytes(args.shard_size),
            memory_limit=None if args.memory_limit is None else parse_bytes(args.memory_limit),
            undirected=args.undirected, weighted=args.weighted,
            self_loops=not args.drop_self_loops, duplicates=not args.drop_duplicates,
            renumber=args.renumber, weight_dtype=args.weight_dtype, progress=not args.quiet,
            overwrite=not args.no_overwrite, tmp_dir=args.tmp_dir, edge_ids=args.edge_ids,
            threads=args.threads, reorder=args.reorder, comm=world,
            compress=args.compress)
    except OutputExistsError:  # the API's message names its keyword: say it in the CLI's words
        raise UsageError(f"-o {args.output} exists and --no-overwrite is given: nothing was "
                         "written (leave out --no-overwrite to replace it)") from None
    return 0
