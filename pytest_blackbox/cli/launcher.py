"""``blackbox record`` and ``blackbox replay``: run any Python program that creates a session.

The launcher talks to the session in the child only through ``BLACKBOX_*`` variables (clearing stale
ones first) and the report the session writes. See
docs/engine.md#the-launcher-blackbox-record-and-blackbox-replay.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine import LAUNCHED_VAR, SESSION_ENV_VARS, set_placeholder_keys
from ..errors import BlackboxUsageError
from ..vocabulary import MATCHES

_MARK = "◼ blackbox"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``record`` and ``replay``."""
    record = sub.add_parser(
        "record",
        help="run a command and record its blackbox() session to a cassette",
        description="Run COMMAND with a record session; the cassette is written when the session finishes.",
        epilog="example: blackbox record --out runs/trip.json -- python agent.py",
    )
    record.add_argument("--out", required=True, type=Path, help="the cassette to write")
    record.add_argument("--id", dest="trace_id", help="the trace id (default: the out file's base name)")
    record.add_argument("child", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run")
    record.set_defaults(func=_record)

    replay = sub.add_parser(
        "replay",
        help="replay a cassette to a command, offline",
        description=(
            "Run COMMAND with a replay session: model calls and wrapped tools answer from the cassette."
        ),
        epilog="example: blackbox replay runs/trip.json --match sequence -- python agent.py",
    )
    replay.add_argument("cassette", type=Path, help="the cassette to replay")
    _replay_options(replay)
    replay.add_argument("child", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run")
    replay.set_defaults(func=_replay)


def _replay_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--match",
        choices=MATCHES,
        default="strict",
        help="compare requests (strict, default) or not",
    )


def _command(args: argparse.Namespace, verb: str) -> list[str]:
    """The child command, after ``--``.

    argparse hands everything after the first positional argument to the command, options included
    (``replay C --match sequence -- cmd``); the options before ``--`` are parsed here instead.
    """
    rest = list(args.child)
    if verb == "replay" and rest[:1] != ["--"] and rest[:1] and rest[0].startswith("-") and "--" in rest:
        split = rest.index("--")
        options = argparse.ArgumentParser(prog=f"blackbox {verb}", add_help=False)
        _replay_options(options)
        options.parse_args(rest[:split], namespace=args)
        rest = rest[split:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    elif rest and rest[0].startswith("-"):
        raise BlackboxUsageError("put -- between the options and the command, e.g. -- python agent.py")
    if not rest:
        raise BlackboxUsageError("a command is needed after --, e.g. -- python agent.py")
    return rest


def child_env(
    settings: Mapping[str, str], *, offline: bool, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The child's environment: stale ``BLACKBOX_*`` cleared, these settings set, placeholder keys if offline.

    The SDK constructors refuse to start without a key, so an offline run gets a placeholder for each
    provider key that is unset or empty; nothing is ever sent with it.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in SESSION_ENV_VARS}
    env.update(settings)
    env[LAUNCHED_VAR] = "1"
    if offline:
        set_placeholder_keys(env)
    return env


def run_child(command: list[str], env: Mapping[str, str]) -> tuple[int, dict[str, Any] | None]:
    """Run the command with inherited stdio; return its exit code and the session's report."""
    fd, report_name = tempfile.mkstemp(prefix="blackbox-report-", suffix=".json")
    os.close(fd)
    os.unlink(report_name)
    full_env = dict(env, BLACKBOX_REPORT=report_name)
    shell = len(command) == 1 and " " in command[0]
    try:
        proc = subprocess.run(command[0] if shell else command, env=full_env, shell=shell, check=False)
    except FileNotFoundError:
        raise BlackboxUsageError(f"command not found: {command[0]}") from None
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    report = _read_report(Path(report_name))
    return code, report


def _read_report(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        path.unlink(missing_ok=True)
    return data if isinstance(data, dict) else None


def outcome_line(verb: str, report: dict[str, Any] | None, code: int, target: str) -> tuple[str, int]:
    """The summary (one line, then the error's own lines if it has several) and the exit code to return."""
    if report is None:
        return _no_report(verb, code), code or 1
    if not report.get("ok", False):
        return _failure(verb, report), code or 1
    steps, status = report.get("steps"), report.get("status")
    if verb == "replay":
        line = (
            f"{_MARK} · replay  ✓ PASS  replayed {steps} steps from {target} with no network calls ({status})"
        )
    else:
        line = f"{_MARK} · record  wrote {target} ({steps} steps, {status})"
    return line, code


def _no_report(verb: str, code: int) -> str:
    if code > 128:
        return (
            f"{_MARK} · {verb}  ✗ the command was killed by signal {code - 128} (exit code {code}) before "
            "its blackbox() session could report"
        )
    return f"{_MARK} · {verb}  ✗ the command created no blackbox() session (exit code {code})"


def _failure(verb: str, report: dict[str, Any]) -> str:
    """``✗ FAIL  replay diverged at step 3, …`` with the divergence's detail lines below it."""
    error = str(report.get("error") or "the session did not finish")
    first, _, rest = error.partition("\n")
    if report.get("errorType") == "ReplayDivergenceError":
        headline = first if first.startswith("replay diverged") else f"replay diverged: {first}"
    else:
        headline = f"failed: {first}"
    return f"{_MARK} · {verb}  ✗ FAIL  {headline}" + (f"\n{rest}" if rest else "")


def _record(args: argparse.Namespace) -> int:
    command = _command(args, "record")
    settings = {"BLACKBOX_MODE": "record", "BLACKBOX_OUT": str(args.out.resolve())}
    if args.trace_id:
        settings["BLACKBOX_TRACE_ID"] = args.trace_id
    code, report = run_child(command, child_env(settings, offline=False))
    line, exit_code = outcome_line("record", report, code, str(args.out))
    print(line, file=sys.stderr)
    return exit_code


def _replay(args: argparse.Namespace) -> int:
    command = _command(args, "replay")
    settings = {
        "BLACKBOX_MODE": "replay",
        "BLACKBOX_CASSETTE": str(args.cassette.resolve()),
        "BLACKBOX_MATCH": args.match,
    }
    code, report = run_child(command, child_env(settings, offline=True))
    line, exit_code = outcome_line("replay", report, code, str(args.cassette))
    print(line, file=sys.stderr)
    return exit_code
