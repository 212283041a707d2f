"""The analysis side (``pytest_blackbox/trace/``) can never reach a model, a tool or the network.

verify, diff, inspect and assert read cassettes only. This test walks the syntax tree of every
module under ``trace/`` and fails on any import outside the standard library, ``jsonschema`` and
``pytest_blackbox.trace`` itself, and on the network-capable standard modules, so the guarantee
holds by construction rather than by review.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import pytest_blackbox

TRACE_DIR = Path(pytest_blackbox.__file__).resolve().parent / "trace"
PACKAGE = "pytest_blackbox"
ALLOWED_PACKAGE = "pytest_blackbox.trace"
ALLOWED_THIRD_PARTY = frozenset({"jsonschema"})

#: Reasons shown when a forbidden module is imported; checked before the general rule.
FORBIDDEN = {
    "socket": "network access",
    "ssl": "network access",
    "http": "network access",
    "urllib.request": "network access",
    "asyncio": "network and subprocess access",
    "subprocess": "running programs",
    "anthropic": "a provider SDK",
    "openai": "a provider SDK",
    "respx": "HTTP interception",
    "httpx": "an HTTP client",
    "httpx2": "an HTTP client",
    "aiohttp": "an HTTP client",
    "requests": "an HTTP client",
    "pytest_blackbox.session": "the execution side",
    "pytest_blackbox.sessions": "the execution side",
    "pytest_blackbox.interception": "the execution side",
    "pytest_blackbox.providers": "the execution side",
    "pytest_blackbox.tools": "the execution side",
    "pytest_blackbox.plugin": "the execution side",
    "pytest_blackbox.cli": "the execution side",
}


def _module_package(path: Path) -> str:
    """The dotted package a module file lives in, e.g. ``pytest_blackbox.trace``."""
    relative = path.relative_to(TRACE_DIR.parent.parent).with_suffix("")
    parts = list(relative.parts)
    return ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(".__init__")


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    base = package.split(".")
    if node.level - 1 > 0:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imported(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import, plus ``<dynamic>`` for import calls."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(node, package)
            if module == PACKAGE:  # `from .. import x`: x is the module actually used
                found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, module))
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in ("import_module", "__import__"):
                found.append((node.lineno, "<dynamic>"))
    return found


def _violation(module: str) -> str | None:
    if module == "<dynamic>":
        return "a dynamic import (importlib.import_module / __import__) cannot be checked"
    for name, reason in FORBIDDEN.items():
        if module == name or module.startswith(name + "."):
            return f"`{module}` is {reason}"
    if module == ALLOWED_PACKAGE or module.startswith(ALLOWED_PACKAGE + "."):
        return None
    top = module.split(".")[0]
    if top == PACKAGE:
        return f"`{module}` is outside pytest_blackbox.trace"
    if top in ALLOWED_THIRD_PARTY or top in sys.stdlib_module_names or top == "__future__":
        return None
    return f"`{module}` is not in the standard library (only jsonschema is allowed)"


def check_source(source: str, path: Path) -> list[str]:
    """Every forbidden import in one module, as ``file:line: import X: reason``."""
    tree = ast.parse(source, filename=str(path))
    problems = []
    for line, module in _imported(tree, _module_package(path)):
        reason = _violation(module)
        if reason is not None:
            problems.append(f"{path.relative_to(TRACE_DIR.parent.parent)}:{line}: import {module}: {reason}")
    return problems


def test_trace_modules_import_only_the_analysis_side() -> None:
    modules = sorted(TRACE_DIR.rglob("*.py"))
    assert len(modules) >= 8, "the trace/ package was not found where expected"
    problems = [problem for path in modules for problem in check_source(path.read_text("utf-8"), path)]
    assert not problems, "the analysis side must not reach models, tools or the network:\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import httpx", "`httpx` is an HTTP client"),
        ("import http.client", "`http.client` is network access"),
        ("from urllib.request import urlopen", "`urllib.request` is network access"),
        ("import asyncio", "`asyncio` is network and subprocess access"),
        ("from socket import create_connection", "`socket` is network access"),
        ("from ..providers import anthropic", "`pytest_blackbox.providers` is the execution side"),
        ("from .. import interception", "`pytest_blackbox.interception` is the execution side"),
        ("from ..cli import main", "`pytest_blackbox.cli` is the execution side"),
        ("from pytest_blackbox.plugin import x", "`pytest_blackbox.plugin` is the execution side"),
        ("from ..errors import SecretLeakError", "`pytest_blackbox.errors` is outside pytest_blackbox.trace"),
        ("import yaml", "`yaml` is not in the standard library (only jsonschema is allowed)"),
        ("import importlib\nimportlib.import_module('httpx')", "a dynamic import"),
    ],
)
def test_the_checker_catches_forbidden_imports(source: str, reason: str) -> None:
    problems = check_source(source, TRACE_DIR / "example.py")
    assert len(problems) == 1, problems
    assert problems[0].startswith("pytest_blackbox/trace/example.py:")
    assert reason in problems[0]


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations",
        "import json, hashlib, re",
        "from jsonschema import Draft202012Validator",
        "from .canonical import canonical_json",
        "from . import canonical",
        "from pytest_blackbox.trace.model import Trace",
        "import urllib.parse",
    ],
)
def test_the_checker_allows_the_analysis_side(source: str) -> None:
    assert check_source(source, TRACE_DIR / "example.py") == []
