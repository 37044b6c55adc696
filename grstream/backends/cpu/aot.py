"""The compiled kernels as an extension module, loaded without numba (numba's ahead-of-time
compiler, ``numba.pycc``).

A process that loads the generated kernels through numba's JIT pays for importing numba and for
its typing set-up on the first call (about 0.6 s of CPU with the machine code cached on disk),
more than a one-shot BFS on a graph of 16M edges spends. So each kernel call first looks for its
function in an extension module built ahead of time from the same generated source, for the
argument types of the call (dtype and read-only flag of each array, type of each scalar):
importing it takes well under a millisecond and imports neither numba nor scipy. A call whose
types the module lacks runs through the JIT, and the process records them; when it exits, a
detached process (:func:`build`) builds the module again for
every type seen so far (numba.pycc, a C compiler: a few seconds of CPU, once), and writes it
beside the generated source in the kernel cache with an index (JSON: kernel, argument types ->
exported function), both named for the source and for the CPU it is compiled for
(:func:`host`). Where no C compiler, numba.pycc or a writable cache exists, the build fails
quietly, the JIT stays, and the same build is not tried again for a day.
``GRSTREAM_KERNEL_AOT=0`` turns both the loading and the building off. The kernels are the
JIT's own functions compiled by the same compiler for the same types, with the GIL released as
the JIT's ``nogil`` releases it, so both give the same results.
"""
import atexit
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

#: the fields of /proc/cpuinfo (its first CPU's) that fix the instructions the module is
#: compiled for (:func:`host`)
CPU_FIELDS = frozenset({"vendor_id", "cpu family", "model", "flags", "CPU implementer",
                        "CPU architecture", "CPU variant", "CPU part", "Features"})
#: a build in progress (its lock file) is taken as abandoned after this many seconds
STALE_LOCK = 600
#: a build that failed (no C compiler, no numba.pycc) is not tried again for the same types
#: for this many seconds (its marker file), so that not every process's exit spawns it again
RETRY = 86400
REQUEST, FAILED = ".request.json", ".failed"


def enabled():
    return os.environ.get("GRSTREAM_KERNEL_AOT", "1") != "0"


def arg_code(a):
    """The argument type of ``a`` as the index keys it (None: not a type the module may take,
    and the JIT runs): a 1-D C-contiguous array's dtype, ``r`` where it is read-only; a numpy
    scalar's dtype; ``bool``, ``int``, ``float``."""
    if isinstance(a, np.ndarray):
        if a.ndim != 1 or not a.flags.c_contiguous or a.dtype.kind not in "biuf":
            return None
        return a.dtype.str + ("[]" if a.flags.writeable else "[]r")
    if isinstance(a, np.generic):
        return a.dtype.str if a.dtype.kind in "biuf" else None
    if isinstance(a, (bool, int, float)):
        return type(a).__name__
    return None


def host():
    """A tag of this machine's CPU. The module is compiled for the CPU that builds it
    (``target_cpu="host"``), so its index, module, lock and marker names carry the tag: a cache
    directory that machines of other CPUs share (a home directory over the network) keeps one
    module per CPU, and no process loads one with instructions its CPU lacks."""
    global _HOST
    if _HOST is None:
        text = [os.uname().machine]
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if not line.strip():
                        break
                    if line.partition(":")[0].strip() in CPU_FIELDS:
                        text.append(line.strip())
        except OSError:   # (no /proc: the machine's architecture alone)
            pass
        _HOST = hashlib.sha256("\n".join(text).encode()).hexdigest()[:8]
    return _HOST


_HOST = None


class Extension:
    """The extension module of one generated source (``digest``) for this machine's CPU in
    ``directory``, and the argument types this process called its kernels with that the module
    lacks."""

    def __init__(self, directory, digest, source_path):
        self.directory, self.source_path = directory, source_path
        self.digest = f"{digest}_{host()}"
        self.index_path = os.path.join(directory, f"grstream_aot_{self.digest}.json")
        self.functions, self.module_name = {}, None
        if enabled():
            try:
                with open(self.index_path) as f:
                    index = json.load(f)
                self.functions, self.module_name = index["functions"], index["module"]
            except (OSError, ValueError, KeyError):
                pass
        self.module = None
        self.found = {}     # (kernel, key) -> the module's function
        self.missed = {}    # kernel -> {key}

    def available(self):
        """Whether a module was built for this source (its kernels then load at no cost)."""
        return bool(self.functions)

    def function(self, kernel, args):
        """The module's ``kernel`` for the types of ``args``, or None (recorded, for the
        next build)."""
        if not enabled():
            return None
        codes = [arg_code(a) for a in args]
        if None in codes:
            return None
        key = ",".join(codes)
        fn = self.found.get((kernel, key))
        if fn is not None:
            return fn
        name = self.functions.get(kernel, {}).get(key)
        module = self._import() if name is not None else None
        if module is not None:
            fn = self.found[(kernel, key)] = getattr(module, name)
            return fn
        if key not in self.missed.setdefault(kernel, set()):
            self.missed[kernel].add(key)
            _PENDING[self.digest] = self
        return None

    def _import(self):
        if self.module is None and self.module_name is not None:
            path = os.path.join(self.directory, self.module_name + _suffix())
            try:
                loader = importlib.machinery.ExtensionFileLoader(self.module_name, path)
                spec = importlib.util.spec_from_file_location(self.module_name, path, loader=loader)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self.module = module
            except (ImportError, OSError):
                self.functions, self.module_name = {}, None   # (broken: the JIT runs)
        return self.module

    def request(self):
        """{kernel: [keys]}: every type of the module and of this process's calls, or None where
        the module has them all."""
        if not any(self.missed.values()):
            return None
        out = {k: set(v) for k, v in self.functions.items()}
        for kernel, keys in self.missed.items():
            out.setdefault(kernel, set()).update(keys)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def write_request(self):
        """The path of a request to build the module for every type seen (None: nothing to
        build, another process builds it, or the same build failed here within RETRY seconds);
        the types missed are then forgotten."""
        functions = self.request()
        if functions is None or not enabled():
            return None
        text = json.dumps(functions, sort_keys=True)
        name = f"grstream_aot_{self.digest}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"
        stem = os.path.join(self.directory, name)
        lock = os.path.join(self.directory, f"grstream_aot_{self.digest}.lock")
        if _younger(stem + FAILED, RETRY) or not _take(lock):
            return None
        try:
            with open(stem + REQUEST, "w") as f:
                json.dump({"source": self.source_path, "module": name, "functions": functions,
                           "index": self.index_path, "lock": lock}, f)
        except OSError:
            _remove(lock)
            return None
        self.missed = {}
        return stem + REQUEST


def _younger(path, seconds):
    """Whether ``path`` exists and was written less than ``seconds`` ago."""
    try:
        return time.time() - os.path.getmtime(path) < seconds
    except OSError:
        return False


def _take(lock):
    """Create ``lock`` (exclusively: of processes exiting together, one builds), unless another
    process holds it; one older than STALE_LOCK is taken as abandoned and replaced."""
    for _ in range(2):
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            if _younger(lock, STALE_LOCK):
                return False
            _remove(lock)
        except OSError:
            return False
    return False


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


_PENDING = {}   # digest -> Extension with types missed in this process


def build_pending(wait=False):
    """Build the modules of every source whose kernels this process called with types their
    module lacks, one after the other in one detached process (at exit; ``wait``: now, until
    the builds end). Returns how many were requested."""
    requests = [r for r in (ext.write_request() for ext in list(_PENDING.values())) if r]
    _PENDING.clear()
    if not requests:
        return 0
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-c", "import sys; from grstream.backends.cpu.aot import build_all; "
           "build_all(sys.argv[1:])", *requests]
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, env=env)
    try:
        if wait:
            subprocess.run(cmd, check=False, **quiet)
        else:
            subprocess.Popen(cmd, start_new_session=True, **quiet)
    except OSError:   # (no process to build in: the JIT stays, the locks go stale)
        return 0
    return len(requests)


atexit.register(build_pending)


def _suffix():
    return importlib.machinery.EXTENSION_SUFFIXES[0]


# ---------------------------------------------------------------------- the build
def _type(code):
    from numba import from_dtype, types
    if code in ("bool", "int", "float"):
        return {"bool": types.boolean, "int": types.int64, "float": types.float64}[code]
    if "[]" in code:
        dtype, readonly = code.split("[]")
        return types.Array(from_dtype(np.dtype(dtype)), 1, "C", readonly=readonly == "r")
    return from_dtype(np.dtype(code))


def build_all(requests):
    """Build the modules of ``requests`` (paths) one after the other; one that fails (no C
    compiler, no numba.pycc) leaves its kernels to the JIT and a marker that holds the same
    request back for RETRY seconds. The builds yield the CPU to other work (nice 10): nothing
    waits for them but a later process."""
    try:
        os.nice(10)
    except OSError:
        pass
    for request in requests:
        try:
            build(request)
        except Exception:   # (the JIT stays: a failed build changes no result)
            try:
                with open(request[:-len(REQUEST)] + FAILED, "w"):
                    pass
            except OSError:
                pass


def build(request_path):
    """Compile the request's kernels with numba.pycc into its module, then point the index at
    it (both replaced atomically). A failure leaves the JIT to run the kernels."""
    import shutil
    import tempfile
    import warnings
    with open(request_path) as f:
        req = json.load(f)
    directory = os.path.dirname(request_path)
    tmp = tempfile.mkdtemp(dir=directory, prefix=".build-")
    try:
        warnings.simplefilter("ignore")   # (numba.pycc is pending deprecation)
        from numba import types
        from numba.pycc import CC, compiler

        class Released(compiler.Flags):
            """The exported functions release the GIL, as the JIT's ``nogil`` kernels do (the
            executor runs parts of a push on several threads)."""
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.release_gil = True
        compiler.Flags = Released
        name = os.path.basename(req["source"])[:-3]
        spec = importlib.util.spec_from_file_location(name, req["source"])
        source = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(source)
        cc = CC(req["module"], source_module=source)
        cc.output_dir, cc.target_cpu = tmp, "host"
        functions = {}
        for kernel, keys in req["functions"].items():
            for i, key in enumerate(keys):
                name = f"{kernel}_{i}"
                cc.export(name, types.int64(*[_type(c) for c in key.split(",")]))(
                    getattr(source, kernel).py_func)
                functions.setdefault(kernel, {})[key] = name
        cc.compile()
        os.replace(os.path.join(tmp, cc.output_file),
                   os.path.join(directory, req["module"] + _suffix()))
        index = req["index"] + f".{os.getpid()}.tmp"
        with open(index, "w") as f:
            json.dump({"module": req["module"], "functions": functions}, f)
        os.replace(index, req["index"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for path in (request_path, req["lock"]):
            _remove(path)

