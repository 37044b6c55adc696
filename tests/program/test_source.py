"""Programs defined without a .py file: notebook cells, ``python -c``, source strings."""
import linecache
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grstream as gr
from grstream.errors import ProgramError
from grstream.program.source import _dash_c_command, method_source

ROOT = Path(__file__).resolve().parents[2]

#: max-label propagation: every vertex ends with the largest id that reaches it
MAX_LABEL = '''import grstream as gr

class MaxLabel(gr.GASProgram):
    vertex = {"x": "float64"}
    gather_reduce = gr.monoid.max

    def init(self, v):
        v.x = v.id * 1.0

    def gather_map(self, src, dst, edge):
        return src.x

    def apply(self, v, acc):
        new = gr.maximum(v.x, acc)
        changed = new > v.x
        v.x = new
        return changed
'''
EDGES = np.array([[0, 1], [1, 2], [2, 0], [3, 2], [4, 4]])
EXPECTED = [3.0, 3.0, 3.0, 3.0, 4.0]  # the 0-1-2 cycle is reached from 3; 4 only from itself


@pytest.fixture
def store(tmp_path):
    return gr.open(gr.build_shards(EDGES, tmp_path / "g.h5", num_shards=2, progress=False))


def test_exec_of_a_string_says_what_to_do():
    with pytest.raises(ProgramError) as exc:
        exec(compile(MAX_LABEL, "<string>", "exec"), {"__name__": "cell"})
    msg = str(exc.value)
    assert "MaxLabel: the source of gather_map is unavailable (defined in <string>" in msg
    assert "gr.program_from_source(" in msg and ".py file" in msg


def test_program_from_source_defines_a_checked_runnable_class(store):
    cls = gr.program_from_source(MAX_LABEL)
    assert cls.__name__ == "MaxLabel" and issubclass(cls, gr.GASProgram)
    assert set(cls.spec.analysis.methods) == {"gather_map", "apply"}
    np.testing.assert_array_equal(gr.run(cls(), store).value, EXPECTED)


def test_program_from_source_lines_refer_to_the_string():
    bad = MAX_LABEL.replace("return src.x", "return src.x if True else 0.0")
    line = bad.splitlines().index("        return src.x if True else 0.0") + 1
    with pytest.raises(ProgramError) as exc:
        gr.program_from_source(bad)
    assert exc.value.lineno == line and "gr.where" in str(exc.value)


def test_program_from_source_choice_of_class():
    two = MAX_LABEL + MAX_LABEL.split("\n", 1)[1].replace("class MaxLabel", "class Other")
    with pytest.raises(ProgramError, match="2 GASProgram subclasses"):
        gr.program_from_source(two)
    assert gr.program_from_source(two, name="Other").__name__ == "Other"
    with pytest.raises(ProgramError, match="no GASProgram subclass 'Third'"):
        gr.program_from_source(two, name="Third")
    with pytest.raises(ProgramError, match="0 GASProgram subclasses"):
        gr.program_from_source("x = 1\n")
    with pytest.raises(ProgramError, match="does not parse"):
        gr.program_from_source("class (:\n")


def test_program_from_source_namespace():
    # a user's own base class, passed in through namespace
    base = gr.program_from_source(MAX_LABEL)
    sub = gr.program_from_source("class Sub(Base):\n    params = {'k': 1}\n", namespace={"Base": base})
    assert sub.spec.params == {"k": 1} and sub.__mro__[1] is base


def test_ipython_cell_in_linecache_is_checked(store):
    # IPython compiles each cell under a name like this and registers its text in linecache
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(MAX_LABEL), None, MAX_LABEL.splitlines(True), name)
    try:
        scope = {"__name__": "__main__"}
        exec(compile(MAX_LABEL, name, "exec"), scope)
    finally:
        del linecache.cache[name]
    cls = scope["MaxLabel"]
    assert cls.spec.analysis.methods["apply"].lineno == MAX_LABEL.splitlines().index(
        "    def apply(self, v, acc):") + 1
    np.testing.assert_array_equal(gr.run(cls(), store).value, EXPECTED)


def _python_c(code, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


def test_python_dash_c_end_to_end(tmp_path):
    code = MAX_LABEL + (
        "import numpy as np\n"
        "edges = np.array(%r)\n"
        "path = gr.build_shards(edges, 'g.h5', num_shards=2, progress=False)\n"
        "print(gr.run(MaxLabel(), gr.open(path)).value.tolist())\n") % EDGES.tolist()
    done = _python_c(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(EXPECTED)


def test_python_dash_c_does_not_take_an_exec_string_for_the_command(tmp_path):
    # inside `python -c`, an exec'd string is also "<string>": its lines are not the command's
    code = f"import grstream as gr\nexec({MAX_LABEL!r})\n"
    done = _python_c(code, tmp_path)
    assert done.returncode == 1
    assert "the source of gather_map is unavailable" in done.stderr


@pytest.mark.parametrize("argv, command", [
    (["python", "-c", "X"], "X"),
    (["python", "-cX"], "X"),
    (["python", "-I", "-c", "X"], "X"),
    (["python", "-Ic", "X"], "X"),
    (["python", "-W", "error", "-c", "X"], "X"),
    (["python", "-Werror", "-X", "dev", "-c", "X"], "X"),
    (["python", "--check-hash-based-pycs", "always", "-c", "X"], "X"),
    (["python", "script.py", "-c", "X"], None),
    (["python", "-m", "mod", "-c", "X"], None),
    (["python", "-", "-c", "X"], None),
    (["python"], None),
])
def test_dash_c_command_parsing(argv, command):
    assert _dash_c_command(argv) == command


def test_dash_c_source_is_used_only_for_the_same_code(monkeypatch):
    command = "def f(x):\n    return x * 2.0\n"
    monkeypatch.setattr(sys, "orig_argv", ["python", "-c", command])
    same, other = {}, {}
    exec(compile(command, "<string>", "exec"), same)
    exec(compile(command.replace("2.0", "3.0"), "<string>", "exec"), other)
    assert method_source(same["f"]) == command
    assert method_source(other["f"]) is None  # same bytecode, another constant
