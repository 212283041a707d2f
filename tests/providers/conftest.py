"""Shared fixtures for the provider tests: where the shared test vectors live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

VECTORS_DIR = Path(__file__).resolve().parents[3] / "shared" / "vectors"


def load_vectors_file(name: str) -> Any:
    """A JSON file from the vectors directory, read as UTF-8 without newline translation."""
    path = VECTORS_DIR / name
    if not path.is_file():
        pytest.skip(f"the shared test vectors are not available at {VECTORS_DIR}")
    with open(path, encoding="utf-8", newline="") as handle:
        return json.load(handle)


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """The shared vectors directory (skips when this checkout does not have it)."""
    if not VECTORS_DIR.is_dir():
        pytest.skip(f"the shared test vectors are not available at {VECTORS_DIR}")
    return VECTORS_DIR
