"""``grstream run ALGO [STORE]``: run a registered algorithm over a shard store.

Nothing here is specific to one algorithm: the algorithm options, their help, checks and
defaults, the summary line and how values are written all come from the algorithms'
declarations (grstream/algorithms/params.py), read when ``run`` is parsed.
"""
import csv
import json
import os
import sys
import time

from ..errors import UsageError
from ..units import format_bytes, parse_bytes

#: what ``-o`` writes: per-vertex values as .npy, or a labelled text table
OUTPUT_SUFFIXES = (".npy", ".tsv", ".csv")


def add_parser(sub):
    from ..algorithms import ALGORITHMS
    names = ", ".join(ALGORITHMS)
    p = sub.add_parser("run", help=f"run an algorithm ({names}) over a shard store",
                       description="Run a built-in algorithm over a shard store. Without STORE, runs on "
                                   "the embedded default graph (built under shards/ on first use). "
                                   "Options may come before or after ALGO and STORE.")
    p.add_argument("algorithm", metavar="ALGO", help="one of: " + names)
    p.add_argument("store", metavar="STORE", nargs="?", help="shard store (.h5); default: embedded graph")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                   help="where to run (default cpu; auto picks the GPU when present)")
    p.add_argument("--memory-budget", default=None, metavar="BYTES",
                   help="bytes for vertex state plus shard data (e.g. 512M); default: everything")
    p.add_argument("--pinned-budget", default=None, metavar="BYTES",
                   help="GPU: pinned host bytes for staging and caching streamed shards "
                        "(default: what the streamed shards need, at most the host's available memory less a "
                        "reserve); refused on the CPU")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write per-vertex values: .npy, or .tsv/.csv with an id column "
                        "(README \"Vertex ids\")")
    p.add_argument("--direction", choices=("auto", "push", "pull"), default="auto",
                   help="push or pull per iteration: auto (default: push while the changed "
                        "vertices' edges are at most --push-threshold of all edges), push "
                        "(whenever the program allows it), pull")
    push = p.add_argument("--push-threshold", default=None, metavar="F",
                          help="fraction of the edges up to which auto pushes (default: the "
                               "executor's)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="write the run's checkpoint into folder DIR every --checkpoint-every "
                        "seconds and on SIGTERM, then exit with status 144 (docs/DISTRIBUTED.md)")
    p.add_argument("--checkpoint-every", metavar="SECONDS", default=None,
                   help="seconds between checkpoints, 0: after every iteration (default: 600)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the run whose checkpoint folder DIR holds: the same store, "
                        "algorithm, options, device and number of ranks (else refused)")
    p.add_argument("--stats-json", metavar="FILE", help="write run statistics as JSON ('-' = stdout)")
    p.add_argument("--plot", metavar="FILE.png", help="plot frontier size and bytes moved per iteration")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=main)
    # p is a cli.CommandParser: the algorithms load when run is parsed, the executors' facts
    # when its help is printed
    p.later(add_algorithm_options)
    p.for_help(lambda parser: setattr(push, "help", push_threshold_help()))
    return p


#: the modules where each executor declares its push threshold (the value it gives
#: Capabilities), the first that has one counts
EXECUTORS = (("CPU", ("grstream.backends.cpu.facts",)),
             ("GPU", ("grstream.backends.cuda.facts", "grstream.backends.cuda.executor")))


def push_threshold_help():
    """--push-threshold's help with the thresholds the executors declare, read from them (an
    executor declaring none gets the direction rule's own)."""
    import importlib
    from ..engine.direction import PUSH_THRESHOLD
    found = []
    for device, modules in EXECUTORS:
        for module in modules:
            try:
                own = importlib.import_module(module).PUSH_THRESHOLD
            except (ImportError, AttributeError):  # not here, or no GPU path installed
                continue
            found.append(f"{float(PUSH_THRESHOLD if own is None else own)!r} on the {device}")
            break
    return ("fraction of the edges up to which auto pushes (default: the executor's, "
            f"{', '.join(found)})").replace("%", "%%")


def add_algorithm_options(parser):
    """One option per flag the registered algorithms declare; its help says which take it."""
    from ..algorithms import ALGORITHMS, declaration
    takers = {}
    for name in ALGORITHMS:
        algo = declaration(name)
        for param in algo.cli_params():
            takers.setdefault(param.flag, []).append((name, param, algo.help(param, _label)))
    group = parser.add_argument_group(
        "algorithm options", "Each algorithm takes the options that name it and refuses the others.")
    for flag, users in takers.items():
        group.add_argument(flag, dest=flag_dest(flag), default=None, metavar=users[0][1].metavar,
                           help=option_help(users).replace("%", "%%"))


def option_help(users):
    """``ALGOS: help (default: X)`` per distinct text among ``users`` ((name, param, text))."""
    parts = {}
    for name, _, text in users:
        parts.setdefault(text, []).append(name)
    return "; ".join(f"{', '.join(names)}: {text}" for text, names in parts.items())


def _label(param):
    """How the command line names a parameter: its flag."""
    return param.flag or param.name


def flag_dest(flag):
    """The argparse dest of an algorithm option (apart from the command's own options)."""
    return "param" + flag


def algorithm_options(algo, args):
    """The values of the algorithm options given, checked (names -> values); options ``algo``
    does not take are refused, never ignored."""
    given = {key[len("param"):]: text for key, text in vars(args).items()
             if key.startswith("param--") and text is not None}
    takes = {p.flag: p for p in algo.cli_params()}
    refused = [flag for flag in given if flag not in takes]
    if refused:
        raise UsageError(f"{algo.name} does not take {', '.join(refused)} "
                         f"(its options: {', '.join(takes) or 'none'})")
    return {takes[flag].name: takes[flag].check(flag, takes[flag].kind.parse(flag, text))
            for flag, text in given.items()}


def main(args):
    from .. import store as store_mod
    from ..engine.entry import collectively
    # under an MPI launcher with several ranks each process is one rank (docs/DISTRIBUTED.md):
    # rank 0 alone shows progress and writes the outputs and the summary
    from ..distributed import Ranks, world_from_environment
    world = world_from_environment()
    lead = world is None or world.Get_rank() == 0
    with collectively(world):   # what one rank refuses before the run, every rank raises
        algo, given = _checked(args, lead)
        path = args.store
        if path is None and lead:   # rank 0 builds the default store before the others open it
            from ..defaults import default_store
            path = default_store(progress=not args.quiet)
    if path is None:
        from ..defaults import default_store
        path = default_store(progress=False)
    _import_engine(args.device)
    t0, c0 = time.perf_counter(), time.process_time()
    # ranks open theirs alike (a path holding {rank}: each rank's part file, docs/DISTRIBUTED.md)
    with (store_mod.open(path) if world is None else Ranks.open(path, world, store_mod.open)) as store:
        run_options = {"device": args.device, "memory_budget": args.memory_budget,
                       "progress": not args.quiet and lead, "direction": args.direction}
        if world is not None:
            run_options["comm"] = world
        if args.push_threshold is not None:
            run_options["push_threshold"] = args.push_threshold
        if args.pinned_budget is not None:
            run_options["pinned_budget"] = args.pinned_budget
        for name in ("checkpoint", "checkpoint_every", "resume"):
            if getattr(args, name) is not None:
                run_options[name] = getattr(args, name)
        with collectively(world):
            algo.check(store, given, label=_label)
        values, results = algo.entry(store, **given, **run_options)
        results = results if isinstance(results, list) else [results]
        seconds = time.perf_counter() - t0
        cpu_seconds = time.process_time() - c0   # (every thread of this process)
        if not lead:
            return 0
        if args.output:
            write_values(args.output, store, algo, values)
        if args.stats_json:
            from ..engine.result import jsonable
            from ..io.write import save_text
            doc = {"algorithm": algo.name, "store": str(path), "seconds": seconds,
                   "cpu_seconds": cpu_seconds, "ranks": 1 if world is None else world.Get_size(),
                   "throughput": throughput(results, seconds),
                   "runs": [r.to_json_dict() for r in results]}
            text = json.dumps(jsonable(doc), indent=2)
            if args.stats_json == "-":
                print(text)
            else:
                save_text(args.stats_json, text + "\n")
        if args.plot:
            from ..engine.plot import plot_stats
            plot_stats(merged_stats(results), args.plot,
                       title=f"{algo.name} on {os.path.basename(str(path))}")
        print(summary(algo, store, values, results, seconds), file=sys.stderr)
    return 0


def _import_engine(device):
    """Import the engine modules the run executes before its seconds start: loading them is
    the command's start-up, not the run (``import grstream.cli`` and ``--help`` load none).
    The CPU executor alone: naming "cuda" or "auto" looks for a GPU, which is the run's."""
    from ..engine import lanes, session  # noqa: F401
    if device == "cpu":
        from ..devices import resolve
        resolve(device)


def _checked(args, lead):
    """The algorithm and its options from the arguments, checked with the outputs (on rank 0,
    the one that writes them)."""
    from ..algorithms import declaration
    algo = declaration(args.algorithm)
    for path, suffixes in ((args.output, OUTPUT_SUFFIXES), (args.plot, (".png",))):
        if path is not None and not path.endswith(suffixes):
            raise UsageError(f"{path}: expected a {' or '.join(suffixes)} file name")
    given = algorithm_options(algo, args)
    if args.push_threshold is not None:
        from ..algorithms.params import Fraction
        args.push_threshold = Fraction().check(
            "--push-threshold", Fraction().parse("--push-threshold", args.push_threshold))
    if args.checkpoint_every is not None:
        from ..algorithms.params import Real
        every = Real(0.0, rule="a number of seconds >= 0")
        args.checkpoint_every = every.check("--checkpoint-every",
                                            every.parse("--checkpoint-every", args.checkpoint_every))
    if args.memory_budget is not None:
        args.memory_budget = parse_bytes(args.memory_budget)
    if args.pinned_budget is not None:
        args.pinned_budget = parse_bytes(args.pinned_budget)
    if lead:   # (rank 0 alone writes them)
        _check_outputs(args)
    return algo, given


def _check_outputs(args):
    """Refuse outputs that would replace the store or each other, or cannot be written, before
    the run."""
    from ..defaults import DEFAULT_NAME, shards_dir
    from ..io.atomic import check_distinct, check_output
    store = args.store if args.store is not None else shards_dir() / DEFAULT_NAME
    outputs = {"-o": args.output, "--plot": args.plot,
               "--stats-json": None if args.stats_json == "-" else args.stats_json}
    check_distinct(outputs)
    for what, path in outputs.items():
        if path is not None:
            check_output(path, inputs=[store], what=what, stdout=what == "--stats-json")


def merged_stats(results):
    """One per-iteration list over all the runs an algorithm made (bc runs two per source)."""
    out, k = [], 0
    for r in results:
        for s in r.stats:
            k += 1
            s2 = type(s)(**s.to_dict())
            s2.iteration = k
            out.append(s2)
    return out


def run_totals(results):
    """The totals of every run an algorithm made summed (Result.totals; bc runs two per
    source), the shard bytes by memory tier too."""
    from ..engine.result import TOTALS
    out, tiers = dict.fromkeys(TOTALS, 0), {}
    for r in results:
        totals = r.totals()
        for tier, nbytes in totals.pop("tier_bytes").items():
            tiers[tier] = tiers.get(tier, 0) + nbytes
        for k, v in totals.items():
            out[k] += v
    out["tier_bytes"] = tiers
    return out


def throughput(results, seconds, totals=None):
    """Bytes moved per second: from the store over the run's wall time, and to the GPU over
    the run's wall time and over the copy engine's busy time (the link's rate while copying).
    ``totals``: run_totals(results) where the caller has it."""
    totals = run_totals(results) if totals is None else totals
    read, h2d, copying = totals["bytes_read"], totals["bytes_h2d"], totals["time_copy"]
    rate = (lambda count, span: count / span / 1e9 if span > 0 else None)
    return {"store_gb_per_s": rate(read, seconds), "h2d_gb_per_s": rate(h2d, seconds),
            "link_gb_per_s": rate(h2d, copying) if h2d else None}


def summary(algo, store, values, results, seconds):
    iters = sum(r.iterations for r in results)
    totals = run_totals(results)
    ranks, ranks_read = _ranks_summary(results)
    # ranks: every rank's reads
    read = totals["bytes_read"] if ranks_read is None else ranks_read
    h2d = totals["bytes_h2d"]
    device = results[0].info.get("backend", "?") if results else "?"
    extra = algo.summary(store, values, results)
    rates = throughput(results, seconds, totals)
    gpu = ""
    if h2d:
        gpu = f", {format_bytes(h2d)} to the GPU ({_gbs(rates['h2d_gb_per_s'])}"
        gpu += (f"; {_gbs(rates['link_gb_per_s'])} while copying)" if rates["link_gb_per_s"]
                else ")")
        tiers = totals["tier_bytes"]
        if tiers.get("pinned") or tiers.get("store"):   # where the streamed shards came from
            gpu += (f", shard data from the pinned cache {format_bytes(tiers.get('pinned', 0))} "
                    f"and from the store {format_bytes(tiers.get('store', 0))}")
    return (f"{algo.name}: {store.num_vertices:,} vertices, {store.num_edges:,} edges, "
            f"{store.num_shards} shards, {iters} iterations, {seconds:.3f} s on {device}, "
            f"{format_bytes(read)} read ({_gbs(rates['store_gb_per_s'])})" + gpu
            + ranks + (f", {extra}" if extra else ""))


def _ranks_summary(results):
    """Ranks: each rank's bytes read and its exchange's bytes and seconds, over every run, and
    the bytes all ranks read (``("", None)`` for a run in one process)."""
    per = {}
    for r in results:
        for st in r.info.get("rank_stats", ()):
            t = per.setdefault(st["rank"], [0, 0, 0.0])
            t[0] += st["bytes_read"]
            t[1] += st["exchange_bytes"]
            t[2] += st["exchange_s"]
    if not per:
        return "", None
    return f"; {len(per)} ranks (read / exchanged / exchange time): " + ", ".join(
        f"{format_bytes(a)} / {format_bytes(b)} / {c:.3f} s" for _, (a, b, c) in sorted(per.items())
    ), sum(a for a, _, _ in per.values())


def _gbs(rate):
    return "? GB/s" if rate is None else f"{rate:.2f} GB/s"


def write_values(path, store, algo, values):
    """Write per-vertex values keyed by vertex label (README "Vertex ids").

    ``.npy``: the values in vertex order when labels are the ids ``0..n-1``, else a record array
    with fields ``id`` (the label: int64, or unicode for names) and ``value``. ``.tsv``/``.csv``:
    a header ``id<sep>value`` and one line per vertex, a field holding the separator, a quote or
    a line break quoted as the csv module quotes (``"a,b"``, a quote doubled; every label is
    quoted when one holds a carriage return). Values that are vertex ids (the algorithm's
    ``vertex_valued``, as cc's component names) are written as labels too. A store whose
    vertices were reordered at build time writes its rows in increasing label order, so
    integer labels give the rows of the same build without reordering.
    """
    import numpy as np
    from ..io.atomic import atomic_file
    from ..io.write import save_npy
    if algo.vertex_valued:
        values = _unpickled(store.to_labels(values))
    text = path.endswith((".tsv", ".csv"))
    if store.has_labels or text:
        ids = _unpickled(store.labels())
        rec = np.empty(len(values), dtype=[("id", ids.dtype), ("value", values.dtype)])
        rec["id"] = ids
        rec["value"] = values
        values = rec if store.vertex_order is None else rec[np.argsort(ids, kind="stable")]
    if text:
        columns = (values["id"].tolist(), values["value"].tolist())
        # the csv module quotes what holds the separator, a quote or "\n"; not a lone "\r"
        # under "\n" line ends, which readers take as a line end: then every label is quoted
        quoting = csv.QUOTE_NONNUMERIC if any(
            "\r" in x for column in columns for x in column if isinstance(x, str)) \
            else csv.QUOTE_MINIMAL
        with atomic_file(path, text=True) as f:
            rows = csv.writer(f, delimiter="\t" if path.endswith(".tsv") else ",",
                              lineterminator="\n", quoting=quoting)
            rows.writerow(("id", "value"))
            rows.writerows(zip(*columns))
    else:
        save_npy(path, values)


def _unpickled(array):
    # names are an object array; a .npy of them would need pickle to load: fixed-width unicode
    return array.astype(str) if array.dtype == object else array
