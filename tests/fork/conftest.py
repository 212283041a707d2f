"""Shared fixtures for the fork, demo and importer tests: the frozen vectors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests import vector_text as read_vector


@pytest.fixture(scope="session")
def vector_text() -> Callable[[str], str]:
    """Read a vector file's exact text (bytes decoded, no newline translation)."""
    return read_vector


@pytest.fixture
def fork_parent() -> Any:
    return json.loads(read_vector("fixtures/traces/fork-parent.v2.json"))


@pytest.fixture
def fork_child_text() -> str:
    return read_vector("fixtures/traces/fork-child.v2.json")
