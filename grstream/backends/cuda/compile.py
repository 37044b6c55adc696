"""Build a program's CUDA module: translate, splice into the skeletons, compile once, cache.

Source generation (:func:`module_source`) and the offline check (:func:`nvcc_check`) need no
PyCUDA, so CI exercises them; :func:`load_module` needs PyCUDA and a current context.

Caches: in memory per (context handle, key) and on disk as cubins named by :func:`cache_key`
(the hash of the complete source, the nvcc options and the architecture) under
``~/.cache/grstream/cuda`` (``GRSTREAM_CACHE_DIR`` overrides): a cached module is loaded
straight from its cubin (``module_from_buffer``), with no nvcc call at all -- PyCUDA's own cache
runs nvcc's preprocessor on every load to find its key (about 0.15 s a module).
"""
import hashlib
import os
import shutil
import subprocess
import tempfile

from ...errors import KernelCompileError
from .codegen import generate
from .skeletons import skeleton_hash

NVCC_OPTIONS = ["-O3"]
_MODULES = {}


def cache_dir():
    """Directory of the on-disk compile cache."""
    base = os.environ.get("GRSTREAM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "grstream")
    path = os.path.join(base, "cuda")
    os.makedirs(path, exist_ok=True)
    return path


def module_source(spec, id_dtype, edge_dtypes=None, hoist=None, id_bits=0):
    """Translate ``spec``'s program and splice it into the kernel skeletons (a KernelSource);
    ``id_bits`` > 0: for a compressed store's ids of that many bits (:mod:`.blockids`).

    The translator's ProgramError propagates unchanged (it names the method and line).
    """
    from ...program.cuda import translate
    translated = translate(spec, edge_dtypes=edge_dtypes or None)
    return generate(translated, spec, id_dtype, edge_dtypes, hoist=hoist, id_bits=id_bits)


def cache_key(ks, arch):
    """Key of a compiled module: translation key + skeleton hash + arch + dtypes."""
    h = hashlib.sha256()
    for part in (getattr(getattr(ks, "translated", None), "key", ""), skeleton_hash(), arch,
                 str(ks.msg_dtype), str(ks.id_dtype), ks.source, " ".join(NVCC_OPTIONS)):
        h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def device_arch(device):
    major, minor = device.compute_capability()
    return f"sm_{major}{minor}"


def context_key(ctx):
    """The identity of a CUDA context: its ``CUcontext`` handle.

    ``Context.get_current()`` returns a new wrapper at every call, so the wrapper's ``id()`` may be
    reused by a wrapper of another context. A cached module holds a reference to its context
    (PyCUDA's modules keep theirs alive), so the handle is not reused while the entry exists.
    """
    return int(ctx.handle)


def load_module(ks, device=None):
    """Compile ``ks`` (or take it from a cache) for the current context's device.

    Raises
    ------
    KernelCompileError
        nvcc rejected the source; ``.source`` holds it, ``numbered_source()`` prints it with line
        numbers and ``.log`` holds the compiler output.
    """
    import pycuda.driver as cuda

    ctx = cuda.Context.get_current()
    device = device or ctx.get_device()
    arch = device_arch(device)
    key = (context_key(ctx), cache_key(ks, arch))
    mod = _MODULES.get(key)
    if mod is not None:
        return mod
    path = os.path.join(cache_dir(), f"{key[1]}.cubin")
    mod = None
    try:
        with open(path, "rb") as fh:
            mod = cuda.module_from_buffer(fh.read())
    except OSError:   # not compiled on this machine yet
        pass
    except cuda.Error:   # a cubin this driver refuses (another toolkit's): compiled again
        pass
    if mod is None:
        mod = cuda.module_from_buffer(_compile(ks, arch, path))
    _MODULES[key] = mod
    return mod


def _compile(ks, arch, path):
    """nvcc ``ks.source`` into a cubin, kept at ``path`` (written whole, then renamed)."""
    import pycuda.driver as cuda
    from pycuda.compiler import compile as nvcc_compile

    try:
        cubin = nvcc_compile(ks.source, options=list(NVCC_OPTIONS), arch=arch, no_extern_c=True,
                             cache_dir=False)
    except cuda.CompileError as exc:
        log = getattr(exc, "stderr", "") or str(exc)
        first = next((ln for ln in str(log).splitlines() if "error" in ln), str(exc).splitlines()[0])
        raise KernelCompileError(f"CUDA compile of program {ks.name} failed: {first.strip()}",
                                 source=ks.source, log=str(log)) from None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(cubin)
        os.replace(tmp, path)
    except OSError:   # a read-only cache: the module is still loaded, compiled again next time
        pass
    return cubin


def nvcc_path():
    """The nvcc on PATH (or under CUDA_ROOT/CUDA_HOME), or None."""
    for root in (os.environ.get("CUDA_ROOT"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return shutil.which("nvcc")


def nvcc_check(source, arch="sm_90", name="grstream"):
    """Compile ``source`` to an object file with nvcc (no GPU needed); KernelCompileError on failure."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    with tempfile.TemporaryDirectory() as tmp:
        cu = os.path.join(tmp, name + ".cu")
        with open(cu, "w") as fh:
            fh.write(source)
        proc = subprocess.run([nvcc, f"-arch={arch}", *NVCC_OPTIONS, "-c", cu, "-o", os.path.join(tmp, "k.o")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            log = proc.stderr + proc.stdout
            first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200])
            raise KernelCompileError(f"nvcc failed on {name}: {first.strip()}", source=source, log=log)
    return True

