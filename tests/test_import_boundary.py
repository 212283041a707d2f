"""The package's layers may only import downwards; this walks every module's syntax tree to prove it.

The analysis side (``trace/`` and ``analysis/``) can never reach a model, a tool or the network: it
imports the standard library (minus its network and subprocess modules), ``jsonschema``, ``orjson``
(the optional encoder of the cassette's text) and itself.
Each execution-side folder may import only the layers its role needs, and only ``plugin/`` imports
pytest. The rules live in one table, so the guarantee holds by construction rather than by review.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import pytest_blackbox

PACKAGE_DIR = Path(pytest_blackbox.__file__).resolve().parent
PACKAGE = "pytest_blackbox"

#: Standard modules the analysis side may not use, with the reason shown.
NETWORK = {
    "socket": "network access",
    "ssl": "network access",
    "http": "network access",
    "urllib.request": "network access",
    "asyncio": "network and subprocess access",
    "subprocess": "running programs",
}

#: Folder (or top-level module) → the project folders it may import, and its third-party imports.
LAYERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "vocabulary": (frozenset(), frozenset()),
    "importwatch": (frozenset(), frozenset()),
    "trace": (frozenset({"trace"}), frozenset({"jsonschema", "orjson"})),
    "analysis": (frozenset({"trace", "analysis"}), frozenset({"jsonschema"})),
    "errors": (frozenset({"trace"}), frozenset()),
    "version": (frozenset(), frozenset()),
    "providers": (frozenset({"providers", "trace", "errors"}), frozenset()),
    "interception": (
        frozenset({"interception", "errors"}),
        frozenset({"respx", "httpx", "httpx2", "aiohttp"}),
    ),
    "engine": (
        frozenset({"engine", "trace", "analysis", "errors", "providers", "interception"}),
        frozenset(),
    ),
    "demo": (frozenset({"demo", "engine", "trace", "errors"}), frozenset()),
    "importers": (frozenset({"importers", "engine", "trace", "analysis", "errors"}), frozenset()),
    "testing": (frozenset({"testing", "errors"}), frozenset()),
    "plugin": (
        frozenset({"plugin", "engine", "trace", "analysis", "errors", "providers", "interception"}),
        frozenset({"pytest", "_pytest", "pluggy"}),
    ),
    "cli": (
        frozenset(
            {"cli", "engine", "trace", "analysis", "errors", "demo", "importers", "providers", "version"}
        ),
        frozenset(),
    ),
}
ANALYSIS_SIDE = frozenset({"trace", "analysis"})
#: Modules every layer may import: they import nothing of the package (``vocabulary``'s row says so).
SHARED = frozenset({"vocabulary", "importwatch"})


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE_DIR)
    return relative.parts[0].removesuffix(".py") if len(relative.parts) > 1 else relative.stem


def _module_package(path: Path) -> str:
    """The dotted package a module file lives in, e.g. ``pytest_blackbox.trace``."""
    relative = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
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


def _violation(layer: str, module: str) -> str | None:
    allowed, third_party = LAYERS[layer]
    analysis = layer in ANALYSIS_SIDE
    if module == "<dynamic>":
        return (
            "a dynamic import (importlib.import_module / __import__) cannot be checked" if analysis else None
        )
    top = module.split(".")[0]
    if top == PACKAGE:
        target = module.split(".")[1] if "." in module else PACKAGE
        if target not in allowed and target not in SHARED:
            return f"`{module}` is outside what {layer}/ may import ({', '.join(sorted(allowed))})"
        return None
    if top in ("pytest", "_pytest") and top not in third_party:
        return f"`{module}` is pytest, which only plugin/ imports"
    if analysis:
        for name, reason in NETWORK.items():
            if module == name or module.startswith(name + "."):
                return f"`{module}` is {reason}"
    if top in sys.stdlib_module_names or top == "__future__" or top in third_party:
        return None
    if analysis:
        allowed_here = " and ".join(sorted(third_party))
        return f"`{module}` is not in the standard library (only {allowed_here} allowed)"
    return None  # execution-side folders may use their optional libraries, imported where needed


def check_source(source: str, path: Path) -> list[str]:
    """Every forbidden import in one module, as ``file:line: import X: reason``."""
    tree = ast.parse(source, filename=str(path))
    problems = []
    for line, module in _imported(tree, _module_package(path)):
        reason = _violation(_layer(path), module)
        if reason is not None:
            problems.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: import {module}: {reason}")
    return problems


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if p != PACKAGE_DIR / "__init__.py")


def test_every_folder_is_in_the_table() -> None:
    assert {_layer(path) for path in _modules()} == set(LAYERS)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_what_its_role_needs(layer: str) -> None:
    modules = [path for path in _modules() if _layer(path) == layer]
    assert modules, f"no module found for {layer}/"
    problems = [problem for path in modules for problem in check_source(path.read_text("utf-8"), path)]
    assert not problems, f"{layer}/ reaches past its layer:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("layer", "source", "reason"),
    [
        ("trace", "import httpx", "`httpx` is not in the standard library"),
        ("trace", "import http.client", "`http.client` is network access"),
        ("analysis", "from urllib.request import urlopen", "`urllib.request` is network access"),
        ("trace", "import asyncio", "`asyncio` is network and subprocess access"),
        ("analysis", "from socket import create_connection", "`socket` is network access"),
        ("trace", "from ..providers import anthropic", "`pytest_blackbox.providers` is outside"),
        ("analysis", "from .. import interception", "`pytest_blackbox.interception` is outside"),
        ("trace", "from ..analysis import verify", "`pytest_blackbox.analysis` is outside"),
        ("analysis", "from ..cli import main", "`pytest_blackbox.cli` is outside"),
        ("analysis", "from pytest_blackbox.plugin import x", "`pytest_blackbox.plugin` is outside"),
        ("trace", "from ..errors import SecretLeakError", "`pytest_blackbox.errors` is outside"),
        ("analysis", "import yaml", "`yaml` is not in the standard library (only jsonschema allowed)"),
        ("trace", "import yaml", "`yaml` is not in the standard library (only jsonschema and orjson"),
        ("trace", "import importlib\nimportlib.import_module('httpx')", "a dynamic import"),
        ("engine", "import pytest", "only plugin/ imports"),
        ("providers", "from ..engine import session", "`pytest_blackbox.engine` is outside"),
        ("interception", "from ..trace import io", "`pytest_blackbox.trace` is outside"),
        ("engine", "from ..plugin import testrun", "`pytest_blackbox.plugin` is outside"),
        ("engine", "from ..demo import fork_run", "`pytest_blackbox.demo` is outside"),
    ],
)
def test_the_checker_catches_forbidden_imports(layer: str, source: str, reason: str) -> None:
    problems = check_source(source, PACKAGE_DIR / layer / "example.py")
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"pytest_blackbox/{layer}/example.py:")
    assert reason in problems[0]


@pytest.mark.parametrize(
    ("layer", "source"),
    [
        ("trace", "from __future__ import annotations"),
        ("trace", "import json, hashlib, re"),
        ("trace", "from jsonschema import Draft202012Validator"),
        ("trace", "from .canonical import canonical_json"),
        ("trace", "from . import canonical"),
        ("analysis", "from pytest_blackbox.trace.model import Trace"),
        ("analysis", "from ..trace.io import load_trace"),
        ("trace", "import urllib.parse"),
        ("plugin", "import pytest"),
        ("engine", "from ..providers import anthropic"),
    ],
)
def test_the_checker_allows_each_layers_imports(layer: str, source: str) -> None:
    assert check_source(source, PACKAGE_DIR / layer / "example.py") == []


#: Engine modules another layer may still import directly, with the reason (none today: every
#: other layer uses what ``pytest_blackbox.engine`` exports).
ENGINE_INSIDE_ALLOWED: dict[str, str] = {}


def _engine_module(name: str) -> bool:
    return (PACKAGE_DIR / "engine" / f"{name}.py").is_file()


def engine_inside_imports(source: str, path: Path) -> list[str]:
    """Every import of a module inside ``engine/`` by a module of another layer: by its dotted name
    (``from ..engine.session import Session``) or as a name of the package (``from ..engine import
    owners``)."""
    if _layer(path) == "engine":
        return []
    tree = ast.parse(source, filename=str(path))
    package = _module_package(path)
    shown = path.relative_to(PACKAGE_DIR.parent)
    problems = []
    for line, module in _imported(tree, package):
        if module.startswith(f"{PACKAGE}.engine.") and module not in ENGINE_INSIDE_ALLOWED:
            problems.append(
                f"{shown}:{line}: import {module}: "
                f"import it from {PACKAGE}.engine (add it to the engine's exports)"
            )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _resolve(node, package) == f"{PACKAGE}.engine":
            problems.extend(
                f"{shown}:{node.lineno}: import {PACKAGE}.engine.{alias.name}: a module, not an export; "
                f"import the names it needs from {PACKAGE}.engine (add them to the engine's exports)"
                for alias in node.names
                if _engine_module(alias.name)
            )
    return problems


def test_other_layers_import_the_engine_only_through_its_exports() -> None:
    problems = [p for path in _modules() for p in engine_inside_imports(path.read_text("utf-8"), path)]
    assert not problems, "\n".join(problems)


def test_a_direct_import_of_an_engine_module_is_caught() -> None:
    path = PACKAGE_DIR / "plugin" / "example.py"
    assert engine_inside_imports("from ..engine.session import Session\n", path) == [
        "pytest_blackbox/plugin/example.py:1: import pytest_blackbox.engine.session: "
        "import it from pytest_blackbox.engine (add it to the engine's exports)"
    ]
    assert engine_inside_imports("from ..engine import owners\n", path) == [
        "pytest_blackbox/plugin/example.py:1: import pytest_blackbox.engine.owners: a module, not an export; "
        "import the names it needs from pytest_blackbox.engine (add them to the engine's exports)"
    ]
    assert engine_inside_imports("from ..engine import Session, claim_calls\n", path) == []
    assert engine_inside_imports("from . import owners\n", PACKAGE_DIR / "engine" / "x.py") == []
    assert engine_inside_imports("from .session import Session\n", PACKAGE_DIR / "engine" / "x.py") == []


def test_every_engine_export_resolves() -> None:
    import pytest_blackbox.engine as engine

    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
