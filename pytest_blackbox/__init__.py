"""pytest-blackbox: record AI-agent tests once, replay them offline from Blackbox v2 cassettes."""

from __future__ import annotations

from .errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    CassetteError,
    ReplayDivergenceError,
)

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "CassetteError",
    "ReplayDivergenceError",
]
