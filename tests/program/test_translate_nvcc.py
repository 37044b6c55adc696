"""Every sample and shipped program translates and compiles with nvcc for sm_90."""
import subprocess


from grstream.program.cuda import translate
from grstream.program.cuda_types import ctype

from .host_harness import NVCC, needs_nvcc
from .test_translate_semantics import ALL


def kernel_source(t):
    """The translation plus a kernel calling every device function and atomic, so none is dead."""
    spec = t.spec
    msg = t.msg_ctype
    body = ["    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;",
            f"    {msg} acc = ({msg})0;"]
    if spec.has_gather:
        props = "".join(f", ({ctype(t.edge_dtypes[p])})i" for p in t.edge_props["gather_map"])
        body += [f"    acc = grstream_gather_map(i, i + 1{props});",
                 f"    {spec.gather_reduce.cuda_atomic}(&msgs[i / 2], acc);"]
    body.append("    changed[i] = grstream_apply(i, acc);")
    if spec.has_scatter:
        props = "".join(f", ({ctype(t.edge_dtypes[p])})i" for p in t.edge_props["scatter"])
        body.append(f"    grstream_scatter(i, i + 1, i{props});")
    for a, m in spec.aggregates.items():
        c = ctype(spec.aggregate_dtype[a])
        body.append(f"    {m.cuda_atomic}(({c}*)&aggs[{list(spec.aggregates).index(a)}], "
                    f"grstream_aggregate_{a}(i));")
    return (t.source + f"\n__global__ void grstream_test_{t.name}({msg}* msgs, bool* changed, "
            f"double* aggs) {{\n" + "\n".join(body) + "\n}\n")


@needs_nvcc
def test_all_programs_compile_with_nvcc(tmp_path):
    procs = []
    for cls in ALL:
        t = translate(cls)
        src = tmp_path / f"{cls.__module__.split('.')[-1]}_{cls.__name__}.cu"
        src.write_text(kernel_source(t))
        procs.append((cls, t, subprocess.Popen(
            [NVCC, "-arch=sm_90", "-c", "-Werror", "all-warnings", "-o", str(src.with_suffix(".o")),
             str(src)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    failures = []
    for cls, t, proc in procs:
        out, _ = proc.communicate(timeout=300)
        if proc.returncode != 0:
            failures.append(f"{cls.__name__}:\n{out}\n{t.numbered_source()}")
    assert not failures, "\n\n".join(failures)


@needs_nvcc
def test_scatter_programs_compile_with_nvcc(tmp_path):
    from ..engine.test_scatter import CountedBFS, EdgeRank, WeightDecay
    for cls in (CountedBFS, EdgeRank, WeightDecay):
        t = translate(cls)
        assert "grstream_scatter(long long src, long long dst, long long e)" in t.source
        src = tmp_path / f"{cls.__name__}.cu"
        src.write_text(kernel_source(t))
        proc = subprocess.run([NVCC, "-arch=sm_90", "-c", "-Werror", "all-warnings", "-o",
                               str(src.with_suffix(".o")), str(src)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr + t.numbered_source()


@needs_nvcc
def test_nvcc_rejects_a_broken_translation(tmp_path):
    """The compile check is real: a corrupted source fails."""
    t = translate(ALL[0])
    src = tmp_path / "broken.cu"
    src.write_text(kernel_source(t).replace("grstream_apply(long long v", "grstream_apply(long long v, undefined_t w"))
    proc = subprocess.run([NVCC, "-arch=sm_90", "-c", "-o", str(tmp_path / "b.o"), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
