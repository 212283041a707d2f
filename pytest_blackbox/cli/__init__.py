"""The ``blackbox`` command: argparse only, one small function per subcommand calling the library.

Each command group registers itself from its own module, so the read-only commands never import the
execution side. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module

from ..trace.errors import BlackboxError

#: Modules that contribute subcommands, in the order ``--help`` lists them.
COMMAND_MODULES = ("analysis", "launcher", "fork", "view")


def build_parser() -> argparse.ArgumentParser:
    from ..version import installed_version

    parser = argparse.ArgumentParser(
        prog="blackbox",
        description="Record, replay, verify, diff and fork Blackbox v2 agent cassettes.",
    )
    parser.add_argument(
        "--version", action="version", version=f"blackbox (pytest-blackbox) {installed_version()}"
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    sub.required = True
    for name in COMMAND_MODULES:
        import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (1 for a failed check or a refused input, 2 for usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BlackboxError as exc:
        print(f"blackbox {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `blackbox diff … | head`: the reader left; that is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
