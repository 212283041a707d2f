"""The public API: what ``pytest_blackbox`` exports, what loading it costs, and what the docs import.

Users import from ``pytest_blackbox`` itself and from the few public subpackages below; every other
module is private and may change. The docs and the example are held to the same rule, so no user
copies an import of a private module from them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import import_module, metadata
from pathlib import Path

import pytest

import pytest_blackbox

REPO = Path(__file__).resolve().parents[1]
#: The modules a user may import from.
PUBLIC = ("pytest_blackbox", "pytest_blackbox.errors", "pytest_blackbox.testing", "pytest_blackbox.demo",
          "pytest_blackbox.importers")  # fmt: skip
IMPORT = re.compile(
    r"^\s*from (pytest_blackbox[\w.]*) import ([\w, ]+)$|^\s*import (pytest_blackbox[\w.]*)$", re.M
)


def documented_imports() -> list[tuple[str, str, list[str]]]:
    """(file, module, names) for every import of the package in the docs, the README and the example."""
    files = [
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "examples").rglob("*.py")),
    ]
    found = []
    for path in files:
        for match in IMPORT.finditer(path.read_text(encoding="utf-8")):
            module = match.group(1) or match.group(3)
            names = [name.strip() for name in (match.group(2) or "").split(",") if name.strip()]
            found.append((path.relative_to(REPO).as_posix(), module, names))
    return found


@pytest.mark.parametrize("name", pytest_blackbox.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(pytest_blackbox, name) is not None


def test_the_errors_are_the_errors_modules_own() -> None:
    from pytest_blackbox import errors

    assert pytest_blackbox.RecordedToolError is errors.RecordedToolError
    assert pytest_blackbox.ReplayDivergenceError is errors.ReplayDivergenceError


def test_importing_the_package_and_its_errors_loads_nothing_else() -> None:
    code = (
        "import sys\n"
        "from pytest_blackbox import BlackboxError, RecordedToolError, ReplayDivergenceError\n"
        "print(*sorted(name for name in sys.modules if name.startswith('pytest_blackbox')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [
        "pytest_blackbox",
        "pytest_blackbox.errors",
        "pytest_blackbox.trace",
        "pytest_blackbox.trace.errors",
    ]


#: Run first in a child interpreter: ``mcp`` (and its types package) cannot be imported, as without the extra.
WITHOUT_MCP = """
import sys


class NoMCP:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoMCP())
"""


def without_mcp(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_MCP + code], capture_output=True, text=True)


def test_the_child_interpreter_cannot_import_mcp() -> None:
    """The check below means something: in the child, ``import mcp`` fails as if it were not installed."""
    done = without_mcp("import mcp")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "ModuleNotFoundError: No module named 'mcp'"


def test_star_import_works_without_mcp_and_mcp_client_names_the_extra() -> None:
    code = (
        "import pytest_blackbox\n"
        "from pytest_blackbox import *\n"
        "print(all(name in globals() for name in pytest_blackbox.__all__))\n"
        "try:\n"
        "    mcp_client(None, 'server.py', name='weather')\n"
        "except BlackboxUsageError as error:\n"
        "    print(error)\n"
    )
    done = without_mcp(code)
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "True",
        "mcp_client needs the MCP Python SDK, which is not installed: pip install 'pytest-blackbox[mcp]'",
    ]


def test_the_version_is_the_distributions() -> None:
    assert pytest_blackbox.__version__ == metadata.version("pytest-blackbox")
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", pytest_blackbox.__version__)


def test_the_docs_and_the_example_import_only_public_modules() -> None:
    imports = documented_imports()
    assert len(imports) >= 5  # the pattern still finds the docs' imports
    private = [f"{file}: {module}" for file, module, _ in imports if module not in PUBLIC]
    assert private == []
    for file, module, names in imports:
        for name in names:
            assert hasattr(import_module(module), name), f"{file}: {module} has no {name}"
