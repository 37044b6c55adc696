"""Every python and bash block of README.md and docs/*.md runs.

The blocks of one document run in order in one temporary folder, like a reader would type them:
python blocks in one shared namespace (a notebook), bash blocks under ``bash -euo pipefail`` with
``grstream`` and ``python`` on PATH running this checkout. The folder starts with a small default
store at ``shards/default.h5`` (the real default graph's builder at RMAT scale 11 instead of 16),
and SCALE_DOWN shrinks the sizes the documents name. A block right after a line
``<!-- notest: reason -->`` is not run: it is reported as a skipped test giving the reason.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import grstream as gr

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
RUN = ("python", "bash")
#: fenced languages that are not commands (outputs, file layouts)
NOT_CODE = ("text", "json")
#: seconds one block may take on small graphs
TIMEOUT = 300
#: (document, text in a block, replacement): documented sizes, shrunk for the tests; each must
#: still occur, so a changed document cannot silently escape its scaling
SCALE_DOWN = [("README.md", "--scale 18", "--scale 11")]
NOTEST = re.compile(r"<!--\s*notest:\s*(.+?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")


class Block:
    def __init__(self, doc, line, lang, text, notest):
        self.doc, self.line, self.lang, self.text, self.notest = doc, line, lang, text, notest

    @property
    def name(self):
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc):
    """The fenced blocks of ``doc``: Block per fence, ``line`` the 1-based line of the opening."""
    out, lines, i = [], doc.read_text().splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert close is not None, f"{doc.name}:{i + 1}: unclosed code fence"
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        notest = NOTEST.search(before)
        out.append(Block(doc, i + 1, m.group(1), "\n".join(lines[i + 1:close]) + "\n",
                         notest.group(1) if notest else None))
        i = close + 1
    return out


def scaled(block):
    text = block.text
    for doc, old, new in SCALE_DOWN:
        if block.doc.name == doc:
            text = text.replace(old, new)
    return text


ALL = [b for doc in DOCUMENTS for b in blocks(doc)]


def test_every_fence_is_code_we_run_or_declared_as_not_code():
    unknown = [f"{b.name} ({b.lang or 'no language'})" for b in ALL if b.lang not in RUN + NOT_CODE]
    assert not unknown, f"label each fence python, bash, text or json: {unknown}"


def test_scale_down_substitutions_still_apply():
    for doc, old, _ in SCALE_DOWN:
        assert any(b.doc.name == doc and old in b.text and not b.notest for b in ALL), (doc, old)


@pytest.mark.parametrize("block", [b for b in ALL if b.notest], ids=lambda b: b.name)
def test_block_marked_notest(block):
    pytest.skip(f"{block.name} not run: {block.notest}")


@pytest.fixture(scope="module")
def default_store(tmp_path_factory):
    from grstream import defaults
    folder = tmp_path_factory.mktemp("default")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(defaults, "SCALE", 11)  # where vertex 0, the examples' source, has out-edges
        mp.setenv("GRSTREAM_SHARDS", str(folder))
        return defaults.default_store(progress=False)


@pytest.fixture
def folder(tmp_path, default_store, monkeypatch):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "default.h5").write_bytes(default_store.read_bytes())
    shims = tmp_path / ".bin"
    shims.mkdir()
    python = f'"{sys.executable}"'
    for name, run in (("grstream", f"{python} -m grstream"), ("python", python)):
        (shims / name).write_text(f'#!/bin/sh\nexec {run} "$@"\n')
        (shims / name).chmod(0o755)
    mpiexec = Path(sys.executable).parent / "mpiexec"   # grstream[mpi]'s, beside this python
    if mpiexec.exists():   # (run by its own path: Hydra finds its proxy beside it)
        (shims / "mpiexec").write_text(f'#!/bin/sh\nexec "{mpiexec}" "$@"\n')
        (shims / "mpiexec").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("GRSTREAM_SHARDS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_python(block, text, namespace, folder):
    # from a real file, so the checker reads program sources as it would from a user's script
    path = folder / f"{block.doc.stem}-{block.line}.py"
    path.write_text(text)

    def timeout(*_):
        raise TimeoutError(f"{block.name}: still running after {TIMEOUT} s")

    code = compile(text, str(path), "exec")
    if threading.current_thread() is not threading.main_thread():  # signals need the main thread
        exec(code, namespace)  # noqa: S102 - the document's example
        return
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(TIMEOUT)
    try:
        exec(code, namespace)  # noqa: S102 - the document's example
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def have_mpi():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return (Path(sys.executable).parent / "mpiexec").exists() or shutil.which("mpiexec") is not None


def run_bash(block, text, folder):
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=folder, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, (f"{block.name}: exit {done.returncode}\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


@pytest.mark.parametrize("doc", sorted({b.doc for b in ALL if b.lang in RUN and not b.notest}),
                         ids=lambda d: d.name)
def test_document_examples_run(doc, folder):
    if "mpiexec" in doc.read_text() and not have_mpi():
        pytest.skip(f"{doc.name} launches mpiexec: mpi4py or mpiexec not installed (grstream[mpi])")
    namespace = {"__name__": "__main__"}
    ran = 0
    for block in blocks(doc):
        if block.lang not in RUN or block.notest:
            continue
        text = scaled(block)
        if block.lang == "python":
            run_python(block, text, namespace, folder)
        else:
            run_bash(block, text, folder)
        ran += 1
    assert ran


# -- what the examples print ---------------------------------------------------------------------

#: (document, text of a python block) whose printed lines must be what the block's comments say:
#: the comment after each ``print(...)``, on its line or alone on the next line
PRINTS = [("docs/PROGRAMS.md", 'method="delta"'), ("docs/PROGRAMS.md", 'auto.info["direction"]'),
          ("docs/PROGRAMS.md", "local.iterations"), ("docs/PROGRAMS.md", "Layers(turns="),
          ("docs/DISTRIBUTED.md", "stop_in_iteration_5")]


def documented_prints(text):
    lines, out = text.splitlines(), []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("print("):
            comment = line.split("#", 1)[1] if "#" in line else (
                lines[i + 1].strip()[1:] if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("#") else None)
            assert comment is not None, f"no documented output for {line.strip()!r}"
            out.append(comment.strip())
    return out


@pytest.mark.parametrize("doc, marker", PRINTS, ids=[m for _, m in PRINTS])
def test_examples_print_what_their_comments_say(doc, marker, folder, capsys):
    block = next(b for b in blocks(ROOT / doc) if b.lang == "python" and marker in b.text)
    run_python(block, scaled(block), {"__name__": "__main__"}, folder)
    assert capsys.readouterr().out.splitlines() == documented_prints(block.text), block.name


# -- what the examples compute ------------------------------------------------------------------

def program_of(doc, name):
    """A program class of a document's python blocks (the class definition only)."""
    for block in blocks(ROOT / doc):
        if block.lang == "python" and f"class {name}(" in block.text:
            text = "import numpy as np\nimport grstream as gr\n" + block.text
            return gr.program_from_source(text.split("\nstore = ")[0], name=name)
    raise AssertionError(f"{doc} has no class {name}")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A small directed multigraph with dangling vertices, with edge ids, in 3 shards."""
    rng = np.random.default_rng(9)
    n, m = 40, 160
    src, dst = rng.integers(0, n - 4, m), rng.integers(0, n, m)  # 36..39 have no out-edges
    path = tmp_path_factory.mktemp("graph") / "g.h5"
    gr.build_shards((src, dst), path, num_shards=3, edge_ids=True, progress=False)
    import scipy.sparse as sp
    adjacency = sp.csr_matrix((np.ones(m), (src, dst)), shape=(n, n)).toarray()
    return gr.open(path), adjacency


def test_programs_md_pagerank_converges_to_pagerank(graph):
    store, a = graph
    n = len(a)
    result = gr.run(program_of("docs/PROGRAMS.md", "PageRank")(tol=1e-10), store)
    assert result.converged and result.iterations < 200
    out = a.sum(axis=1)
    transition = np.divide(a, out[:, None], out=np.zeros_like(a), where=out[:, None] > 0)
    # the exact PageRank vector: dangling rank spread uniformly (NetworkX's semantics)
    google = 0.85 * (transition + np.outer(out == 0, np.ones(n)) / n) + 0.15 / n
    values, vectors = np.linalg.eig(google.T)
    exact = np.real(vectors[:, np.argmax(np.real(values))])
    exact /= exact.sum()
    np.testing.assert_allclose(result.value, exact, atol=1e-9)


def test_programs_md_edgerank_solves_its_fixed_point(graph):
    store, a = graph
    n = len(a)
    result = gr.run(program_of("docs/PROGRAMS.md", "EdgeRank")(tol=1e-12), store)
    assert result.converged
    out = a.sum(axis=1)
    transition = np.divide(a, out[:, None], out=np.zeros_like(a), where=out[:, None] > 0)
    # r = 0.15/n + 0.85 P^T r: dangling rank is dropped
    exact = np.linalg.solve(np.eye(n) - 0.85 * transition.T, np.full(n, 0.15 / n))
    np.testing.assert_allclose(result.value, exact, atol=1e-10)
    assert result.value.sum() < 1.0
