"""The page renderer is analysis side: the standard library and ``pytest_blackbox.trace`` only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import pytest_blackbox.trace.view as view_module

TRACE_DIR = Path(view_module.__file__).parent


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(relative level, module) of every import statement."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
        elif isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("name", ["view.py", "view_assets.py"])
def test_view_modules_import_only_the_stdlib_and_the_trace_package(name: str) -> None:
    tree = ast.parse((TRACE_DIR / name).read_text(encoding="utf-8"))
    modules = imported(tree)
    outside = [
        (level, module)
        for level, module in modules
        if not (level == 1 or (level == 0 and module.split(".")[0] in sys.stdlib_module_names))
    ]
    assert modules, "the walk found no imports at all"
    assert outside == []
