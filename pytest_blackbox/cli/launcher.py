"""``blackbox record`` and ``blackbox replay``: run any Python program that creates a session.

The launcher talks to the session in the child only through ``BLACKBOX_*`` variables (clearing stale
ones first), reads the session's JSON report afterwards, prints one outcome line and exits with the
child's code (128 + the signal number when it was killed), or non-zero on a divergence.
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

from ..errors import BlackboxUsageError
from ..options import SESSION_ENV_VARS
from ..session import LAUNCHED_VAR, OFFLINE_PLACEHOLDER_KEY, PROVIDER_KEY_VARS

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
    record.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    record.set_defaults(func=_record)

    replay = sub.add_parser(
        "replay",
        help="replay a cassette to a command, offline",
        description="Run COMMAND with a replay session: model calls and wrapped tools answer from the cassette.",
        epilog="example: blackbox replay runs/trip.json -- python agent.py",
    )
    replay.add_argument("cassette", type=Path, help="the cassette to replay")
    replay.add_argument(
        "--match",
        choices=("strict", "sequence"),
        default="strict",
        help="compare requests (strict, default) or not",
    )
    replay.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    replay.set_defaults(func=_replay)


def _command(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise BlackboxUsageError(
            f"`blackbox {args.command_name}` needs a command after --, e.g. -- python agent.py"
        )
    return command


def child_env(
    settings: Mapping[str, str], *, offline: bool, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The child's environment: stale ``BLACKBOX_*`` cleared, these settings set, placeholder keys if offline."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in SESSION_ENV_VARS}
    env.update(settings)
    env[LAUNCHED_VAR] = "1"
    if offline:
        for name in PROVIDER_KEY_VARS:
            env.setdefault(name, OFFLINE_PLACEHOLDER_KEY)
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
    """The one-line summary and the exit code to return."""
    if report is None:
        return f"{_MARK} · {verb}  ✗ the command created no blackbox() session (exit code {code})", code or 1
    if not report.get("ok", False):
        error = str(report.get("error", "the session did not finish"))
        first = error.splitlines()[0] if error else "failed"
        kind = "replay diverged" if report.get("errorType") == "ReplayDivergenceError" else "failed"
        return f"{_MARK} · {verb}  ✗ FAIL  {kind}: {first}\n{error}" if "\n" in error else (
            f"{_MARK} · {verb}  ✗ FAIL  {kind}: {first}"
        ), code or 1
    steps, status = report.get("steps"), report.get("status")
    if verb == "replay":
        line = (
            f"{_MARK} · replay  ✓ PASS  replayed {steps} steps from {target} with no network calls ({status})"
        )
    else:
        line = f"{_MARK} · record  wrote {target} ({steps} steps, {status})"
    return line, code


def _record(args: argparse.Namespace) -> int:
    args.command_name = "record"
    command = _command(args)
    settings = {"BLACKBOX_MODE": "record", "BLACKBOX_OUT": str(args.out.resolve())}
    if args.trace_id:
        settings["BLACKBOX_TRACE_ID"] = args.trace_id
    code, report = run_child(command, child_env(settings, offline=False))
    line, exit_code = outcome_line("record", report, code, str(args.out))
    print(line, file=sys.stderr)
    return exit_code


def _replay(args: argparse.Namespace) -> int:
    args.command_name = "replay"
    command = _command(args)
    settings = {
        "BLACKBOX_MODE": "replay",
        "BLACKBOX_CASSETTE": str(args.cassette.resolve()),
        "BLACKBOX_MATCH": args.match,
    }
    code, report = run_child(command, child_env(settings, offline=True))
    line, exit_code = outcome_line("replay", report, code, str(args.cassette))
    print(line, file=sys.stderr)
    return exit_code
