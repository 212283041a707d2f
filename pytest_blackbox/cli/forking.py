"""Placeholder: subcommands are registered here by their owner."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: "argparse._SubParsersAction[Any]") -> None:
    """Add this module's subcommands."""
