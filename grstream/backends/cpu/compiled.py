"""Compiled push kernels of the CPU executor, generated from the GAS program (numba).

The program stays the one source: :func:`grstream.program.scalar.scalar_method` turns its
checked ``gather_map`` and ``apply`` into scalar functions, and this module splices them into
two loop skeletons, compiled by numba:

``push_<d>``  for each sender, for each of its edges along direction ``d``: the message
              ``gather_map`` computes (sender and receiver in the roles of the receiver's pull
              gather), cast to the message dtype, combined into the receiver's accumulator with
              the program's monoid; the first message of a receiver flags it and appends it to
              the list of receivers (one pass over the edges, no per-edge temporaries);
``apply_all`` for each receiver: ``apply`` on its fields and its combined message, the
              written fields stored (in ``nxt``, and in ``cur`` for asynchronous plans) and the
              changed receivers listed.

A third, fixed skeleton, ``sum_rows`` (:data:`SUM_ROWS`), is the pull gather of a summed
message that is a field of the other end over selected rows (kernels.py uses it).

Which programs qualify: those that push (``ProgramSpec.push_ok``) over an idempotent monoid
(min, max, or, and: the order the messages arrive in changes nothing, so the result is the
numpy path's bit for bit), without scatter or edge state, whose fields, message and edge
properties keep numpy's arithmetic on scalars (grstream/program/scalar.py ``qualifies``).
Others, and every program where numba is not installed, run the numpy passes.

The generated module is written to a cache directory (``GRSTREAM_KERNEL_CACHE``, else
``~/.cache/grstream/kernels``, else a per-user directory under the system's temporary one:
the first writable) under a name hashed from its text. A kernel call takes its function from the
extension module built ahead of time from that text for the call's argument types (aot.py: no
numba imported); else the text is imported from there (numba imported then, once), so that
numba's ``cache=True`` keeps the machine code beside it: a later process loads it instead of
compiling.
"""
import hashlib
import importlib.util
import os
import sys

import numpy as np

from ...program.scalar import qualifies, scalar_method
from . import aot

#: senders' edge directions: (indptr, neighbour ids, edge property side, sender role,
#: receiver role) of each gather direction
DIRECTIONS = {"in": ("out/indptr", "out/dst", "out", "src", "dst"),
              "out": ("in/indptr", "in/src", "in", "dst", "src")}
_COMBINE = {"min": "np.minimum", "max": "np.maximum", "or": "np.logical_or",
            "and": "np.logical_and"}
KERNEL_CHOICES = ("auto", "numba", "numpy")


def why_not(spec, stored_dtypes):
    """Why ``spec`` runs on numpy whatever the option ("" when it qualifies)."""
    if not spec.push_ok:
        return "the program does not push"
    if spec.gather_reduce.name not in _COMBINE:
        return f"gather_reduce {spec.gather_reduce.name} is not idempotent"
    return qualifies(spec, stored_dtypes)[1]


def numba_missing():
    """Why numba cannot be imported ("" where it is installed), found without importing it (an
    import costs a run that does not compile a large share of its time)."""
    try:
        found = importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError) as exc:
        return str(exc)
    return "" if found else "No module named 'numba'"


def _dt(dtype):
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def push_kernels(spec, dirs):
    """The :class:`PushKernels` of a program class over ``dirs``, generated once per process."""
    key = (spec.owner, tuple(dirs))
    kernels = _KERNELS.get(key)
    if kernels is None:
        kernels = _KERNELS[key] = PushKernels(spec, dirs)
    return kernels


_KERNELS = {}


def loaded(spec, dirs):
    """Whether the kernels of ``spec`` over ``dirs`` load at no cost: this process has loaded
    them through numba, or an extension module holds them (aot.py)."""
    kernels = _KERNELS.get((spec.owner, tuple(dirs)))
    return kernels is not None and kernels.ready()


class Generated:
    """A generated ``source`` of numba kernels: written to the cache directory, called through
    its extension module where one was built for the call's types (aot.py), else the JIT."""

    def __init__(self, source):
        self.source = source
        self.path, digest = write_module(source)
        self.aot = aot.Extension(os.path.dirname(self.path), digest, self.path)
        self._jit = None

    @property
    def module(self):
        """The generated module through numba's JIT (imported on first use)."""
        if self._jit is None:
            self._jit = load_module(self.source)
        return self._jit

    def ready(self):
        """Whether calls cost no loading: the JIT module is imported, or an extension module
        was built for this source."""
        return self._jit is not None or self.aot.available()

    def _run(self, kernel, args):
        fn = self.aot.function(kernel, args) or getattr(self.module, kernel)
        return int(fn(*args))


#: the pull gather of a program whose message is a field of the other end, summed over the
#: edges of selected rows (betweenness's scheduled passes: one level's vertices), without the
#: per-edge positions, neighbour ids and matrix the numpy path builds; each row's sum adds its
#: edges in CSR order from 0, as scipy's CSR product does, so the sums are the same
SUM_ROWS = """import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model='numpy')
def sum_rows(indptr, ids, rows, x, out):
    m = 0
    for i in range(rows.shape[0]):
        r = rows[i]
        s = out[i]
        for e in range(indptr[r], indptr[r + 1]):
            s += x[ids[e]]
        out[i] = s
        m += indptr[r + 1] - indptr[r]
    return m
"""


def row_sums(choice, edges, threshold):
    """The compiled :data:`SUM_ROWS` for a run over ``edges`` edges under the option
    ``kernels`` = ``choice``, or None (the numpy passes): "numpy" never, "numba" wherever numba
    is installed, "auto" where it loads at no cost (built as an extension module, or imported
    already) or once the edges of this process's runs that could use it reach ``threshold``
    (as the compiled push pays for loading numba)."""
    global _ROW_SUMS, _ROW_EDGES
    if choice == "numpy" or numba_missing():
        return None
    if _ROW_SUMS is None:
        try:
            _ROW_SUMS = Generated(SUM_ROWS)
        except OSError:   # (no writable cache directory)
            return None
    _ROW_EDGES += edges
    if choice == "auto" and not (_ROW_SUMS.ready() or _ROW_EDGES >= threshold):
        return None
    return _ROW_SUMS


_ROW_SUMS = None
_ROW_EDGES = 0   # edges of this process's runs that could use the row sums so far


class PushKernels(Generated):
    """The compiled push and apply of one program class over ``dirs`` (gather directions)."""

    def __init__(self, spec, dirs):
        self.spec, self.dirs = spec, tuple(dirs)
        self.absorbing = spec.push_field is not None
        gm = scalar_method(spec, "gather_map", "gather_map")
        ap = scalar_method(spec, "apply", "apply")
        self.gather_args, self.apply_args, self.writes = gm.args, ap.args, ap.writes
        # vertex arrays (fields and built-ins, each once), edge properties, params
        reads = [k for k in gm.args + ap.args if k[0] == "vertex"]
        self.vertex = sorted({k[2] for k in reads} | ({spec.push_field} - {None}))
        self.edge = sorted({k[1] for k in gm.args if k[0] == "edge"})
        self.params = sorted({k[1] for k in gm.args + ap.args if k[0] == "param"})
        text = ["import numpy as np", "from numba import njit", "",
                _jit(gm.source), "", _jit(ap.source), ""]
        for d in self.dirs:
            text += [self._push(d), ""]
            if self.absorbing:
                text += [self._push_uniform(d), ""]
        text.append(self._apply())
        super().__init__("\n".join(text) + "\n")

    # ------------------------------------------------------------------ generation
    def _call(self, args, where):
        return ", ".join(where(k) for k in args)

    def _push(self, d):
        spec = self.spec
        _, _, _, sender, receiver = DIRECTIONS[d]
        hoisted, lines = {}, []

        def value(k):
            if k[0] == "vertex":
                index = "u" if k[1] == sender else "t"
                if index == "u":
                    hoisted.setdefault(k, f"s_{len(hoisted)}")
                    return hoisted[k]
                return f"V_{k[2]}[t]"
            if k[0] == "id":
                return "u" if k[1] == sender else "t"
            if k[0] == "edge":
                return f"E_{k[1]}[e]"
            return f"P_{k[1]}"
        call = self._call(self.gather_args, value)
        for k, name in hoisted.items():
            lines.append(f"        {name} = V_{k[2]}[u]")
        sig = ", ".join(["indptr", "ids", "lo", "senders", "acc", "ident", "flag", "found", "k"]
                        + [f"V_{f}" for f in self.vertex] + [f"E_{p}" for p in self.edge]
                        + [f"P_{p}" for p in self.params])
        return "\n".join([
            "@njit(cache=True, nogil=True, error_model='numpy')",
            f"def push_{d}({sig}):",
            "    for i in range(senders.shape[0]):",
            "        u = senders[i]",
            "        r = u - lo",
            *lines,
            "        for e in range(indptr[r], indptr[r + 1]):",
            "            t = ids[e]",
            f"            m = {_dt(spec.gather_dtype)}(gather_map({call}))",
            *self._receive(),
            "    return k"])

    def _receive(self, drop=True):
        """The lines that combine message ``m`` into receiver ``t``'s accumulator and list the
        receiver on its first message (its accumulator then holds the identity). Absorbing
        programs (grstream/program/push.py): apply keeps f = M(v.f, acc), so a message that
        M(v.f, m) leaves at v.f changes nothing and is dropped; a message kept is then never the
        identity, and the accumulator's identity marks the receivers not reached yet (no flags
        read; ``drop``: the test is made here)."""
        if self.absorbing:
            first = [*(self._drop() if drop else []), "            a = acc[t]",
                     "            if a == ident:"]
        else:
            first = ["            if not flag[t]:", "                flag[t] = True"]
        combine = _COMBINE[self.spec.gather_reduce.name]
        return [*first,
                "                acc[t] = m",
                "                found[k] = t",
                "                k += 1",
                "            else:",
                *([] if self.absorbing else ["                a = acc[t]"]),
                f"                c = {combine}(a, m)",
                "                if c != a:",
                "                    acc[t] = c"]

    def _drop(self):
        """An absorbing program's test: a message ``m`` that M(v.f, m) leaves at v.f is
        dropped."""
        f = f"V_{self.spec.push_field}"
        combine = _COMBINE[self.spec.gather_reduce.name]
        return [f"            if {combine}({f}[t], m) == {f}[t]:", "                continue"]

    def _push_uniform(self, d):
        """``push_uniform_<d>``: the senders' one message ``m`` (a message that reads only the
        sender, equal for every sender: BFS's level just reached) along their edges, for
        absorbing programs. A receiver's bit in ``seen`` (one bit a vertex: n / 8 bytes, which
        stay in cache where the fields do not) is set at its first ``m``: every later ``m`` to
        it changes nothing (the monoid is idempotent) and costs one bit test, where the general
        kernel reads the receiver's field; the bits hold while ``m`` does. With ``fold`` (every
        message since the last combine is this ``m``) a receiver is only flagged: its combined
        message is ``m``, and no accumulator or list is touched, so that parts of the senders
        may run on several threads at once (a bit or flag written twice changes nothing)."""
        f = f"V_{self.spec.push_field}"
        return "\n".join([
            "@njit(cache=True, nogil=True, error_model='numpy')",
            f"def push_uniform_{d}(indptr, ids, lo, senders, acc, ident, seen, flag, found, k, m, "
            f"fold, {f}):",
            "    for i in range(senders.shape[0]):",
            "        r = senders[i] - lo",
            "        for e in range(indptr[r], indptr[r + 1]):",
            "            t = ids[e]",
            "            bit = np.uint64(1) << np.uint64(t & 63)",
            "            word = seen[t >> 6]",
            "            if word & bit:",
            "                continue",
            "            seen[t >> 6] = word | bit",
            *self._drop(),
            "            if fold:",
            "                flag[t] = True",
            "                continue",
            *self._receive(drop=False),
            "    return k"])

    def _apply(self):
        def value(k):
            if k[0] == "vertex":
                return f"V_{k[2]}[v]"
            if k[0] == "id":
                return "v"
            if k[0] == "acc":
                return "a"
            return f"P_{k[1]}"
        call = self._call(self.apply_args, value)
        stores = []
        for i, f in enumerate(self.writes):
            stores.append(f"        N_{f}[v] = res[{i + 1}]")
            stores.append(f"        if write_cur:\n            C_{f}[v] = res[{i + 1}]")
        sig = ", ".join(["receivers", "vals", "changed", "write_cur"]
                        + [f"V_{f}" for f in self.vertex] + [f"N_{f}" for f in self.writes]
                        + [f"C_{f}" for f in self.writes] + [f"P_{p}" for p in self.params])
        return "\n".join([
            "@njit(cache=True, nogil=True, error_model='numpy')",
            f"def apply_all({sig}):",
            "    c = 0",
            "    for i in range(receivers.shape[0]):",
            "        v = receivers[i]",
            "        a = vals[i]",
            f"        res = apply({call})",
            *stores,
            "        if res[0]:",
            "            changed[c] = v",
            "            c += 1",
            "    return c"])

    # ------------------------------------------------------------------ calls
    def push(self, d, indptr, ids, lo, senders, acc, ident, flag, found, k, vertex, edge, params):
        """Run ``push_<d>``; returns the receivers listed in ``found`` so far."""
        return self._run("push_" + d, (indptr, ids, lo, senders, acc, ident, flag, found, k,
                                       *[vertex[f] for f in self.vertex],
                                       *[edge[p] for p in self.edge],
                                       *[params[p] for p in self.params]))

    def push_uniform(self, d, indptr, ids, lo, senders, acc, ident, seen, flag, found, k, m,
                     fold, vertex):
        """Run ``push_uniform_<d>`` with the one message ``m``; returns the receivers listed in
        ``found`` so far."""
        return self._run("push_uniform_" + d, (indptr, ids, lo, senders, acc, ident, seen, flag,
                                               found, k, m, fold, vertex[self.spec.push_field]))

    def apply(self, receivers, vals, changed, write_cur, vertex, nxt, cur, params):
        """Run ``apply_all`` over ``receivers`` with their combined messages ``vals``; returns
        how many changed (listed in ``changed``)."""
        return self._run("apply_all", (receivers, vals, changed, write_cur,
                                       *[vertex[f] for f in self.vertex],
                                       *[nxt[f] for f in self.writes],
                                       *[cur[f] for f in self.writes],
                                       *[params[p] for p in self.params]))


def _jit(source):
    return "@njit(cache=True, nogil=True, error_model='numpy')\n" + source


# ---------------------------------------------------------------------- the module cache
def cache_dir():
    """The first writable of ``$GRSTREAM_KERNEL_CACHE``, ``~/.cache/grstream/kernels`` and a
    per-user directory under the system's temporary one."""
    candidates = [os.environ.get("GRSTREAM_KERNEL_CACHE"),
                  os.path.join(os.path.expanduser("~"), ".cache", "grstream", "kernels"), _TEMP]
    for path in candidates:
        if path is _TEMP:   # (tempfile imported only here: it imports shutil, bz2, lzma, random)
            import tempfile
            path = os.path.join(tempfile.gettempdir(), f"grstream-kernels-{os.getuid()}")
        if not path:
            continue
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK | os.X_OK):
            return path
    raise OSError("no writable directory for compiled kernels")


_MODULES = {}
_TEMP = object()   # cache_dir's last candidate


def write_module(source):
    """(path, digest): the generated ``source`` written once to the cache directory under a
    name hashed from it (atomically)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = os.path.join(cache_dir(), f"grstream_kernels_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    return path, digest


def load_module(source):
    """Import the generated ``source`` from the cache directory (:func:`write_module`), so that
    numba caches its machine code beside it."""
    path, digest = write_module(source)
    module = _MODULES.get(digest)
    if module is not None:
        return module
    name = f"grstream_kernels_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[digest] = module
    return module
