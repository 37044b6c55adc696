"""A graph larger than the GPU's free memory, end to end: generate, shard, open, read + verify,
then BFS, CC and PageRank with another process holding all but a few GiB of the GPU.

Usage (on the GPU machine):
  python3 tools/bench_scale.py --scale 26 --dir /tmp/scale --json $OUT/scale26.json
  python3 tools/bench_scale.py --scale 27 --build limited --memory-limit 16G --gpu-free 16G ...
A small check of the script without a GPU: python tools/bench_scale.py --scale 14 --device cpu

Steps, each recorded in the JSON (written again after every step) and the table at the end:
``grstream generate rmat`` to a ``.npy`` (seed 1, edge factor 16); ``grstream shard`` into
``--shards`` shards with ``--threads`` threads in memory (``--build memory``), under
``--memory-limit`` (``limited``) or both (``both``: the build under the limit runs last, after
the checks, and the two stores' datasets are compared through their shard indexes' lengths and
CRCs, the second store then deleted), each a child process measured by ``os.wait4`` (wall, user
+ system CPU seconds, peak RSS); the ``.npy`` deleted once built unless ``--keep-npy``; the store opened (median of 5) and opened as a store without its shard
index is (every shard's HDF5 objects described, offsets and degrees read); the store read and
verified on ``--threads`` threads (every dataset's CRC32 and id range) against a plain read of
the file's bytes on as many threads (the page cache's rate: the peer); then, with a child holding
all but ``--gpu-free`` of the GPU (CuPy), ``grstream run bfs|cc|pagerank STORE --device cuda``
as child processes (wall of the whole command, the iterations' seconds, GB over the link and
the rates the run's ``--stats-json`` reports, bytes per memory tier). Checks of the algorithms
that ran, after the runs (so that the runs find the host memory free), on ``--threads`` threads,
in this order, each while before the deadline: unless ``--no-scipy``, scipy's csgraph on the
out-edges without repeats (one CSR of int32 indices, so below 2^31 distinct edges; RMAT-27's are)
``breadth_first_order`` from the same source (the same levels); unless ``--no-certificates``,
BFS levels certified (the source at 0, along every edge of a reached vertex u the target at most
level[u] + 1, every other reached vertex with an in-edge from one level up: exactly the BFS
levels) and the components certified (labels constant along every edge, each the least vertex
of its class); PageRank within L1 1e-6 of a float64 power iteration of the same number of
iterations (one scipy product per shard's in-edges, repeats as counts); scipy's
``connected_components`` (the same classes). ``--algos bfs --no-certificates`` checks BFS
against scipy alone. The store is built ``--renumber``ed (the ids that occur, as the
issue's runs were) unless ``--no-renumber``. ``--deadline S``: a step that would start after S
seconds is skipped and recorded so, and a build still running then is stopped.
``--ranks R`` (R > 1): after the checks, each algorithm again as ``mpiexec -n R grstream run ...
--device cuda`` (``--device``; one GPU a rank, every GPU wholly free: the graph spread over R GPUs) beside the
one GPU streaming it above, its values against that run's (BFS levels and component labels
equal, PageRank within L1 1e-6), with the world's iterations' seconds and exchange bytes.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grstream as gr  # noqa: E402
from grstream.store import format as fmt  # noqa: E402

LINK_GBPS = 54.7           # pinned host-to-device copies on the H100 machine (../shared/gpu)
HOLDER = r"""
import sys, time, cupy
free, total = cupy.cuda.runtime.memGetInfo()
keep = int(sys.argv[1])
held = cupy.cuda.memory.alloc(max(free - keep, 0))
print(free - keep, total, flush=True)
sys.stdin.read()
"""

#: the warm-up's second run: the program streamed (half the store over its minimum budget), so
#: that the kernels only a streamed run loads (the zero-copy variant of the module, compiled when
#: the pinned cache is mapped) are compiled too, not in the first timed run
WARM_STREAMED = r"""
import sys
import grstream as gr
from grstream.algorithms import declaration
from grstream.errors import MemoryBudgetError
algo, path, device = declaration(sys.argv[1]), sys.argv[2], sys.argv[3]
with gr.open(path) as store:
    try:
        algo.entry(store, device=device, memory_budget=1)
        low = None
    except MemoryBudgetError as exc:
        low = exc.minimum
    if low is not None:
        algo.entry(store, device=device, memory_budget=low + store.nbytes() // 2)
"""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def measured(cmd, timeout=None):
    """Run ``cmd``; its wall seconds, CPU seconds (user + system), peak RSS and exit status
    (killed after ``timeout`` seconds: exit -9).

    The peak RSS is the child's ``VmHWM`` polled every 50 ms (its own address space's high-water
    mark): the ``ru_maxrss`` that ``wait4`` returns starts at this process's RSS when it spawned
    the child (the exec'd child inherits the high-water mark of the address space it replaced).
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peak, status = 0, None
    while status is None:
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            pass
        if timeout is not None and time.perf_counter() - t0 > timeout:
            os.kill(proc.pid, signal.SIGKILL)   # (Popen.kill would reap it first: wait4 below does)
        pid, status_code, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = status_code
        else:
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    return {"command": " ".join(cmd), "wall_s": round(wall, 3),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "cpu_over_wall": round((usage.ru_utime + usage.ru_stime) / wall, 2) if wall else 0.0,
            "peak_rss_gb": round(peak / 1e9, 3), "exit": proc.returncode}


def generate_int32(scale, path):
    """``grstream generate rmat``'s edges (seed 1, edge factor 16) as an (m, 2) int32 ``.npy``."""
    import resource
    from grstream.io.generate import rmat_chunks
    usage, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    table = np.lib.format.open_memmap(path, mode="w+", dtype=np.int32, shape=(16 << scale, 2))
    at = 0
    for src, dst, _ in rmat_chunks(scale, 16, 1):
        table[at:at + len(src), 0] = src
        table[at:at + len(src), 1] = dst
        at += len(src)
    table.flush()
    del table
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    return {"command": f"rmat_chunks({scale}, 16, 1) into an int32 .npy", "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "cpu_over_wall": round(cpu / wall, 2),
            "peak_rss_gb": round(after.ru_maxrss * 1024 / 1e9, 3), "exit": 0, "edges": at}


def grstream_cmd(*args):
    return [sys.executable, "-m", "grstream", *map(str, args)]


def index_fields(path):
    """The shard index's lengths and CRCs: equal for two stores of the same datasets."""
    import h5py
    with h5py.File(path, "r") as f:
        if fmt.SHARD_INDEX not in f:
            return None
        return f[fmt.SHARD_INDEX][()].reshape(-1, len(fmt.INDEX_FIELDS))[:, 1:].tobytes()


def open_times(path):
    """Median ms of 5 opens, and of opening as a store without an index does (objects
    described, offsets and degree arrays read)."""
    with_index, from_objects = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        store = gr.open(path)
        with_index.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i in range(store.num_shards):
            store.describe_shard(i)
            for direction in fmt.ID_DATASET:
                store.read(i, f"{direction}/{fmt.INDPTR}")
        store.in_degree(), store.out_degree()
        from_objects.append(time.perf_counter() - t0 + with_index[-1])
        store.close()
    return {"open_ms": round(float(np.median(with_index)) * 1e3, 2),
            "open_from_objects_ms": round(float(np.median(from_objects)) * 1e3, 2)}


def read_rates(path, threads):
    """GB/s of reading + verifying every shard on ``threads`` threads, of the same without
    verifying, and of plain reads of the file's bytes (the peer; the better of two)."""
    size = os.path.getsize(path)
    block = 64 << 20

    import threading
    local = threading.local()
    fd = os.open(path, os.O_RDONLY)

    def plain(start):
        if not hasattr(local, "buf"):
            local.buf = np.empty(block, dtype=np.uint8)
        return os.preadv(fd, [local.buf], start)

    def shards(verify):
        with gr.open(path, verify=verify) as store, ThreadPoolExecutor(threads) as pool:
            list(pool.map(store.read_shard, range(store.num_shards)))
            return store.nbytes()

    out = {}
    pool = ThreadPoolExecutor(threads)
    for name, work in (("plain_read", lambda: sum(pool.map(plain, range(0, size, block)))),
                       ("read_verify", lambda: shards("always")), ("read_no_verify", lambda: shards("never"))):
        best = 0.0
        for _ in range(2 if name == "plain_read" else 1):   # the first plain read warms the cache
            t0 = time.perf_counter()
            nbytes = work()
            best = max(best, nbytes / (time.perf_counter() - t0) / 1e9)
        out[f"{name}_gbps"] = round(best, 2)
    pool.shutdown()
    os.close(fd)
    out["store_gb"] = round(size / 1e9, 2)
    return out


def start_holder(gpu_free):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(gpu_free)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    held, total = (int(x) for x in proc.stdout.readline().split())
    log(f"holder: {held / 2**30:.1f} GiB of {total / 2**30:.1f} GiB held")
    return proc, {"gpu_held_gib": round(held / 2**30, 2), "gpu_total_gib": round(total / 2**30, 2)}


def run_algo(algo, store, device, workdir, profile=None):
    """``grstream run`` of ``algo`` as a child process; with ``profile`` (a folder) a second run
    under cProfile, whose main thread's largest cumulative entries go into the record."""
    stats, values = os.path.join(workdir, f"{algo}.json"), os.path.join(workdir, f"{algo}.npy")
    began = time.time()
    args = ("run", algo, store, "--device", device, "--quiet", "--stats-json", stats, "-o", values)
    rec = measured(grstream_cmd(*args))
    if rec["exit"] != 0:
        return rec
    if profile:
        again, rec["profiler"], rec["profile"] = profiled(args[:-4], profile, algo)
        rec["profiled_wall_s"] = again["wall_s"]
    # where the command's time after the run goes: -o written, then --stats-json, then the exit
    rec["values_written_s"] = round(os.path.getmtime(values) - began, 2)
    rec["stats_written_s"] = round(os.path.getmtime(stats) - began, 2)
    doc = json.load(open(stats))
    run, per, mid = run_figures(doc, algo, rec)
    totals = run["totals"]
    rec.update(gb_to_gpu=round(totals["bytes_h2d"] / 1e9, 2),
               gb_from_store=round(totals["bytes_read"] / 1e9, 2),
               throughput=doc["throughput"], tier_gb={k: round(v / 1e9, 2) for k, v in totals["tier_bytes"].items()},
               memory={k: run["info"]["memory"].get(k) for k in ("budget", "pinned_budget", "pinned_rule",
                                                                 "resident_shards", "pinned_shards", "num_shards")})
    if mid is not None:
        rec.update(gb_per_iteration=round(mid["bytes_h2d"] / 1e9, 3),
                   iteration_gbps=round(mid["bytes_h2d"] / mid["time_total"] / 1e9, 2),
                   link_share=round(mid["bytes_h2d"] / mid["time_total"] / 1e9 / LINK_GBPS, 3),
                   iteration_tier_gb={k: round(v / 1e9, 2) for k, v in mid["tier_bytes"].items()})
    return rec


def profiled(args, folder, name):
    """``grstream ARGS`` again under a profiler of the main thread: (its measured record, the
    profiler's name, the report's lines), the report also in ``folder``. pyinstrument (sampling
    the main thread's stack; wall time, threads apart) where it imports; else cProfile, whose
    times on Python 3.12 and later mix the threads: it records every thread's calls on one stack
    (sys.monitoring), so a call of the main thread that returns after another thread's start is
    charged that thread's lifetime (joining an idle pool's threads showed seconds)."""
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        import io
        import pstats
        prof = os.path.join(folder, f"{name}.prof")
        again = measured([sys.executable, "-m", "cProfile", "-o", prof, "-m", "grstream", *args])
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(45)
        return again, "cProfile", text.getvalue().splitlines()[-60:]
    report = os.path.join(folder, f"{name}.profile.txt")
    again = measured([sys.executable, "-m", "pyinstrument", "-r", "text", "--no-unicode", "-o", report,
                      "-p", "processor_options.filter_threshold=0.005", "-m", "grstream", *args])
    with open(report) as fh:
        return again, "pyinstrument", [line.rstrip() for line in fh if line.strip()][:150]


def run_figures(doc, algo, rec):
    """A run's ``--stats-json`` ``doc`` into ``rec``: iterations, the run's and the iterations'
    seconds, and for PageRank the median iteration after the first (its ms); returns the run,
    its per-iteration records and that median one (None but for PageRank)."""
    run = doc["runs"][0]
    per = run["per_iteration"]
    rec.update(iterations=run["iterations"], run_s=round(doc["seconds"], 3),
               iterations_s=round(sum(s["time_total"] for s in per), 3))
    mid = None
    if algo == "pagerank" and per:
        later = per[1:] or per
        mid = sorted(later, key=lambda s: s["time_total"])[len(later) // 2]
        rec["ms_per_iteration"] = round(mid["time_total"] * 1e3, 1)
    return run, per, mid


def run_ranks(algo, store, ranks, device, workdir):
    """``algo`` on ``ranks`` ranks (one GPU each with ``device`` cuda); its values against the one-GPU run's in ``workdir``."""
    stats = os.path.join(workdir, f"{algo}.ranks{ranks}.json")
    values = os.path.join(workdir, f"{algo}.ranks{ranks}.npy")
    rec = measured([shutil.which("mpiexec"), "-n", str(ranks),
                    *grstream_cmd("run", algo, store, "--device", device, "--quiet",
                                  "--stats-json", stats, "-o", values)])
    if rec["exit"] != 0:
        return rec
    doc = json.load(open(stats))
    run, _, _ = run_figures(doc, algo, rec)
    rec["ranks"] = doc.get("ranks")
    rec["rank_stats"] = run["info"].get("rank_stats")
    got, ref = values_of(values), values_of(os.path.join(workdir, f"{algo}.npy"))
    if algo == "pagerank":
        rec["l1_to_one_gpu"] = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).sum())
        rec["equal_one_gpu"] = rec["l1_to_one_gpu"] <= 1e-6
    else:
        rec["equal_one_gpu"] = bool(np.array_equal(got, ref))
    return rec


def values_of(path):
    arr = np.load(path)
    return arr["value"] if arr.dtype.names else arr


def shard_rows(store, i, direction):
    """Shard ``i``'s ``direction`` edges with repeated (vertex, neighbour) pairs merged: local
    offsets, neighbour ids and repeat counts (the rows are sorted, so repeats are adjacent)."""
    local = store.read(i, f"{direction}/{fmt.INDPTR}")
    nbr = store.read(i, f"{direction}/{fmt.ID_DATASET[direction]}")
    keep = np.ones(len(nbr), dtype=bool)
    if len(nbr):
        keep[1:] = nbr[1:] != nbr[:-1]
        keep[local[:-1][local[:-1] < len(nbr)]] = True
    pos = np.flatnonzero(keep)
    kept = np.zeros(len(nbr) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return kept[local], nbr[pos], np.diff(np.append(pos, len(nbr))).astype(np.float64)


def all_rows(store, direction, pool):
    return list(pool.map(lambda i: shard_rows(store, i, direction), range(store.num_shards)))


def scipy_csr(store, pool):
    """The out-edges without repeats as one scipy CSR matrix, built for csgraph as cheaply as
    it goes: each shard's rows merged on ``pool`` straight into one int32 index array (scipy's
    own index type: csgraph converts any other, and the distinct edges of RMAT-27 are below
    2^31), the float64 data csgraph converts to filled on the pool too (2^31 edges: 17 GB)."""
    import scipy.sparse as sp
    n = store.num_vertices
    if store.num_edges >= 1 << 31:
        # room for the distinct edges, as many as int32 holds at most: a graph of more
        # distinct edges fails scipy's own check below
        bound = (1 << 31) - 1
    else:
        bound = store.num_edges
    ids = np.empty(bound, dtype=np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)

    def distinct(i):
        local, nbr = (store.read(i, f"out/{name}") for name in (fmt.INDPTR, fmt.ID_DATASET["out"]))
        keep = np.ones(len(nbr), dtype=bool)
        if len(nbr):
            keep[1:] = nbr[1:] != nbr[:-1]
            keep[local[:-1][local[:-1] < len(nbr)]] = True
        kept = np.zeros(len(nbr) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept[1:])
        return kept[local], nbr[keep]

    base = 0
    rows = [pool.submit(distinct, i) for i in range(store.num_shards)]
    copies = []
    for i, row in enumerate(rows):
        local, nbr = row.result()
        rows[i] = None
        info = store.shard_info(i)
        if base + len(nbr) > bound:
            raise ValueError(f"more than {bound} distinct edges: beyond scipy's int32 indices")
        indptr[info.lo + 1:info.hi + 1] = local[1:] + base
        copies.append(pool.submit(np.copyto, ids[base:base + len(nbr)], nbr, casting="unsafe"))
        base += len(nbr)
    for copy in copies:
        copy.result()
    data = np.empty(base, dtype=np.float64)
    step = 1 << 26
    list(pool.map(lambda at: data[at:at + step].fill(1.0), range(0, base, step)))
    return sp.csr_matrix((data, ids[:base], indptr.astype(np.int32)), shape=(n, n), copy=False)


def scipy_levels(mat, source):
    """BFS levels (-1: unreached) from scipy's ``breadth_first_order`` and its predecessors."""
    from scipy.sparse import csgraph
    order, pred = csgraph.breadth_first_order(mat, source, directed=True, return_predecessors=True)
    ref = np.full(mat.shape[0], -1, dtype=np.int64)
    ref[source] = 0
    rest = order[1:]
    while True:      # BFS order puts every predecessor first: settled within depth passes
        new = ref[pred[rest]] + 1
        if np.array_equal(new, ref[rest]):
            return ref
        ref[rest] = new


def certify_bfs(store, level, source, pool):
    """Whether ``level`` (-1: unreached) is the BFS level of every vertex from ``source``: the
    source at 0; along every out-edge of a reached vertex u, the target reached at most
    level[u] + 1; every other reached vertex v has an in-edge from level[v] - 1."""
    def shard(i):
        info = store.shard_info(i)
        ok = True
        for direction in ("out", "in"):
            local = store.read(i, f"{direction}/{fmt.INDPTR}")
            nbr = store.read(i, f"{direction}/{fmt.ID_DATASET[direction]}")
            own = np.repeat(level[info.lo:info.hi], np.diff(local))
            other = level[nbr]
            if direction == "out":
                ok &= bool(np.all((own < 0) | ((other >= 0) & (other <= own + 1))))
            else:
                parent = (own > 0) & (other == own - 1)
                has = np.zeros(info.hi - info.lo, dtype=bool)
                rows = np.repeat(np.arange(info.hi - info.lo), np.diff(local))
                has[rows[parent]] = True
                need = level[info.lo:info.hi] > 0
                ok &= bool(np.all(has[need]))
        return ok
    return level[source] == 0 and all(pool.map(shard, range(store.num_shards)))


def certify_cc(store, label, pool):
    """Whether ``label`` is constant along every edge and names each class by its least vertex
    (so every component lies in one class; classes = components when the counts agree)."""
    ids = np.arange(len(label))
    if not (np.all(label <= ids) and np.array_equal(label[label], label)):
        return False

    def shard(i):
        info = store.shard_info(i)
        local = store.read(i, "out/indptr")
        dst = store.read(i, "out/dst")
        return bool(np.array_equal(np.repeat(label[info.lo:info.hi], np.diff(local)), label[dst]))
    return all(pool.map(shard, range(store.num_shards)))


def check(store, results, threads, workdir, scipy_checks=True, deadline=None, report=None,
          certificates=True):
    """The runs' values against independent computations (see the module's docstring), BFS
    first: scipy's levels, then the certificates (unless ``certificates`` is False), then
    PageRank's float64 reference and scipy's components; ``report(out)`` is called with what
    is known after each of them (a check cut short by ``deadline`` leaves the earlier ones)."""
    from scipy.sparse import csgraph
    n = store.num_vertices
    out = {}
    t0 = time.perf_counter()
    ok = {a: a in results and results[a].get("exit") == 0 for a in ("bfs", "cc", "pagerank")}

    def before_deadline():
        return deadline is None or time.perf_counter() < deadline

    def done(step, began):
        out[f"{step}_s"] = round(time.perf_counter() - began, 1)
        if report is not None:
            report(out)

    source = store.default_source()
    level = label = mat = None
    if ok["bfs"]:
        level = values_of(os.path.join(workdir, "bfs.npy")).astype(np.int64)
        level = np.where(level >= gr.algorithms.bfs.UNREACHED, -1, level)
        out["bfs_levels"] = int(level.max()) + 1
        out["bfs_reached"] = int((level >= 0).sum())
    if ok["cc"]:
        label = values_of(os.path.join(workdir, "cc.npy"))
        # -o writes a component's name as a vertex label: back to internal ids
        label = store.to_internal(label) if store.has_labels else label.astype(np.int64)
    with ThreadPoolExecutor(threads) as pool:
        if scipy_checks and (ok["bfs"] or ok["cc"]) and before_deadline():
            began = time.perf_counter()
            mat = scipy_csr(store, pool)
            out["unique_edges"] = int(mat.nnz)
            done("scipy_csr", began)
        if mat is not None and ok["bfs"] and before_deadline():
            began = time.perf_counter()
            out["bfs_equal_scipy"] = bool(np.array_equal(level, scipy_levels(mat, source)))
            done("scipy_bfs", began)
        if certificates and before_deadline():
            began = time.perf_counter()
            if ok["bfs"]:
                out["bfs_certified"] = bool(certify_bfs(store, level, source, pool))
            if ok["cc"]:
                out["cc_certified"] = bool(certify_cc(store, label, pool))
                out["cc_components"] = int(np.count_nonzero(label == np.arange(n)))
            done("certify", began)
        if ok["pagerank"] and before_deadline():
            began = time.perf_counter()
            got = values_of(os.path.join(workdir, "pagerank.npy")).astype(np.float64)
            ref = pagerank_reference(store, results["pagerank"]["iterations"], all_rows(store, "in", pool), pool)
            out["pagerank_l1"] = float(np.abs(got - ref).sum())
            out["pagerank_ok"] = out["pagerank_l1"] <= 1e-6
            del ref
            done("pagerank_reference", began)
        if mat is not None and ok["cc"] and before_deadline():
            began = time.perf_counter()
            count, labels = csgraph.connected_components(mat, directed=True, connection="weak")
            pairs = len(np.unique(label * np.int64(count) + labels)) if n else 0
            out["cc_components_scipy"] = int(count)
            out["cc_equal_scipy"] = bool(pairs == count == int(np.count_nonzero(label == np.arange(n))))
            done("scipy_cc", began)
    out["check_s"] = round(time.perf_counter() - t0, 1)
    return out


def pagerank_reference(store, iterations, rows, pool, damping=0.85):
    """``iterations`` of ``x' = d (A^T (x / out) + dangling / n) + (1 - d) / n`` from 1/n in
    float64, one scipy product per shard's in-edges (rows ``lo..hi``, repeats as counts)."""
    import scipy.sparse as sp
    n = store.num_vertices
    blocks = []
    for i, (local, ids, counts) in enumerate(rows):
        info = store.shard_info(i)
        blocks.append((info.lo, info.hi, sp.csr_matrix((counts, ids, local), shape=(info.hi - info.lo, n))))
    out_degree = store.out_degree().astype(np.float64)
    dangling = out_degree == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_degree))
    x = np.full(n, 1.0 / n)
    y = np.empty(n)
    for _ in range(iterations):
        contrib = x * inv
        lost = x[dangling].sum()

        def product(block):
            lo, hi, m = block
            y[lo:hi] = m @ contrib

        list(pool.map(product, blocks))
        x = damping * (y + lost / n) + (1.0 - damping) / n
    return x


def table(out):
    rows = [("step", "figure")]
    for key in ("generate", "shard_memory", "shard_limited"):
        r = out.get(key)
        if isinstance(r, dict) and "wall_s" in r:
            rows.append((key, f"{r['wall_s']} s wall, {r['cpu_s']} s CPU ({r['cpu_over_wall']}x), "
                              f"peak RSS {r['peak_rss_gb']} GB" + (f", {r['edges_per_s'] / 1e6:.1f} M edges/s"
                                                                   if "edges_per_s" in r else "")))
    if isinstance(out.get("open"), dict):
        rows.append(("open", f"{out['open']['open_ms']} ms (from the objects: {out['open']['open_from_objects_ms']} ms)"))
    if isinstance(out.get("read"), dict):
        r = out["read"]
        rows.append(("read + verify", f"{r['read_verify_gbps']} GB/s (no verify {r['read_no_verify_gbps']}, "
                                      f"plain file read {r['plain_read_gbps']}) of {r['store_gb']} GB"))
    for algo in ("bfs", "cc", "pagerank"):
        r = out.get(algo)
        if isinstance(r, dict) and "wall_s" in r:
            extra = (f", {r['ms_per_iteration']} ms/iteration, {r['gb_per_iteration']} GB at "
                     f"{r['iteration_gbps']} GB/s ({r['link_share'] * 100:.0f}% of the link)"
                     if "ms_per_iteration" in r else "")
            rows.append((algo, f"{r['wall_s']} s wall, {r.get('iterations_s')} s in {r.get('iterations')} "
                               f"iterations, {r.get('gb_to_gpu')} GB to the GPU, tiers {r.get('tier_gb')}" + extra))
    for algo in ("bfs", "cc", "pagerank"):
        r = out.get(f"ranks_{algo}")
        if isinstance(r, dict) and "wall_s" in r:
            extra = f", {r['ms_per_iteration']} ms/iteration" if "ms_per_iteration" in r else ""
            rows.append((f"{algo}, {r.get('ranks')} ranks", f"{r['wall_s']} s wall, {r.get('iterations_s')} s in "
                         f"{r.get('iterations')} iterations{extra}, equal to one GPU: {r.get('equal_one_gpu')}"))
    if "checks" in out:
        rows.append(("checks", json.dumps(out["checks"])))
    if "same_datasets" in out:
        rows.append(("limited = memory", str(out["same_datasets"])))
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=26)
    ap.add_argument("--shards", type=int, default=128)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--build", choices=("memory", "limited", "both"), default="both")
    ap.add_argument("--memory-limit", default="8G")
    ap.add_argument("--tmp-dir", default=None, help="the external build's bucket directory")
    ap.add_argument("--dir", default="/tmp/scale")
    ap.add_argument("--npy-dir", default=None, help="where the .npy goes (default --dir)")
    ap.add_argument("--npy-int32", action="store_true",
                    help="generate in this process into an int32 .npy (half the bytes of "
                         "grstream generate's int64 one; the same edges)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpu-free", default="4G", help="GPU memory left free by the holder")
    ap.add_argument("--algos", default="bfs,cc,pagerank")
    ap.add_argument("--keep-npy", action="store_true")
    ap.add_argument("--warm", action="store_true",
                    help="run each algorithm on a small store first (the kernels' compiles)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--no-read", action="store_true", help="no open and read timings of the store")
    ap.add_argument("--no-scipy", action="store_true", help="only the certificate checks")
    ap.add_argument("--no-certificates", action="store_true",
                    help="no certificates: with --algos bfs, the one check is scipy's levels")
    ap.add_argument("--no-renumber", action="store_true",
                    help="keep RMAT's ids (default: renumbered, as the issue's runs were)")
    ap.add_argument("--deadline", type=float, default=None, help="seconds after which no step starts")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep-stats", default=None, help="copy each run's --stats-json into this folder")
    ap.add_argument("--profile", default=None,
                    help="run each algorithm a second time under a profiler of its main thread "
                         "(pyinstrument where it imports, else cProfile), its report in this folder")
    ap.add_argument("--ranks", type=int, default=1,
                    help="also run each algorithm on this many GPU ranks (mpiexec), after the checks")
    args = ap.parse_args(argv)
    from grstream.units import byte_size
    started = time.perf_counter()
    os.makedirs(args.dir, exist_ok=True)
    npy = os.path.join(args.npy_dir or args.dir, f"rmat{args.scale}.npy")
    store = os.path.join(args.dir, f"rmat{args.scale}.h5")
    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": platform.node(), "cores": os.cpu_count(), "threads": args.threads,
           "command": " ".join(sys.argv), "scale": args.scale, "shards": args.shards}
    if args.device == "cuda":
        from grstream.backends import cuda
        out["device"] = cuda.available()[1]

    def save():
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=1)

    def due(step):
        if args.deadline is not None and time.perf_counter() - started > args.deadline:
            out[step] = "skipped: past --deadline"
            log(f"{step}: skipped (deadline)")
            return False
        return True

    log(f"disk free {shutil.disk_usage(args.dir).free / 1e9:.0f} GB in {args.dir}")
    edges = 16 << args.scale
    if args.npy_int32:
        out["generate"] = generate_int32(args.scale, npy)
    else:
        out["generate"] = measured(grstream_cmd("generate", "rmat", "--scale", args.scale, "--seed", 1,
                                                "-o", npy, "--quiet"))
    log(f"generate: {out['generate']}")
    save()
    limited = store if args.build == "limited" else store + ".limited.h5"

    def shard(step, path, extra):
        tmp = ("--tmp-dir", args.tmp_dir) if args.tmp_dir and "--memory-limit" in extra else ()
        left = None if args.deadline is None else args.deadline - (time.perf_counter() - started)
        out[step] = measured(grstream_cmd("shard", npy, "-o", path, "--shards", args.shards, "--threads",
                                          args.threads, "--quiet", *extra, *tmp), timeout=left)
        out[step]["edges_per_s"] = round(edges / out[step]["wall_s"])
        out[step]["peak_over_edge_bytes"] = round(out[step]["peak_rss_gb"] * 1e9 / (16 * edges), 2)
        log(f"{step}: {out[step]}")
        save()

    limit = ("--memory-limit", args.memory_limit)
    renumber = ("--no-renumber",) if args.no_renumber else ("--renumber",)
    limit = limit + renumber
    shard("shard_limited" if args.build == "limited" else "shard_memory", store,
          limit if args.build == "limited" else renumber)
    if args.build != "both" and not args.keep_npy:
        os.remove(npy)      # the disk holds the store and, in a limited build, its buckets
    if args.no_read:
        out["open"] = out["read"] = "skipped: --no-read"
    else:
        out["open"] = open_times(store)
        log(f"open: {out['open']}")
    if not args.no_read and due("read"):
        out["read"] = read_rates(store, args.threads)
        log(f"read: {out['read']}")
    save()
    if args.warm and due("warm"):
        # each program's kernels compile once per machine (nvcc, cached on disk): compiled here
        # on a small store, so the timed runs below are those of a machine that ran them before
        tiny = os.path.join(args.dir, "warm.h5")
        from grstream.io.generate import rmat
        gr.build_shards(rmat(10, 16, seed=1), tiny, num_shards=4, renumber=not args.no_renumber,
                        progress=False)
        out["warm"] = {algo: measured(grstream_cmd("run", algo, tiny, "--device", args.device, "--quiet"))["wall_s"]
                       for algo in args.algos.split(",")}
        out["warm_streamed"] = {algo: measured([sys.executable, "-c", WARM_STREAMED, algo, tiny, args.device])["wall_s"]
                                for algo in args.algos.split(",")}
        log(f"warm (compiles): {out['warm']}, streamed {out['warm_streamed']}")
    holder = None
    if args.device == "cuda":
        holder, out["holder"] = start_holder(byte_size("gpu_free", args.gpu_free))
    results = {}
    try:
        for algo in args.algos.split(","):
            if due(algo):
                results[algo] = out[algo] = run_algo(algo, store, args.device, args.dir, args.profile)
                log(f"{algo}: {out[algo]}")
                save()
    finally:
        if holder is not None:
            holder.stdin.close()
            holder.wait()
    if not args.no_check and due("checks"):
        with gr.open(store) as st:
            def report(partial):
                out["checks"] = partial
                log(f"checks so far: {partial}")
                save()
            out["checks"] = check(st, results, args.threads, args.dir, not args.no_scipy,
                                  None if args.deadline is None else started + args.deadline, report,
                                  certificates=not args.no_certificates)
        log(f"checks: {out['checks']}")
        save()
    if args.ranks > 1:
        for algo in results:
            if results[algo].get("exit") == 0 and due(f"ranks_{algo}"):
                out[f"ranks_{algo}"] = run_ranks(algo, store, args.ranks, args.device, args.dir)
                log(f"{args.ranks} ranks, {algo}: {out[f'ranks_{algo}']}")
                save()
    if args.build == "both":
        need = 2.2 * 16 * edges     # the buckets (8 B per edge per direction) and the store
        if shutil.disk_usage(args.dir).free < need:
            out["shard_limited"] = f"skipped: less than {need / 1e9:.0f} GB of disk free"
        elif due("shard_limited"):
            shard("shard_limited", limited, limit)
            if os.path.exists(limited):
                out["same_datasets"] = index_fields(limited) == index_fields(store)
                os.remove(limited)
        if not args.keep_npy:
            os.remove(npy)
    out["total_s"] = round(time.perf_counter() - started, 1)
    if args.keep_stats:
        for algo in results:
            kept = os.path.join(args.keep_stats, f"{algo}.json")
            if not os.path.exists(kept) or not os.path.samefile(kept, os.path.join(args.dir, f"{algo}.json")):
                shutil.copy(os.path.join(args.dir, f"{algo}.json"), kept)
    save()
    print(table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
