"""How every ``blackbox`` subcommand is declared, so ``--help`` and docs/cli.md read alike."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any


def add_command(
    sub: argparse._SubParsersAction[Any], name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """A subcommand with a one-line summary, a wrapped description and working examples."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 78, break_on_hyphens=False),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser
