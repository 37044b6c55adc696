"""Run translated device functions on the host (g++) and the same Python methods on numpy.

The C harness fills ``g`` from the bytes of ``TranslatedProgram.pack_args`` (then points the
array members at its own buffers), evaluates gather_map on every edge, each aggregate and apply on
every vertex, then each aggregate's term over the state apply wrote, and writes the results back; it also reports the struct's member offsets so the
numpy ``args_dtype`` layout is checked against the C compiler's.
"""
import importlib.util
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from grstream.program.cuda_types import ctype

GXX = shutil.which("g++")
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if shutil.os.path.exists("/usr/local/bin/nvcc")
                                else None)
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not available")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not available")


def load_module(path, text):
    """Import ``text`` as a module from a real file, so inspect.getsource finds its classes."""
    path.write_text(text)
    name = f"grstream_test_{path.stem}_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def harness_source(t):
    spec = t.spec
    msg = t.msg_ctype
    gather = spec.has_gather
    props = t.edge_props.get("gather_map", [])
    lines = [
        "#include <stdio.h>", "#include <stdlib.h>", "#include <stddef.h>", t.source,
        "template <typename T> static T* readn(FILE* f, long long n) {",
        "    T* p = (T*)malloc(sizeof(T) * (n ? n : 1));",
        "    if (fread(p, sizeof(T), n, f) != (size_t)n) exit(3);",
        "    return p;", "}",
        "int main(int argc, char** argv) {",
        "    FILE* in = fopen(argv[1], \"rb\"); FILE* out = fopen(argv[2], \"wb\");",
        "    long long hdr[3];",
        "    if (fread(hdr, 8, 3, in) != 3) return 3;",
        "    long long n = hdr[0], E = hdr[1];",
        "    if (hdr[2] != (long long)sizeof(GasArgs)) { fprintf(stderr, \"sizeof(GasArgs) = %zu\\n\","
        " sizeof(GasArgs)); return 2; }",
        "    if (fread(&g, sizeof(GasArgs), 1, in) != 1) return 3;",
    ]
    for name in t.args_dtype.names:
        lines.append(f"    {{ long long off = offsetof(GasArgs, {name}); fwrite(&off, 8, 1, out); }}")
    for f, c in t.field_ctypes.items():
        lines += [f"    g.cur_{f} = readn<{c}>(in, n);", f"    {c}* nxt_{f} = readn<{c}>(in, n);",
                  f"    g.nxt_{f} = nxt_{f};"]
    lines += ["    g.in_degree = readn<long long>(in, n);", "    g.out_degree = readn<long long>(in, n);",
              "    long long* src = readn<long long>(in, E);", "    long long* dst = readn<long long>(in, E);"]
    for p in props:
        lines.append(f"    {ctype(t.edge_dtypes[p])}* e_{p} = readn<{ctype(t.edge_dtypes[p])}>(in, E);")
    lines.append(f"    {msg}* acc = readn<{msg}>(in, n);")
    if gather:
        args = "".join(f", e_{p}[i]" for p in props)
        lines += [f"    {msg}* msg = ({msg}*)malloc(sizeof({msg}) * (E ? E : 1));",
                  f"    for (long long i = 0; i < E; i++) msg[i] = grstream_gather_map(src[i], dst[i]{args});",
                  f"    fwrite(msg, sizeof({msg}), E, out);"]
    for a, dt in spec.aggregate_dtype.items():
        c = ctype(dt)
        lines += [f"    {c}* agg_{a} = ({c}*)malloc(sizeof({c}) * n);",
                  f"    for (long long v = 0; v < n; v++) agg_{a}[v] = grstream_aggregate_{a}(v);",
                  f"    fwrite(agg_{a}, sizeof({c}), n, out);"]
    lines += ["    bool* changed = (bool*)malloc(n);",
              "    for (long long v = 0; v < n; v++) changed[v] = grstream_apply(v, acc[v]);",
              "    fwrite(changed, 1, n, out);"]
    for a, dt in spec.aggregate_dtype.items():   # each term right after apply wrote the vertex
        c = ctype(dt)
        lines += [f"    for (long long v = 0; v < n; v++) agg_{a}[v] = grstream_aggnext_{a}(v);",
                  f"    fwrite(agg_{a}, sizeof({c}), n, out);"]
    for f, c in t.field_ctypes.items():
        lines.append(f"    fwrite(nxt_{f}, sizeof({c}), n, out);")
    lines += ["    fclose(out);", "    return 0;", "}"]
    return "\n".join(lines) + "\n"


class HostProgram:
    """A translated program compiled for the host."""

    def __init__(self, t, workdir):
        self.t = t
        self.workdir = workdir
        src = workdir / f"{t.name}_harness.cpp"
        src.write_text(harness_source(t))
        self.exe = workdir / f"{t.name}_harness"
        proc = subprocess.run([GXX, "-std=c++17", "-O2", "-ffp-contract=off", "-fno-fast-math",
                               "-Wall", "-Wno-unused-variable", "-Wno-unused-function",
                               "-o", str(self.exe), str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"g++ failed:\n{proc.stderr}\n{t.numbered_source()}")

    def run(self, program, inputs):
        """Evaluate on the host; ``inputs`` as built by :func:`random_inputs`."""
        t = self.t
        spec = t.spec
        n, E = inputs["n"], len(inputs["src"])
        pointers = {m: 0 for m in t.pointer_members}
        parts = [np.array([n, E, t.args_dtype.itemsize], np.int64).tobytes(),
                 t.pack_args(program, pointers)]
        for f, dt in spec.vertex_fields.items():
            parts += [inputs["cur"][f].astype(dt).tobytes(), inputs["nxt"][f].astype(dt).tobytes()]
        parts += [inputs["in_degree"].tobytes(), inputs["out_degree"].tobytes(),
                  inputs["src"].tobytes(), inputs["dst"].tobytes()]
        for p in t.edge_props.get("gather_map", []):
            parts.append(inputs["edge"][p].astype(t.edge_dtypes[p]).tobytes())
        parts.append(inputs["acc"].astype(spec.gather_dtype).tobytes())
        fin, fout = self.workdir / "in.bin", self.workdir / "out.bin"
        fin.write_bytes(b"".join(parts))
        proc = subprocess.run([str(self.exe), str(fin), str(fout)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        buf = fout.read_bytes()
        pos = 0

        def take(dtype, count):
            nonlocal pos
            dt = np.dtype(dtype)
            arr = np.frombuffer(buf, dt, count, pos)
            pos += dt.itemsize * count
            return arr

        out = {"offsets": take(np.int64, len(t.args_dtype.names))}
        if spec.has_gather:
            out["msg"] = take(spec.gather_dtype, E)
        out["aggregates"] = {a: take(dt, n) for a, dt in spec.aggregate_dtype.items()}
        out["changed"] = take(np.bool_, n)
        out["aggnext"] = {a: take(dt, n) for a, dt in spec.aggregate_dtype.items()}
        out["nxt"] = {f: take(dt, n) for f, dt in spec.vertex_fields.items()}
        assert pos == len(buf)
        return out


def _view(fields, idx, inputs):
    ns = {f: arr[idx] for f, arr in fields.items()}
    ns["id"] = np.asarray(idx, np.int64) if not isinstance(idx, slice) else np.arange(inputs["n"])
    ns["in_degree"] = inputs["in_degree"][idx]
    ns["out_degree"] = inputs["out_degree"][idx]
    return SimpleNamespace(**ns)


def numpy_reference(program, inputs):
    """The same methods evaluated vectorised on numpy arrays, as the CPU engine does."""
    spec = type(program).spec
    n, E = inputs["n"], len(inputs["src"])
    cur = {f: inputs["cur"][f].astype(dt) for f, dt in spec.vertex_fields.items()}
    out = {}
    with np.errstate(all="ignore"):
        if spec.has_gather:
            edge = SimpleNamespace(**inputs["edge"])
            msg = program.gather_map(_view(cur, inputs["src"], inputs),
                                     _view(cur, inputs["dst"], inputs), edge)
            out["msg"] = np.broadcast_to(np.asarray(msg), (E,)).astype(spec.gather_dtype)
        out["aggregates"] = {}
        for a, dt in spec.aggregate_dtype.items():
            term = getattr(program, "aggregate_" + a)(_view(cur, slice(None), inputs))
            out["aggregates"][a] = np.broadcast_to(np.asarray(term), (n,)).astype(dt)
        v = _view({f: arr.copy() for f, arr in cur.items()}, slice(None), inputs)
        changed = program.apply(v, inputs["acc"].astype(spec.gather_dtype))
        out["changed"] = np.broadcast_to(np.asarray(changed), (n,)).astype(bool)
        out["nxt"] = {}
        for f, dt in spec.vertex_fields.items():
            if f in spec.analysis.apply_writes:
                out["nxt"][f] = np.broadcast_to(np.asarray(getattr(v, f)), (n,)).astype(dt)
            else:
                out["nxt"][f] = inputs["nxt"][f].astype(dt)
        # each term over the state apply wrote (as stored: its fields' dtypes), the rest as it was
        after = _view({f: out["nxt"][f] if f in spec.analysis.apply_writes else arr for f, arr in cur.items()},
                      slice(None), inputs)
        out["aggnext"] = {a: np.broadcast_to(np.asarray(getattr(program, "aggregate_" + a)(after)), (n,)).astype(dt)
                          for a, dt in spec.aggregate_dtype.items()}
    return out


def random_inputs(spec, rng, n=64, m=256, values=None, edge_values=None):
    """Random state, degrees, edges, edge properties and accumulators for ``spec``.

    ``values(field, dtype, size)`` and ``edge_values(prop, size)`` override the default draws.
    """
    def draw(dtype, size):
        dt = np.dtype(dtype)
        if dt.kind == "b":
            return rng.random(size) < 0.5
        if dt.kind == "u":
            return rng.integers(0, 12, size).astype(dt)
        if dt.kind == "i":
            return rng.integers(-9, 10, size).astype(dt)
        return (rng.standard_normal(size) * 4).astype(dt)

    cur = {f: (values(f, dt, n) if values else draw(dt, n)) for f, dt in spec.vertex_fields.items()}
    nxt = {f: draw(dt, n) for f, dt in spec.vertex_fields.items()}
    props = {p: (edge_values(p, m) if edge_values else rng.random(m) * 10) for p in spec.edge_reads}
    return {
        "n": n, "cur": cur, "nxt": nxt,
        "in_degree": rng.integers(0, 4, n).astype(np.int64),
        "out_degree": rng.integers(0, 4, n).astype(np.int64),
        "src": rng.integers(0, n, m).astype(np.int64),
        "dst": rng.integers(0, n, m).astype(np.int64),
        "edge": props,
        "acc": draw(spec.gather_dtype, n),
    }


def assert_same(host, ref, exact=True, rtol=1e-6):
    """Host results equal numpy's: bit-for-bit (NaN == NaN) or within ``rtol`` for floats."""
    def check(a, b, what):
        assert a.dtype == b.dtype, what
        if exact or a.dtype.kind != "f":
            np.testing.assert_array_equal(a, b, err_msg=what)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)

    if "msg" in ref:
        check(host["msg"], ref["msg"], "gather_map")
    for a in ref["aggregates"]:
        check(host["aggregates"][a], ref["aggregates"][a], f"aggregate {a}")
    check(host["changed"], ref["changed"], "apply's changed mask")
    for a in ref["aggnext"]:
        check(host["aggnext"][a], ref["aggnext"][a], f"aggregate {a} after apply")
    for f in ref["nxt"]:
        check(host["nxt"][f], ref["nxt"][f], f"apply's {f}")
