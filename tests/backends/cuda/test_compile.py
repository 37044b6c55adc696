"""The compile step's in-memory module cache (no GPU: PyCUDA is replaced by a recording stand-in)."""
import sys
import types

import numpy as np

from grstream.algorithms import bfs
from grstream.backends.cuda import compile as comp
from grstream.backends.cuda.compile import module_source


def test_module_cache_keys_on_the_context_not_its_wrapper(monkeypatch):
    """get_current() wrappers are temporary: one whose id() is reused must not find another
    context's module (simulated: the same wrapper object switches to another handle)."""
    compiled = []

    class Device:
        def compute_capability(self):
            return (9, 0)

    class Wrapper:
        handle = 1

        def get_device(self):
            return Device()

    wrapper = Wrapper()
    driver = types.ModuleType("pycuda.driver")
    driver.Context = types.SimpleNamespace(get_current=lambda: wrapper)
    driver.CompileError = RuntimeError
    compiler = types.ModuleType("pycuda.compiler")
    compiler.SourceModule = lambda source, **kw: compiled.append(wrapper.handle) or object()
    pkg = types.ModuleType("pycuda")
    pkg.driver, pkg.compiler = driver, compiler
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    monkeypatch.setattr(comp, "_MODULES", {})
    monkeypatch.setattr(comp, "cache_dir", lambda: "/nonexistent")
    ks = module_source(bfs.BFS.spec, np.int32)
    first = comp.load_module(ks)
    assert comp.load_module(ks) is first and compiled == [1]
    wrapper.handle = 2                       # same Python object, another context
    second = comp.load_module(ks)
    assert second is not first and compiled == [1, 2]
