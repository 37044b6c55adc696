"""The compile step's module caches, in memory and on disk (no GPU: PyCUDA is replaced by a recording stand-in)."""
import sys
import types

import numpy as np
import pytest

from grstream.algorithms import bfs
from grstream.backends.cuda import compile as comp
from grstream.backends.cuda.compile import module_source


class Device:
    def compute_capability(self):
        return (9, 0)


class Wrapper:
    handle = 1

    def get_device(self):
        return Device()


def stub_pycuda(monkeypatch, wrapper, compiled, loaded):
    """PyCUDA replaced: ``compile`` records the context and returns a cubin naming it;
    ``module_from_buffer`` records the bytes it loads (a cubin starting with b"bad" is refused)."""
    driver = types.ModuleType("pycuda.driver")
    driver.Context = types.SimpleNamespace(get_current=lambda: wrapper)
    driver.CompileError = RuntimeError

    class Error(Exception):
        pass

    def module_from_buffer(data):
        loaded.append(bytes(data))
        if data.startswith(b"bad"):
            raise Error("device kernel image is invalid")
        return object()
    driver.Error, driver.module_from_buffer = Error, module_from_buffer
    compiler = types.ModuleType("pycuda.compiler")

    def nvcc(source, **kw):
        assert kw["cache_dir"] is False and kw["no_extern_c"] and kw["arch"] == "sm_90"
        compiled.append(wrapper.handle)
        return b"cubin %d" % wrapper.handle
    compiler.compile = nvcc
    pkg = types.ModuleType("pycuda")
    pkg.driver, pkg.compiler = driver, compiler
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    monkeypatch.setattr(comp, "_MODULES", {})


def test_module_cache_keys_on_the_context_not_its_wrapper(monkeypatch, tmp_path):
    """get_current() wrappers are temporary: one whose id() is reused must not find another
    context's module (simulated: the same wrapper object switches to another handle)."""
    compiled, loaded = [], []
    wrapper = Wrapper()
    stub_pycuda(monkeypatch, wrapper, compiled, loaded)
    monkeypatch.setattr(comp, "cache_dir", lambda: str(tmp_path))
    ks = module_source(bfs.BFS.spec, np.int32)
    first = comp.load_module(ks)
    assert comp.load_module(ks) is first and compiled == [1]
    wrapper.handle = 2                       # same Python object, another context
    second = comp.load_module(ks)
    assert second is not first and compiled == [1]   # its module loaded from the cubin on disk
    assert loaded == [b"cubin 1", b"cubin 1"]


def test_a_compiled_module_is_loaded_from_its_cubin_with_no_compiler_call(monkeypatch, tmp_path):
    """The disk cache: the first process compiles and keeps the cubin under the module's key,
    the next one (an empty memory cache) loads it without nvcc; a cubin the driver refuses is
    compiled again and replaced; another source is another file."""
    compiled, loaded = [], []
    stub_pycuda(monkeypatch, Wrapper(), compiled, loaded)
    monkeypatch.setattr(comp, "cache_dir", lambda: str(tmp_path))
    ks = module_source(bfs.BFS.spec, np.int32)
    comp.load_module(ks)
    key = comp.cache_key(ks, "sm_90")
    assert compiled == [1] and [p.name for p in tmp_path.iterdir()] == [f"{key}.cubin"]
    assert (tmp_path / f"{key}.cubin").read_bytes() == b"cubin 1"
    comp._MODULES.clear()                    # a new process
    comp.load_module(ks)
    assert compiled == [1] and loaded == [b"cubin 1", b"cubin 1"]
    (tmp_path / f"{key}.cubin").write_bytes(b"bad cubin")
    comp._MODULES.clear()
    comp.load_module(ks)
    assert compiled == [1, 1] and (tmp_path / f"{key}.cubin").read_bytes() == b"cubin 1"
    comp.load_module(module_source(bfs.BFS.spec, np.int64))
    assert compiled == [1, 1, 1] and len(list(tmp_path.iterdir())) == 2


def test_a_compile_error_is_a_kernel_compile_error_and_leaves_no_cubin(monkeypatch, tmp_path):
    from grstream.errors import KernelCompileError
    compiled, loaded = [], []
    stub_pycuda(monkeypatch, Wrapper(), compiled, loaded)
    monkeypatch.setattr(comp, "cache_dir", lambda: str(tmp_path))

    def fails(source, **kw):
        exc = RuntimeError("nvcc compilation failed")
        exc.stderr = "kernel.cu(3): error: identifier \"x\" is undefined\n1 error detected"
        raise exc
    monkeypatch.setattr(sys.modules["pycuda.compiler"], "compile", fails)
    ks = module_source(bfs.BFS.spec, np.int32)
    with pytest.raises(KernelCompileError, match='identifier "x" is undefined') as err:
        comp.load_module(ks)
    assert err.value.source == ks.source and list(tmp_path.iterdir()) == [] and loaded == []
