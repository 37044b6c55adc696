"""The engine decides and backends execute: the engine imports no backend, modules stay small."""
import ast
from pathlib import Path

import grstream

PACKAGE = Path(grstream.__file__).parent


def test_the_engine_imports_no_backend():
    for path in (PACKAGE / "engine").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                        [a.name for a in node.names]
                assert not any("backends" in n for n in names), f"{path.name} imports {names}"


def test_engine_and_cpu_modules_are_small():
    for folder in ("engine", "backends/cpu"):
        for path in (PACKAGE / folder).glob("*.py"):
            assert len(path.read_text().splitlines()) <= 450, path
