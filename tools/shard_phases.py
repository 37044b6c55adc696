"""``grstream shard`` timed pass by pass: where an external build's wall and CPU time go.

Usage (the CLI's own arguments after the report's path):
  python tools/shard_phases.py OUT.json shard g.npy -o g.h5 --shards 128 --memory-limit 8G \
      --renumber --threads 16 --quiet

Runs the CLI's ``main`` in this process with the external build's passes wrapped: the
renumbering pass (the ids that occur), the pass that writes sorted key runs and counts degrees,
the pass that gathers, sorts and writes the shards, and the vertex arrays. Per pass: wall
seconds, the process's CPU seconds (user + system, every thread), the main thread's CPU seconds,
and the CPU seconds of each group of threads (named as the build names its pools:
``grstream-build``, ``grstream-npy``, ...), sampled from ``/proc/self/task`` every 0.25 s and at
each pass's start and end (a thread that ends between two samples loses what it used since the
last one: the groups are a lower bound, the process's CPU seconds exact). A pass
whose threads together use far less than ``--threads`` cores while one group (or the main
thread) runs near one core per thread is bound by that group. Whole-command wall and CPU seconds
and the peak RSS (``ru_maxrss``) are reported beside them, as JSON to OUT.json and stdout.
"""
import json
import os
import re
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from grstream.partition import build, external_keys  # noqa: E402

#: (module, function, pass name) of the passes timed
PASSES = ((build, "set_renumbering", "ids"), (external_keys, "_write_runs", "runs"),
          (external_keys, "_write_keyed", "shards"), (external_keys, "write_vertex_data", "vertices"))
SAMPLE_S = 0.25


class Phases:
    """Per pass: wall, process CPU and main-thread CPU seconds, and CPU seconds per thread group."""

    def __init__(self):
        self.current = "start"
        self.totals = {}
        self.groups = {}
        self._last = {}
        self._lock = threading.Lock()
        self._wrapped = []

    def sample(self):
        """Charge every thread's CPU seconds since the last sample to the current pass."""
        tick = os.sysconf("SC_CLK_TCK")
        names = {str(t.native_id): t.name for t in threading.enumerate()}
        with self._lock:
            for tid in os.listdir("/proc/self/task"):
                try:
                    with open(f"/proc/self/task/{tid}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue        # the thread ended
                used = (int(fields[11]) + int(fields[12])) / tick
                delta = used - self._last.get(tid, 0.0)
                self._last[tid] = used
                group = re.sub(r"[_-]?\d+$", "", names.get(tid, "other"))
                charged = self.groups.setdefault(self.current, {})
                charged[group] = charged.get(group, 0.0) + delta

    def wrap(self, module, name, label):
        inner = getattr(module, name)
        self._wrapped.append((module, name, inner))

        def timed(*args, **kwargs):
            self.sample()
            before, self.current = self.current, label
            wall, cpu, main = time.perf_counter(), process_cpu(), time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.sample()
                self.current = before
                total = self.totals.setdefault(label, [0.0, 0.0, 0.0])
                total[0] += time.perf_counter() - wall
                total[1] += process_cpu() - cpu
                total[2] += time.thread_time() - main
        setattr(module, name, timed)

    def restore(self):
        """The wrapped functions back as they were."""
        for module, name, inner in self._wrapped:
            setattr(module, name, inner)
        self._wrapped = []

    def report(self):
        return {label: {"wall_s": round(wall, 2), "cpu_s": round(cpu, 1), "main_cpu_s": round(main, 2),
                        "threads_cpu_s": {g: round(s, 1) for g, s in sorted(
                            self.groups.get(label, {}).items(), key=lambda item: -item[1]) if s >= 0.05}}
                for label, (wall, cpu, main) in self.totals.items()}


def process_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    report_path, cli_args = argv[0], argv[1:]
    phases = Phases()
    for module, name, label in PASSES:
        phases.wrap(module, name, label)
    stop = threading.Event()

    def sampler():
        while not stop.wait(SAMPLE_S):
            phases.sample()

    thread = threading.Thread(target=sampler, name="phases-sampler", daemon=True)
    thread.start()
    from grstream.cli import main as cli
    wall, cpu = time.perf_counter(), process_cpu()
    try:
        status = cli(cli_args)
    finally:
        stop.set()
        thread.join()
        phases.restore()
    phases.sample()
    out = {"command": "grstream " + " ".join(cli_args), "exit": status,
           "wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(process_cpu() - cpu, 1),
           "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9, 3),
           "passes": phases.report()}
    text = json.dumps(out, indent=1)
    print(text)
    with open(report_path, "w") as fh:
        fh.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
