"""The compiled kernels as an extension module (backends/cpu/aot.py): built for the types a
process called them with, loaded by a later process without numba, giving the numpy passes'
results; "auto" compiles whatever the store's size once the module exists."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.backends.cpu import aot, compiled, strategy_compiled

from ...algorithms.conftest import build, random_edges

numba = pytest.importorskip("numba")
pytest.importorskip("numba.pycc")



@pytest.fixture(autouse=True)
def aot_on(monkeypatch):
    """The modules on (tests/conftest.py turns them off for every other test)."""
    monkeypatch.setenv("GRSTREAM_KERNEL_AOT", "1")


#: the C compiler numba.pycc builds with (the interpreter's own, as distutils picks it)
COMPILER = (sysconfig.get_config_var("CC") or "cc").split()[0]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

#: a fresh process: BFS with "auto" on a small store; prints whether the kernels were loaded,
#: whether numba was imported, and the levels
FRESH = """
import sys
import numpy as np
import grstream as gr
from grstream.algorithms.bfs import BFS
from grstream.backends.cpu import compiled
levels = gr.run(BFS(source=int(sys.argv[2])), sys.argv[1], backend_options={"threads": 2}).value
print(compiled.loaded(BFS.spec, ("in",)), "numba" in sys.modules, " ".join(map(str, levels)))
"""


@pytest.mark.skipif(shutil.which(COMPILER) is None, reason=f"no C compiler ({COMPILER})")
def test_the_module_loads_without_numba_and_equals_numpy(tmp_path, monkeypatch):
    cache = tmp_path / "kernels"
    monkeypatch.setenv("GRSTREAM_KERNEL_CACHE", str(cache))
    monkeypatch.setattr(compiled, "_KERNELS", {})   # no kernels of this process's cache
    monkeypatch.setattr(aot, "_PENDING", {})
    monkeypatch.setattr(strategy_compiled, "PARALLEL_EDGES", 8)   # (parts on two threads)
    rng = np.random.default_rng(7)
    n = 500
    src, dst, _ = random_edges(rng, n, 6000)
    store = build(tmp_path, n, src, dst, num_shards=4)
    want = gr.run(BFS(source=3), store, backend_options={"kernels": "numpy"}).value
    # through numba's JIT (nothing built yet): the types of the calls are recorded
    got = gr.run(BFS(source=3), store, backend_options={"kernels": "numba", "threads": 2}).value
    np.testing.assert_array_equal(got, want)
    kernels = compiled.push_kernels(BFS.spec, ("in",))
    assert not kernels.aot.available() and "push_uniform_in" in kernels.aot.missed
    aot.build_pending(wait=True)
    assert sorted(p.suffix for p in cache.iterdir() if p.name.startswith("grstream_aot_")) == [
        ".json", ".so"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", FRESH, store.path, "3"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    loaded, imported, *levels = out.stdout.split()
    # "auto" on a store far below COMPILED_EDGES compiles: the module loads at no cost
    assert (loaded, imported) == ("True", "False")
    np.testing.assert_array_equal(np.array(levels, dtype=np.int64), want)


def test_argument_types_and_the_switch(tmp_path, monkeypatch):
    monkeypatch.setattr(aot, "_PENDING", {})
    a = np.arange(10, dtype=np.int32)
    assert aot.arg_code(a) == "<i4[]" and aot.arg_code(np.int64(3)) == "<i8"
    assert [aot.arg_code(x) for x in (True, 3, 2.5)] == ["bool", "int", "float"]
    frozen = a.copy()
    frozen.flags.writeable = False
    assert aot.arg_code(frozen) == "<i4[]r"
    # types the module cannot take: the JIT runs them, nothing recorded
    assert aot.arg_code(a[::2]) is None and aot.arg_code(np.zeros((2, 2))) is None
    ext = aot.Extension(str(tmp_path), "x", str(tmp_path / "x.py"))
    assert ext.function("k", (a[::2],)) is None and not ext.missed
    assert ext.function("k", (a,)) is None and ext.missed == {"k": {"<i4[]"}}
    monkeypatch.setenv("GRSTREAM_KERNEL_AOT", "0")
    off = aot.Extension(str(tmp_path), "y", str(tmp_path / "y.py"))
    assert off.function("k", (a,)) is None and not off.missed and off.write_request() is None


def test_one_process_takes_the_build_lock(tmp_path, monkeypatch):
    """The lock is created exclusively (of processes exiting together, one requests the build);
    an abandoned one (older than STALE_LOCK) is replaced."""
    monkeypatch.setattr(aot, "_PENDING", {})
    a = np.arange(4, dtype=np.int64)
    first, second = (aot.Extension(str(tmp_path), "d", str(tmp_path / "d.py")) for _ in "12")
    first.function("k", (a,))
    second.function("k", (a,))
    request = first.write_request()
    assert request is not None and os.path.exists(request)
    assert second.write_request() is None and second.missed   # (kept: asked for again later)
    lock = tmp_path / f"grstream_aot_{first.digest}.lock"
    os.utime(lock, (0, 0))
    assert second.write_request() is not None and not second.missed


def test_a_failed_build_is_not_tried_again(tmp_path, monkeypatch):
    """Without a C compiler the build fails quietly (the JIT stays) and leaves a marker: a
    later process with the same types requests no build (a process started at every exit)."""
    monkeypatch.setattr(aot, "_PENDING", {})
    monkeypatch.setenv("CC", str(tmp_path / "no-compiler"))
    source = tmp_path / "kernels.py"
    source.write_text("from numba import njit\n\n\n@njit\ndef total(a):\n    return a.sum()\n")
    a = np.arange(4, dtype=np.int64)
    ext = aot.Extension(str(tmp_path), "d", str(source))
    assert ext.function("total", (a,)) is None
    assert aot.build_pending(wait=True) == 1
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("grstream_aot_"))
    assert len(left) == 1 and left[0].endswith(aot.FAILED)   # no lock, request or module
    again = aot.Extension(str(tmp_path), "d", str(source))
    assert again.function("total", (a,)) is None and again.write_request() is None


def test_a_module_built_on_another_cpu_is_not_loaded(tmp_path, monkeypatch):
    """The module is compiled for the CPU that builds it: a cache shared with a machine of
    another CPU keeps an index per CPU, and this one's finds none."""
    monkeypatch.setattr(aot, "_PENDING", {})
    monkeypatch.setattr(aot, "_HOST", "othercpu")
    other = aot.Extension(str(tmp_path), "d", str(tmp_path / "d.py"))
    with open(other.index_path, "w") as f:
        json.dump({"module": "m", "functions": {"k": {"<i8[]": "k_0"}}}, f)
    assert aot.Extension(str(tmp_path), "d", str(tmp_path / "d.py")).available()
    monkeypatch.setattr(aot, "_HOST", None)
    mine = aot.Extension(str(tmp_path), "d", str(tmp_path / "d.py"))
    assert aot.host() != "othercpu" and not mine.available()
