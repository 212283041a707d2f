"""Shared fixtures for the fork, demo and importer tests: the frozen vectors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).resolve().parents[3] / "shared" / "vectors"


def _read(relative: str) -> str:
    return (VECTORS / relative).read_bytes().decode("utf-8")


@pytest.fixture(scope="session")
def vectors() -> Path:
    return VECTORS


@pytest.fixture(scope="session")
def vector_text() -> Callable[[str], str]:
    """Read a vector file's exact text (bytes decoded, no newline translation)."""
    return _read


@pytest.fixture(scope="session")
def expectations() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_read("expectations.json"))
    return result


@pytest.fixture
def fork_parent() -> Any:
    return json.loads(_read("fixtures/traces/fork-parent.v2.json"))


@pytest.fixture
def fork_child_text() -> str:
    return _read("fixtures/traces/fork-child.v2.json")
