"""min / max reductions keep NaN as numpy's minimum / maximum do, in every GPU combine path:
the kernels' combine (thread loops, warp and block trees: ``Monoid.cuda_combine``) and the
compare-and-swap atomic of the merge-path gather (``cuda_prelude``), compiled with g++ here."""
import subprocess

import numpy as np
import pytest

from grstream.program import cuda_prelude, monoid

from .host_harness import GXX, needs_gxx

FOLDS = r"""
#include <stdio.h>
#include <stdlib.h>
template <typename T> static T comb(T a, T b) { return (T)(COMBINE); }
template <typename T> static T cas(T cur, T val) { return (T)(ATOMIC); }
template <typename T> static void run(FILE* in, FILE* out, T identity) {
    long long n;
    if (fread(&n, 8, 1, in) != 1) exit(3);
    T* x = (T*)malloc(sizeof(T) * n);
    if (fread(x, sizeof(T), n, in) != (size_t)n) exit(3);
    T r[4];
    r[0] = identity; for (long long i = 0; i < n; ++i) r[0] = comb(r[0], x[i]);        // thread loop
    r[1] = identity; for (long long i = n - 1; i >= 0; --i) r[1] = comb(r[1], x[i]);   // other order
    T* t = (T*)malloc(sizeof(T) * n);                                                   // tree
    for (long long i = 0; i < n; ++i) t[i] = x[i];
    for (long long w = n; w > 1; w = (w + 1) / 2)
        for (long long i = 0; i < w / 2; ++i) t[i] = comb(t[i], t[i + (w + 1) / 2]);
    r[2] = comb(identity, t[0]);
    r[3] = identity; for (long long i = 0; i < n; ++i) r[3] = cas(r[3], x[i]);         // atomics
    fwrite(r, sizeof(T), 4, out);
}
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "rb"); FILE* out = fopen(argv[2], "wb");
    while (!feof(in)) {
        int kind;
        if (fread(&kind, 4, 1, in) != 1) break;
        if (kind == 4) { float id; if (fread(&id, 4, 1, in) != 1) return 3; run<float>(in, out, id); }
        else { double id; if (fread(&id, 8, 1, in) != 1) return 3; run<double>(in, out, id); }
    }
    fclose(out);
    return 0;
}
"""


def cases():
    base = np.array([3.0, -1.5, 7.25, 0.0, 2.0, -8.0, 5.5])
    out = [("none", base)]
    for pos in (0, 3, len(base) - 1):
        x = base.copy()
        x[pos] = np.nan
        out.append((f"nan@{pos}", x))
    out.append(("all-nan", np.full(5, np.nan)))
    return out


@needs_gxx
@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_propagate_nan_everywhere(tmp_path, name):
    m = getattr(monoid, name)
    src = FOLDS.replace("COMBINE", m.cuda_combine.format(a="a", b="b")).replace(
        "ATOMIC", cuda_prelude._COMBINE[name])
    exe = tmp_path / "folds"
    (tmp_path / "folds.cpp").write_text(src)
    subprocess.run([GXX, "-O2", str(tmp_path / "folds.cpp"), "-o", str(exe)], check=True)
    blob, expect = bytearray(), []
    for dt in (np.float32, np.float64):
        for _, x in cases():
            x = x.astype(dt)
            blob += np.int32(np.dtype(dt).itemsize).tobytes() + m.identity(dt).tobytes()
            blob += np.int64(x.size).tobytes() + x.tobytes()
            expect.append((dt, m.ufunc.reduce(x)))
    (tmp_path / "in.bin").write_bytes(bytes(blob))
    subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], check=True)
    raw, off = (tmp_path / "out.bin").read_bytes(), 0
    labels = [c for c, _ in cases()] * 2
    for label, (dt, want) in zip(labels, expect):
        size = np.dtype(dt).itemsize
        got = np.frombuffer(raw[off:off + 4 * size], dtype=dt)
        off += 4 * size
        for path, value in zip(("thread", "reverse", "tree", "atomic"), got):
            if np.isnan(want):
                assert np.isnan(value), (name, label, dt, path)
            else:
                assert value == want, (name, label, dt, path)
