"""``grstream generate``: write a synthetic graph (R-MAT, uniform random, 2-D grid) to a file."""
import json
import sys
import time

from ..errors import UsageError


def add_parser(sub):
    parser = sub.add_parser(
        "generate", help="write a synthetic graph (rmat, uniform, grid)",
        description="Write a synthetic graph; the output format follows FILE's extension "
                    "(.npy, .el/.txt/.tsv text, .gz compressed text), and its vertex count to "
                    "FILE.json, which grstream shard reads (isolated vertices are kept). Same "
                    "seed, same graph.")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True
    rmat = kinds.add_parser("rmat", help="Graph500 Kronecker graph (a=.57 b=.19 c=.19 d=.05)")
    rmat.add_argument("--scale", type=int, required=True, help="2^SCALE vertices")
    rmat.add_argument("--edge-factor", type=int, default=16, help="edges per vertex (default 16)")
    uniform = kinds.add_parser("uniform", help="uniform random G(n, m) edges")
    uniform.add_argument("--vertices", type=int, required=True)
    uniform.add_argument("--edges", type=int, required=True)
    grid = kinds.add_parser("grid", help="2-D grid, 4-neighbour edges both ways (road-like)")
    grid.add_argument("--rows", type=int, required=True)
    grid.add_argument("--cols", type=int, required=True)
    for kind in (rmat, uniform, grid):
        kind.add_argument("-o", "--output", required=True, metavar="FILE",
                          help="output file (.npy, .el, .txt, .tsv, .gz)")
        kind.add_argument("--seed", type=int, default=0,
                          help="random seed, an integer >= 0 (default 0): same seed, same graph")
        kind.add_argument("--weights", action="store_true",
                          help="add uniform random integer weights 1..255 (float64)")
        kind.add_argument("--threads", type=int, default=None,
                          help="generator threads, at least 1 (default: CPU count, at most 8; does "
                               "not change the graph)")
        kind.add_argument("--quiet", action="store_true", help="no progress bar")
        kind.set_defaults(func=main)
    return parser


def _plan(args):
    """(chunks, num_vertices, num_edges) for the requested graph."""
    from ..io import generate as gen
    common = {"weights": args.weights, "threads": args.threads}
    if args.kind == "rmat":
        chunks = gen.rmat_chunks(args.scale, args.edge_factor, args.seed, **common)
        return chunks, 1 << args.scale, args.edge_factor << args.scale
    if args.kind == "uniform":
        chunks = gen.uniform_chunks(args.vertices, args.edges, args.seed, **common)
        return chunks, args.vertices, args.edges
    chunks = gen.grid_chunks(args.rows, args.cols, seed=args.seed, **common)
    return chunks, args.rows * args.cols, gen.grid_edge_count(args.rows, args.cols)


def main(args):
    from ..io.atomic import atomic_file, check_output
    from ..io.sidefile import side_path, side_record
    from ..io.write import output_kind, write_edges
    from tqdm import tqdm
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    output_kind(args.output)  # reject an unknown extension or an unwritable folder before any work
    check_output(args.output, what="-o")
    side = side_path(args.output)
    check_output(side, what="the side file")
    chunks, num_vertices, num_edges = _plan(args)
    start = time.perf_counter()
    with tqdm(total=num_edges, unit=" edges", unit_scale=True, file=sys.stderr,
              disable=args.quiet, desc=f"generate {args.kind}") as bar:
        written = write_edges(args.output, chunks, weighted=args.weights, total_edges=num_edges,
                              progress=bar.update)
    # the edges do not tell how many vertices there are (isolated ones have none): keep it
    generator = {k: v for k, v in vars(args).items()
                 if k in ("kind", "scale", "edge_factor", "vertices", "edges", "rows", "cols",
                          "seed", "weights")}
    with atomic_file(side, text=True) as f:
        json.dump(side_record(args.output, num_vertices, written, generator), f, indent=1)
    seconds = time.perf_counter() - start
    print(f"{args.kind}: {num_vertices} vertices, {written} edges"
          f"{' (weighted)' if args.weights else ''} -> {args.output} (vertex count in {side}) "
          f"in {seconds:.1f} s", file=sys.stderr)
    return 0
