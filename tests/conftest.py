"""Fixtures every test folder shares: the frozen vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import VECTORS, vector_json


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return VECTORS


@pytest.fixture(scope="session")
def expectations() -> dict[str, Any]:
    """``expectations.json``: the frozen expected values of every vector."""
    loaded: dict[str, Any] = vector_json("expectations.json")
    return loaded
