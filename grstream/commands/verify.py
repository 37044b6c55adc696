"""``grstream verify STORE``: check every checksum of every dataset of a store.

A run verifies only the datasets it reads; this reads them all, one at a time, and reports every
damaged one (not just the first) before exiting with the damaged-store status.
"""
import json
import sys
import time

from ..errors import EXIT_CORRUPT, ShardStoreError, StoreNotFoundError
from ..units import format_bytes


def add_parser(sub):
    p = sub.add_parser("verify", help="check every checksum of a shard store",
                       description="Read every dataset of a store and check its CRC32 and id "
                                   f"ranges. Exit status 0 when all match, {EXIT_CORRUPT} when "
                                   "any does not (each damaged dataset is listed).")
    p.add_argument("store", help="shard store (.h5)")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=main)
    return p


def verify_store(path, progress=False):
    """Check every dataset of the store at ``path``.

    Parameters
    ----------
    path : str or Path
    progress : bool
        A tqdm bar over the bytes read, on stderr.

    Returns
    -------
    dict
        ``path``, ``ok``, ``opened`` (false when the file cannot be opened as a store: not a
        grstream store, or damaged in what opening checks), ``shards``, ``datasets`` (checked),
        ``bytes`` (read) and ``errors``: one ``{"shard", "dataset", "message"}`` per damaged
        dataset (``shard`` None for the store-wide ones, both None when the store cannot even
        be opened).

    Raises
    ------
    StoreNotFoundError
        No file at ``path``.
    """
    from tqdm import tqdm

    from ..distributed import part_files as parts
    from ..store import format as fmt, open as open_store
    report = {"path": str(path), "ok": False, "opened": False, "shards": 0, "datasets": 0,
              "bytes": 0, "errors": []}
    try:
        store = open_store(path, verify="first")
    except StoreNotFoundError:
        raise
    except ShardStoreError as exc:  # what opening checks (without an index: every offset)
        report["errors"].append(_error(exc))
        return report
    report["opened"] = True
    with store:
        # opening checked the intervals and the shard index; the per-vertex arrays and string
        # labels are read, and so checked, on first use: here
        report["datasets"] = (3 + int(store.indexed) + int(store.compressed)
                              + (2 if store.label_kind == "str" else int(store.renumbered)))
        for check in (store.in_degree, store.out_degree, store.labels):
            try:
                check()
            except ShardStoreError as exc:
                report["errors"].append(_error(exc))
        try:    # the index must describe the shard objects it stands for
            report["errors"] += [{"shard": shard, "dataset": dataset,
                                  "message": f"{path}, shard {shard}, dataset {dataset}: {message}"}
                                 for shard, dataset, message in store.index_mismatches()]
        except ShardStoreError as exc:
            report["errors"].append(_error(exc))
        report["shards"] = store.num_shards
        with tqdm(total=store.nbytes(), unit="B", unit_scale=True, unit_divisor=1024,
                  file=sys.stderr, disable=not progress, desc="verify") as bar:
            held = parts.held(store)   # (a part file holds its own shards' edges only)
            for i in range(store.num_shards):
                # a compressed store's ids are decoded too: the blocks checked, the ids' range
                decoded = [f"{d}/{ids}" for d, ids in fmt.ID_DATASET.items()] if store.compressed else []
                for name in store.dataset_names(i) + decoded if i in held else ():
                    nbytes = 0 if name in decoded else store.shard_info(i).dataset_nbytes.get(name, 0)
                    try:
                        store.read(i, name)
                    except ShardStoreError as exc:
                        report["errors"].append(_error(exc))
                    report["datasets"] += name not in decoded
                    report["bytes"] += nbytes
                    bar.update(nbytes)
    report["ok"] = not report["errors"]
    return report


def _error(exc):
    return {"shard": exc.shard, "dataset": exc.dataset, "message": str(exc)}


def main(args):
    start = time.perf_counter()
    report = verify_store(args.store, progress=not (args.quiet or args.json))
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps(report, indent=2))
    elif not report["opened"]:
        # nothing was counted: the one line says why the file is not a readable store
        print(f"grstream verify: error: {report['errors'][0]['message']}", file=sys.stderr)
    else:
        for error in report["errors"]:
            print(f"grstream verify: {error['message']}", file=sys.stderr)
        verdict = "ok" if report["ok"] else f"DAMAGED, {len(report['errors'])} bad dataset(s)"
        print(f"{report['path']}: {verdict}: {report['datasets']} datasets in {report['shards']} "
              f"shards, {format_bytes(report['bytes'])} checked in {seconds:.1f} s", file=sys.stderr)
    return 0 if report["ok"] else EXIT_CORRUPT
