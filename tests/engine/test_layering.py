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


def test_backends_import_the_engine_through_its_contract_only():
    for path in (PACKAGE / "backends").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level and (node.module or "").startswith("engine"):
                assert node.module == "engine.contract", f"{path.name} imports {node.module}"


def test_the_engine_reads_capabilities_without_fallbacks():
    for path in (PACKAGE / "engine").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                target = ast.unparse(node.args[0])
                assert "caps" not in target and "cls" not in target, f"{path.name}: {ast.unparse(node)}"


def test_engine_and_backend_modules_are_small():
    for folder in ("engine", "backends/cpu", "backends/cuda"):
        for path in (PACKAGE / folder).glob("*.py"):
            assert len(path.read_text().splitlines()) <= 450, path
