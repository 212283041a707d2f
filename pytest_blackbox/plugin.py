"""pytest hooks, options and fixtures only; the work is imported lazily from private modules."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "blackbox(cassette=None, match='strict', record_mode=None): record this test's model and tool "
        "calls to a Blackbox v2 cassette, or replay them offline.",
    )
