"""The read-only commands ``verify``, ``diff``, ``inspect``, ``list``, ``assert`` and ``textconv``;
they import only the analysis side and the key variable names (``engine.keys``). See docs/cli-analysis.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from ..analysis.assertions import assert_cassette, parse_tools, render_assert_report
from ..analysis.diff import diff_outcome, diff_traces, is_fork_pair, render_diff
from ..analysis.extensions import extensions_used
from ..analysis.labels import describe_step
from ..analysis.textconv import cassette_text, is_cassette_document
from ..analysis.verify import VerifyReport, render_verify_report, verify_trace
from ..engine import KEY_VARIABLES, environment_keys
from ..errors import BlackboxUsageError
from ..trace.canonical import pretty_json
from ..trace.errors import CassetteError
from ..trace.io import load_trace, parse_json, read_text
from ..trace.model import Trace
from ..trace.payloads import terminal_outcome
from ..trace.secrets import mask
from .common import add_command

#: Below this many bytes in all, files are verified in this process: starting workers would cost more.
PARALLEL_FROM_BYTES = 1 << 20


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``verify``, ``diff``, ``inspect``, ``list``, ``assert`` and ``textconv``."""
    _add_verify(sub)
    _add_diff(sub)
    _add_inspect(sub)
    _add_list(sub)
    _add_assert(sub)
    _add_textconv(sub)


def _add_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-key-env",
        action="append",
        default=[],
        metavar="NAME",
        help="also treat the value of this environment variable as an API key (repeatable; "
        f"{', '.join(KEY_VARIABLES)} are always used)",
    )


def _add_verify(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "verify",
        "check cassettes: schema, hash chain, provider neutrality, replayability",
        "Check each cassette's schema version, hash chain, provider neutrality (no provider ids, "
        "usage/stop metadata or keys) and replayability. A folder stands for every .json file under it, "
        "in every subfolder (hidden ones skipped). Several cassettes are checked on all cores. Exits 0 "
        "when every cassette passes, 1 otherwise.",
        [
            "blackbox verify runs/weather.json",
            "blackbox verify tests/cassettes",
            "blackbox verify runs/*.json --json",
        ],
    )
    parser.add_argument(
        "cassettes", nargs="+", metavar="cassette", help="cassette file(s), or folder(s) to check all of"
    )
    parser.add_argument("--json", action="store_true", help="print the report(s) as one JSON document")
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=os.cpu_count() or 1,
        metavar="N",
        help="check at most N cassettes at once (default: the number of cores)",
    )
    _add_key_option(parser)
    parser.set_defaults(func=run_verify)


def _add_diff(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "diff",
        "find the first step where two cassettes diverge",
        "Compare two cassettes step by step and report the first divergence, the value that changed and "
        "whether the outcome (status, final answer, tool path) changed. A fork and its parent are "
        "compared by step hash; any other two cassettes (two recordings of one test, say) by step type "
        "and payload, since their timestamps and so their hashes differ from step 0. --semantic and "
        "--by-hash choose the comparison. Exits 0 once compared (diverging or not), 1 if a cassette "
        "cannot be loaded.",
        [
            "blackbox diff runs/weather.json runs/weather-fork.json",
            "git show HEAD:tests/cassettes/test_agent/test_weather.json > before.json && "
            "blackbox diff before.json tests/cassettes/test_agent/test_weather.json",
        ],
    )
    parser.add_argument("parent", help="the parent (baseline) cassette")
    parser.add_argument("child", help="the child (comparison) cassette")
    add_comparison_options(parser)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.set_defaults(func=run_diff)


def add_comparison_options(parser: argparse.ArgumentParser) -> None:
    """``--semantic`` and ``--by-hash``; without either, :func:`compares_semantically` decides."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--semantic",
        action="store_true",
        help="compare step type and payload only, ignoring timestamps and hash-chain fields "
        "(the default unless one cassette is a fork of the other)",
    )
    group.add_argument(
        "--by-hash",
        action="store_true",
        help="compare step hashes, as for a fork and its parent (the default for those)",
    )


def compares_semantically(args: argparse.Namespace, parent: Trace, child: Trace) -> bool:
    """The comparison asked for, else by hash for a fork pair and by type and payload otherwise."""
    if args.semantic or args.by_hash:
        return bool(args.semantic)
    return not is_fork_pair(parent, child)


def _add_inspect(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "inspect",
        "show a cassette's metadata and step timeline",
        "Show a cassette's metadata, outcome and one line per step; --step N shows one step in full.",
        ["blackbox inspect runs/weather.json", "blackbox inspect runs/weather.json --step 3"],
    )
    parser.add_argument("cassette", help="the cassette file")
    parser.add_argument(
        "--step", type=int, metavar="N", help="show step N in full (type, hash, time, payload)"
    )
    parser.set_defaults(func=run_inspect)


def _add_list(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "list",
        "list the cassettes in a directory",
        "List every .json file in a directory and its subfolders (hidden ones skipped) with its id, "
        "version, step count, status and creation date. Files that are not valid cassettes are reported "
        "as warnings. Exits 0 once listed, 1 if the directory cannot be read.",
        ["blackbox list", "blackbox list runs", "blackbox list tests/cassettes"],
    )
    parser.add_argument("dir", nargs="?", default="traces", help="the directory (default: traces)")
    parser.set_defaults(func=run_list)


def _add_assert(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "assert",
        "verify a cassette and check its outcome (for CI)",
        "Run verify, then check each given expectation exactly. Exits 0 only if everything passes. "
        "--expect-tools reads the recorded tool_call steps, so it needs wrapped tools; an empty value "
        "means no tool calls.",
        [
            "blackbox assert runs/weather.json --expect-status success --expect-tools weather,weather",
            'blackbox assert runs/storm.json --expect-final-answer "Neither is great."',
        ],
    )
    parser.add_argument("cassette", help="the cassette file")
    parser.add_argument(
        "--expect-status", choices=("success", "error", "incomplete"), help="expected terminal status"
    )
    parser.add_argument("--expect-final-answer", metavar="TEXT", help="expected final answer (exact)")
    parser.add_argument("--expect-tools", metavar="A,B", help="expected tool-call sequence, comma-separated")
    parser.add_argument("--expect-failure-reason", metavar="REASON", help="expected failure reason")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_key_option(parser)
    parser.set_defaults(func=run_assert)


def _add_textconv(sub: argparse._SubParsersAction[Any]) -> None:
    parser = add_command(
        sub,
        "textconv",
        "print a cassette as stable text for git diff (a diff driver)",
        "Print a cassette as line-oriented text without what differs between two recordings of the "
        "same run (createdAt, timestamps, hashes, step ids): a header with the id and the outcome, then "
        "each step's index, type and indented payload. Set it as git's textconv for cassettes and "
        "git diff, git log -p and git show print only what changed in the run. A file that is not a "
        "cassette is printed as it is. Exits 0, or 1 if the file cannot be read.",
        [
            "blackbox textconv tests/cassettes/test_agent/test_weather.json",
            'git config diff.blackbox.textconv "blackbox textconv"',
        ],
    )
    parser.add_argument("cassette", help="the cassette file (git passes a temporary copy)")
    parser.set_defaults(func=run_textconv)


# --------------------------------------------------------------------------------------------
# Handlers


def api_keys(extra_variables: Sequence[str] = ()) -> list[str]:
    """The API key values to look for: the default variables plus any named with ``--api-key-env``."""
    keys: list[str] = []
    for name in extra_variables:
        value = os.environ.get(name)
        if not value:
            raise BlackboxUsageError(f"--api-key-env {name}: the environment variable {name} is not set")
        keys.append(value)
    keys.extend(environment_keys(os.environ).values())
    return keys


def _color(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return number


def cassette_files(directory: Path) -> list[Path]:
    """Every ``.json`` file under ``directory``, in path order; hidden files and folders are skipped.

    pytest keeps cassettes in a folder per test module (``cassettes/<module>/<test>.json``), so a
    folder is walked to the bottom.
    """

    def unreadable(error: OSError) -> None:
        reason = error.strerror or error.__class__.__name__
        raise BlackboxUsageError(f"`{error.filename}` cannot be read: {reason}")

    found: list[Path] = []
    for root, folders, files in os.walk(directory, onerror=unreadable):
        folders[:] = [folder for folder in folders if not folder.startswith(".")]
        found += [Path(root, name) for name in files if name.endswith(".json") and not name.startswith(".")]
    return sorted(found)


def _cassette_paths(names: Sequence[str]) -> list[str]:
    """The files named, with each folder replaced by the cassette files under it."""
    paths: list[str] = []
    for name in names:
        if not os.path.isdir(name):
            paths.append(name)
            continue
        found = cassette_files(Path(name))
        if not found:
            raise BlackboxUsageError(f"`{name}` holds no .json file, in it or in any subfolder")
        paths += [str(path) for path in found]
    return paths


def _verified(paths: Sequence[str], keys: Sequence[str], jobs: int) -> Iterator[VerifyReport]:
    """The reports in the order of ``paths``; several large enough files are checked on ``jobs`` cores."""
    check = partial(verify_trace, api_keys=keys)
    if jobs < 2 or len(paths) < 2 or _total_size(paths) < PARALLEL_FROM_BYTES:
        yield from map(check, paths)
        return
    workers = min(jobs, len(paths))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(check, paths, chunksize=max(1, len(paths) // (workers * 8)))


def _total_size(paths: Sequence[str]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path)
        except (OSError, ValueError):
            continue  # verify reports it
    return total


def run_verify(args: argparse.Namespace) -> int:
    keys = api_keys(args.api_key_env)
    paths = _cassette_paths(args.cassettes)
    reports: list[VerifyReport] = []
    color = _color(sys.stdout)
    for report in _verified(paths, keys, args.jobs):
        if not args.json:
            print(("\n" if reports else "") + render_verify_report(report, color), flush=True)
        reports.append(report)
    failed = sum(1 for report in reports if not report.ok)
    if args.json:
        documents = [report.to_json() for report in reports]
        one_file = paths == list(args.cassettes) and len(paths) == 1
        _print_json(documents[0] if one_file else documents)
    elif len(reports) > 1:
        print(f"\n{len(reports)} cassette(s) checked: {len(reports) - failed} passed, {failed} failed.")
    return 1 if failed else 0


def run_diff(args: argparse.Namespace) -> int:
    keys = api_keys()
    parent, child = load_trace(args.parent, shared=True), load_trace(args.child, shared=True)
    diff = diff_traces(parent, child, semantic=compares_semantically(args, parent, child))
    outcome = diff_outcome(parent, child)
    if args.json:
        data = diff.to_json()
        data["outcome"] = outcome.to_json()
        _print_json(data)
    else:
        print(render_diff(diff, outcome, keys))
    return 0


def iso_time(epoch_ms: Any) -> str:
    """Epoch milliseconds as ``Date.prototype.toISOString`` writes them (``1970-01-01T00:00:00.000Z``)."""
    try:
        moment = datetime.fromtimestamp(int(epoch_ms) // 1000, tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return f"{epoch_ms} (not a valid time)"
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{int(epoch_ms) % 1000:03d}Z"


def _outcome_lines(trace: Trace, keys: Sequence[str]) -> list[str]:
    outcome = terminal_outcome(trace)
    lines = [f"{'Status:':<14}{outcome.status}"]
    if outcome.status == "success" and outcome.final_answer is not None:
        lines.append(f"{'Result:':<14}{mask(outcome.final_answer, keys)}")
    elif outcome.status == "error" and outcome.failure_reason is not None:
        lines.append(f"{'Reason:':<14}{mask(outcome.failure_reason, keys)}")
    return lines


def _metadata_lines(path: str, trace: Trace, keys: Sequence[str]) -> list[str]:
    fields = [
        ("Path:", path),
        ("Id:", mask(str(trace["id"]), keys)),
        ("Version:", str(trace["version"])),
        ("Parent:", mask(trace.get("parentId", "(none)"), keys)),
        ("Forked from:", mask(trace.get("forkedFromStepId", "(none)"), keys)),
        ("Created:", iso_time(trace["createdAt"])),
        ("Steps:", str(len(trace["steps"]))),
    ]
    used = extensions_used(trace["steps"])
    if used:
        named = ", ".join(f"{extension.name} ({extension.doc})" for extension in used)
        fields.append(
            ("Extensions:", f"{named}; the original Blackbox (arda-ulas/blackbox) cannot replay them")
        )
    return [f"{label:<14}{value}" for label, value in fields] + _outcome_lines(trace, keys)


def timeline_line(step: Any, keys: Sequence[str] = ()) -> str:
    """``   0  model_input     b9de1b85  Model called with 1 message(s)``."""
    return f"{step['index']:>4}  {step['type']:<14}  {str(step['hash'])[:8]}  {describe_step(step, keys)}"


def _step_detail(trace: Trace, index: int, path: str, keys: Sequence[str]) -> list[str]:
    steps = trace["steps"]
    if not 0 <= index < len(steps):
        last = f"0–{len(steps) - 1}" if steps else "none"
        raise BlackboxUsageError(
            f"--step {index} is out of range: `{path}` has {len(steps)} step(s) (valid indexes: {last})"
        )
    step = steps[index]
    return [
        f"{'Step:':<11}{index} of {len(steps)}",
        f"{'Type:':<11}{step['type']}",
        f"{'Hash:':<11}{step['hash']}",
        f"{'Time:':<11}{iso_time(step['timestamp'])}",
        f"{'Summary:':<11}{describe_step(step, keys)}",
        "Payload:",
        mask(pretty_json(step["payload"]), keys),
    ]


def run_inspect(args: argparse.Namespace) -> int:
    keys = api_keys()
    trace = load_trace(args.cassette, shared=True)
    if args.step is not None:
        print("\n".join(_step_detail(trace, args.step, args.cassette, keys)))
        return 0
    lines = _metadata_lines(args.cassette, trace, keys)
    lines.append("")
    lines += [timeline_line(step, keys) for step in trace["steps"]]
    print("\n".join(lines))
    return 0


def list_line(name: str, trace: Trace, keys: Sequence[str] = ()) -> str:
    """``name  id=… v=2 steps=N status=success created=YYYY-MM-DD`` for one valid cassette."""
    status = terminal_outcome(trace).label
    created = iso_time(trace["createdAt"])[:10]
    return (
        f"{name}  id={mask(str(trace['id']), keys)} v={trace['version']} steps={len(trace['steps'])} "
        f"status={mask(status, keys)} created={created}"
    )


def run_list(args: argparse.Namespace) -> int:
    keys = api_keys()
    directory = Path(args.dir)
    if not directory.is_dir():
        raise BlackboxUsageError(
            f"`{args.dir}` is not a directory (give the folder that holds your cassettes)"
        )
    files = cassette_files(directory)
    valid = 0
    for file in files:
        try:
            trace = load_trace(file, shared=True)
        except CassetteError as exc:
            print(f"warning: {mask(str(exc), keys)}")
            continue
        valid += 1
        print(list_line(file.relative_to(directory).as_posix(), trace, keys))
    print(f"{valid} of {len(files)} trace(s) valid, {len(files) - valid} warning(s).")
    return 0


def run_textconv(args: argparse.Namespace) -> int:
    text = read_text(args.cassette)
    try:
        doc = parse_json(text, path=args.cassette)
    except CassetteError:
        doc = None  # not JSON this package reads: shown as it is, so git diff still works
    sys.stdout.write(cassette_text(doc) if is_cassette_document(doc) else text)
    return 0


def run_assert(args: argparse.Namespace) -> int:
    keys = api_keys(args.api_key_env)
    report = assert_cassette(
        args.cassette,
        expect_status=args.expect_status,
        expect_final_answer=args.expect_final_answer,
        expect_tools=parse_tools(args.expect_tools) if args.expect_tools is not None else None,
        expect_failure_reason=args.expect_failure_reason,
        api_keys=keys,
    )
    if args.json:
        _print_json(report.to_json())
    else:
        print(render_assert_report(report, _color(sys.stdout)))
    return 0 if report.ok else 1
