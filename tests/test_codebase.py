"""Guards on the package's source as a whole: what its comments may say, how long a module may
grow, which module names may repeat, that the entry points setup.cfg declares exist, and that
citations of docs/BENCHMARKS.md sections name sections that exist.

- Comments and docstrings speak of the present: no issue numbers, no dates, no device names and
  no timings (the measurements behind a constant live in docs/BENCHMARKS.md, "Measured
  constants"; the history of a change lives in git and docs/benchmarks/).
- No module over ``MAX_LINES`` lines: a newcomer reads a module whole.
- No two modules share a file name unless they mean the same thing. Allowed:
  ``__init__.py`` / ``__main__.py`` (Python's own names); a part of the executor contract and
  its implementations, ``engine/X.py`` and ``backends/<backend>/X.py`` for X in
  ``CONTRACT_PARTS`` (``executor.py``: the contract and each backend's executor;
  ``balance.py``: the load-balance policy's inputs and strategies, and the CPU's policy;
  ``facts.py``: each backend's class-level facts), where the package says which side is which;
  and ``commands/X.py``, the ``grstream X`` command, beside at most one other module named X
  that implements the operation the command runs (commands/generate.py parses and reports,
  io/generate.py generates): the same verb, the package says which layer. Any other repeated
  name (two ``plan.py``, a partition plan and an iteration plan; two ``streams.py``, CUDA
  streams and pipe inputs) makes a reader open the wrong file.
- A subpackage takes no private name (``_x``) from another subpackage: a name used across
  subpackages is part of its package's interface, public and documented. Within a subpackage
  private names are shared freely.
"""
import ast
import configparser
import importlib
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "grstream"
MAX_LINES = 450

#: file names every package may hold, whatever else shares them
PYTHON_NAMES = {"__init__.py", "__main__.py"}
#: parts of the executor contract: engine/X.py (the contract) and backends/<backend>/X.py (each
#: backend's side of it) share the name
CONTRACT_PARTS = {"executor.py", "balance.py", "facts.py"}

#: an issue reference, a date, a device name or a timing in a comment or docstring
HISTORY = re.compile(r"\bissues? ?#?\d+|\b20\d\d-\d\d-\d\d\b|\b[HA]100\b|\bH200\b|\d ?[mn]s\b",
                     re.IGNORECASE)


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def rel(path):
    return path.relative_to(ROOT).as_posix()


def test_no_history_in_the_source():
    found = [f"{rel(p)}:{i}: {line.strip()}" for p in modules()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if HISTORY.search(line)]
    assert not found, "issue numbers, dates, device names or timings in grstream/:\n" + "\n".join(found)


def test_the_history_pattern_catches_what_it_must():
    for text in ("(issue 8)", "issue 19 item 5", "Issue #12", "(2026-11-25)", "on the H100",
                 "13.6 ms against 2.8", "3.4 ns each"):
        assert HISTORY.search(text), text
    for text in ("a tissue 8 cells wide", "1/20 of the edges", "the H1000 board", "H100x",
                 "f\"{t:.1f} ms\"", "items", "2 msgs"):
        assert not HISTORY.search(text), text


def line_count(path):
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_over_the_limit():
    long = [f"{rel(p)}: {line_count(p)} lines" for p in modules() if line_count(p) > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def contract_part(paths):
    """Whether ``paths`` (relative to the package) are the engine's and the backends' sides of
    one part of the executor contract."""
    return all(p.parts[0] == "engine" and len(p.parts) == 2
               or p.parts[0] == "backends" and len(p.parts) == 3 for p in paths)


def shared_names():
    """File name -> paths of the package's modules sharing it, for names not allowed to repeat."""
    by_name = defaultdict(list)
    for p in modules():
        by_name[p.name].append(p.relative_to(PACKAGE))
    commands = {p.stem for p in (PACKAGE / "commands").glob("*.py") if not p.stem.startswith("_")}
    out = {}
    for name, paths in by_name.items():
        if len(paths) < 2 or name in PYTHON_NAMES:
            continue
        if name in CONTRACT_PARTS and contract_part(paths):
            continue
        if (Path(name).stem in commands and len(paths) == 2
                and any(p.parts[0] == "commands" for p in paths)):
            continue   # the command and the module implementing it
        out[name] = sorted(p.as_posix() for p in paths)
    return out


def test_no_two_modules_share_a_name():
    shared = shared_names()
    assert not shared, f"modules sharing a name with different meanings: {shared}"


def test_shared_names_rule():
    """The rule's allowances apply where they should and nowhere else: the contract's parts and
    a command beside its implementation pass; the same names elsewhere do not."""
    executors = [p for p in modules() if p.name == "executor.py"]
    assert len(executors) >= 2   # the contract and at least one implementation
    assert (PACKAGE / "commands" / "generate.py").exists()
    assert (PACKAGE / "io" / "generate.py").exists() and "generate.py" not in shared_names()
    assert contract_part([Path("engine/executor.py"), Path("backends/cpu/executor.py")])
    assert not contract_part([Path("engine/executor.py"), Path("io/executor.py")])
    assert not contract_part([Path("backends/cuda/streams.py"), Path("io/pipes/streams.py")])


def private(name):
    """Whether a name is private: a leading underscore, not a dunder."""
    return name.startswith("_") and not name.endswith("__")


def subpackage(module):
    """The grstream subpackage holding the dotted ``module`` ('' for the package's own modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def is_module(module):
    return ((ROOT / module.replace(".", "/")).with_suffix(".py").is_file()
            or (ROOT / module.replace(".", "/")).is_dir())


def dotted(node):
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return base and f"{base}.{node.attr}"
    return None


def foreign_private_names(source, path):
    """``(line, name)`` for each private name the module at ``path`` (relative to the root,
    e.g. ``grstream/distributed/rank_build.py``) takes from another subpackage: imported (the
    name, or a module on its path, private), or read as an attribute of a module imported."""
    here = Path(path).parent.parts
    mine = subpackage(".".join(Path(path).with_suffix("").parts))
    found, bound = [], {}   # bound: local name -> the module it names
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) + 1 - node.level] if node.level else ()
            module = ".".join(base + ((node.module,) if node.module else ()))
            names = [(f"{module}.{a.name}", a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            names = []
            for a in node.names:
                # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``
                local = a.asname or a.name.split(".")[0]
                bound[local] = a.name if a.asname else local
                names.append((a.name, None))
        else:
            continue
        for full, local in names:
            if local and is_module(full):
                bound[local] = full
            if (full.startswith("grstream.") and subpackage(full) != mine
                    and any(private(part) for part in full.split("."))):
                found.append((node.lineno, full))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            name = dotted(node.value)
            head, _, rest = (name or "").partition(".")
            module = head in bound and ".".join(filter(None, (bound[head], rest)))
            if (module and module.startswith("grstream.") and is_module(module)
                    and subpackage(module) != mine):
                found.append((node.lineno, f"{module}.{node.attr}"))
    return sorted(found)


def test_no_private_names_across_subpackages():
    found = [f"{rel(p)}:{line}: {name}" for p in modules()
             for line, name in foreign_private_names(p.read_text(encoding="utf-8"), rel(p))]
    assert not found, ("private names taken from another subpackage (make them public):\n"
                       + "\n".join(found))


def test_the_private_names_rule_catches_what_it_must():
    """Imports by name, relative or absolute, of a private name or from a private module, and
    attributes of a module imported from another subpackage, are caught; the same within one
    subpackage, public names and dunders are not."""
    here = "grstream/distributed/rank_build.py"
    for text in ("from ..partition.in_memory import csr_rows, _slice",
                 "from grstream.partition.in_memory import _slice as cut",
                 "from ..algorithms._common import execute",
                 "from ..algorithms import _common",
                 "import grstream.algorithms._common as common",
                 "from ..partition import in_memory\nin_memory._slice(x, 0, 1)",
                 "import grstream.partition.in_memory as im\nim._slice(x, 0, 1)",
                 "import grstream.partition.in_memory\ngrstream.partition.in_memory._slice(x)",
                 "import grstream.algorithms._common",
                 "def f():\n    from ..errors import _hidden"):
        assert foreign_private_names(text, here), text
    for text in ("from ..partition.in_memory import csr_rows",
                 "from .exchange import _wire",
                 "from grstream.distributed.exchange import _wire",
                 "from . import exchange\nexchange._wire(x)",
                 "from .. import __version__",
                 "from ..partition import in_memory\nin_memory.csr_rows(x, 0, 1)",
                 "self._x = 1",
                 "import grstream.partition.in_memory\ngrstream.partition.in_memory.csr_rows(x)"):
        assert not foreign_private_names(text, here), text
    assert foreign_private_names("from .partition.layout import _bits", "grstream/cli.py")
    assert not foreign_private_names("from .errors import _hidden", "grstream/cli.py")


def entry_points():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    for group, text in cfg["options.entry_points"].items():
        for line in text.strip().splitlines():
            name, target = (s.strip() for s in line.split("=", 1))
            yield group, name, target


@pytest.mark.parametrize("group,name,target", list(entry_points()))
def test_entry_point_resolves(group, name, target):
    """Each declared entry point names an attribute that exists (a rename of its module must
    follow in setup.cfg); NetworkX's backend_info is called and names this backend."""
    module, attr = target.split(":")
    obj = getattr(importlib.import_module(module), attr, None)
    assert obj is not None, f"{group}: {name} = {target}"
    if group == "networkx.backend_info":
        assert obj()["backend_name"] == name


#: a reference to a section of the benchmark documents: docs/BENCHMARKS.md, "Section name"
SECTION_REF = re.compile(r'docs/(BENCHMARKS\.md|benchmarks/[\w.-]+\.md),? "([^"]+)"')


def section_refs():
    texts = [p for p in modules()] + [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    for p in texts:
        for m in SECTION_REF.finditer(p.read_text(encoding="utf-8")):
            yield rel(p), m.group(1), m.group(2)


def test_benchmark_section_references_name_a_heading():
    """Code and docs cite measurements by a section's name; the section must exist (its heading
    contains the name), so that a reorganised BENCHMARKS.md cannot leave a citation dangling."""
    refs = list(section_refs())
    assert any(doc == "BENCHMARKS.md" and name == "Measured constants" for _, doc, name in refs)
    missing = []
    for where, doc, name in refs:
        path = ROOT / "docs" / doc
        headings = [line.lower() for line in path.read_text(encoding="utf-8").splitlines()
                    if line.startswith("#")] if path.exists() else []
        if not any(name.lower() in h for h in headings):
            missing.append(f'{where}: docs/{doc}, "{name}"')
    assert not missing, "references to missing sections:\n" + "\n".join(missing)


def slug(heading):
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
    return text.replace(" ", "-")


def test_benchmark_links_resolve():
    """BENCHMARKS.md's links to the dated history files and to its own sections resolve."""
    doc = ROOT / "docs" / "BENCHMARKS.md"
    text = doc.read_text(encoding="utf-8")
    anchors = {slug(line) for line in text.splitlines() if line.startswith("#")}
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for target in links:
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif "://" not in target:
            assert (doc.parent / target.split("#")[0]).is_file(), target


def test_measured_constants_name_what_the_code_holds():
    """Each row of BENCHMARKS.md's "Measured constants" names modules that exist and, where it
    names constants, functions or classes (in backticks), modules that define them at top level:
    a constant moved or renamed takes its row along."""
    text = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = text.split("## Measured constants", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and ".py" in line]
    assert len(rows) >= 20
    wrong = []
    for row in rows:
        where = row.split("|")[1].split(":")[0]
        paths = [PACKAGE / w.strip() for w in where.split(",")]
        names = re.findall(r"`([A-Za-z_]\w*)`", row.split("|")[1])
        missing = [rel(p) for p in paths if not p.is_file()]
        if missing:
            wrong.append(f"{where}: no {missing}")
            continue
        for name in names:
            defined = rf"^(?:{name}\b.*=|def {name}\(|class {name}\b)"
            if not any(re.search(defined, p.read_text(encoding="utf-8"), re.M) for p in paths):
                wrong.append(f"{where}: {name} is not defined there")
    assert not wrong, "\n".join(wrong)
