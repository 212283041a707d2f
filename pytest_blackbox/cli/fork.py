"""``blackbox demo``, ``check``, ``fork`` and ``import``: the commands that write new cassettes.

``fork`` with a cassette is the session fork (it re-runs the user's agent under the launcher), and
without one the demo fork; one subparser serves both, and the positional cassette decides. See
docs/fork-demo-import.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.diff import diff_outcome, diff_traces
from ..analysis.verify import VerifyReport, verify_trace
from ..demo.agent import SCENARIOS, run_demo
from ..demo.fork import fork_run
from ..engine import environment_keys
from ..errors import BlackboxError, BlackboxUsageError, ForkError, SecretLeakError, TranscriptImportError
from ..importers import IMPORTERS, import_chat_json, import_claude_code
from ..trace.io import load_trace, parse_json, read_text, same_file, save_trace
from ..trace.model import Trace
from ..trace.payloads import terminal_outcome, tool_call_sequence
from ..trace.secrets import contains_secret, known_secrets, truncate_masked
from ..vocabulary import MATCHES, UNSET
from .analysis import api_keys
from .common import add_command
from .launcher import child_env, outcome_line, run_child

if TYPE_CHECKING:
    from ..engine import SessionFork, SessionOptions

__all__ = ["DEFAULT_FORK_PAYLOAD", "register", "run_demo_fork", "run_session_fork"]

#: The demo fork's replacement for the hotel search result: nothing is available.
DEFAULT_FORK_PAYLOAD = '{"results":[],"available":false,"message":"No hotels available for that date."}'
_DEFAULT_TRACE = os.path.join("traces", "example-trace.json")
_MARK = "◼ blackbox ·"
_STEP_INDEX = re.compile(r"^(0|[1-9]\d*)$")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``demo``, ``check``, ``fork`` and ``import``."""
    _add_demo(sub)
    _add_check(sub)
    _add_fork(sub)
    _add_import(sub)


def _add_demo(sub: argparse._SubParsersAction[Any]) -> None:
    demo = add_command(
        sub,
        "demo",
        "write the two sample cassettes of the built-in demo agent",
        "Run the built-in demo agent and write its cassettes: a hotel booking that succeeds "
        "(example-trace.json) and a run that calls an unknown tool (example-error-trace.json). It needs no "
        "API key, no network and no test file, so the other commands have something to work on.",
        ["blackbox demo", "blackbox demo --scenario error --out-dir runs"],
    )
    demo.add_argument(
        "--scenario",
        choices=("success", "error", "all"),
        default="all",
        help="which run to write: the successful booking, the unknown-tool error, or both (default: all)",
    )
    demo.add_argument("--out-dir", default="traces", help="directory to write into (default: traces)")
    demo.set_defaults(func=_demo)


def _add_check(sub: argparse._SubParsersAction[Any]) -> None:
    check = add_command(
        sub,
        "check",
        "self-test with no key and no network: demo → verify → fork → verify → diff",
        "Check an installation end to end with no API key and no network: record the demo run, verify it, "
        "fork it with a changed tool result, verify the fork and diff the two. Prints one PASS or FAIL line; "
        "exits 0 on PASS, 1 on FAIL.",
        ["blackbox check", "blackbox check --out-dir runs/check"],
    )
    check.add_argument("--out-dir", help="keep the cassettes in this directory (default: a temporary one)")
    check.set_defaults(func=_check)


def _add_fork(sub: argparse._SubParsersAction[Any]) -> None:
    fork = add_command(
        sub,
        "fork",
        "fork a cassette: change one tool result and let your agent (or the demo agent) run on",
        "With a cassette and a command (the session fork): replay the cassette to COMMAND up to the tool "
        "whose result is step --at, hand the agent the --set value instead of the recorded result, and let "
        "it run on with your real model client (--live) or with scripted model replies (--script). Steps 0 "
        "to N-1 are copied from the cassette, step N holds the new result, and --out receives the child "
        "cassette. Without a cassette (the demo fork): copy a demo cassette up to --fork-index, change one "
        "tool result (or the prompt) and let the built-in demo agent run on. Either way the child names its "
        "parent, so blackbox diff shows where and how the two runs part.",
        [
            "blackbox fork runs/triage.json --at 5 --set @reading.json --out runs/hot.json "
            "--script replies.json -- python agent.py",
            "blackbox fork tests/cassettes/test_agent/test_weather.json --at 3 --set '{\"celsius\": 40}' "
            "--out hot.json --script replies.json -- pytest tests/test_agent.py::test_weather",
            "blackbox fork",
            'blackbox fork --mode prompt --prompt "Book a hotel for Bob next weekend." --out traces/bob.json',
        ],
    )
    fork.add_argument(
        "cassette", nargs="?", help="the cassette to fork (the session fork); without it, the demo fork runs"
    )
    _session_fork_options(fork)
    fork.add_argument(
        "--trace", default=_DEFAULT_TRACE, help=f"demo fork: parent cassette (default: {_DEFAULT_TRACE})"
    )
    fork.add_argument(
        "--mode",
        choices=("tool-result", "prompt"),
        default="tool-result",
        help="demo fork: what to change: tool-result (the default) replaces the tool result at "
        "--mutation-step, prompt replaces the prompt with --prompt",
    )
    fork.add_argument("--fork-index", type=int, default=4, help="demo fork: step to fork at (default: 4)")
    fork.add_argument(
        "--mutation-step", type=int, default=3, help="demo fork: tool_result step to change (default: 3)"
    )
    fork.add_argument(
        "--payload-json", default=DEFAULT_FORK_PAYLOAD, help="demo fork: the new tool result, as JSON"
    )
    fork.add_argument("--prompt", help="demo fork: the new prompt (--mode prompt)")
    fork.add_argument(
        "child", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="session fork: the command to run"
    )
    fork.set_defaults(func=_fork)


def _step_index(text: str) -> int:
    if not _STEP_INDEX.match(text):
        raise argparse.ArgumentTypeError(f"must be a step index (0, 1, 2, …), got {text!r}")
    return int(text)


def _session_fork_options(parser: argparse.ArgumentParser) -> None:
    """The session fork's options; the ``--out`` both forms share is added here too."""
    parser.add_argument(
        "--out",
        help="the child cassette (required for the session fork; demo fork default: <trace>-fork.json)",
    )
    parser.add_argument(
        "--at",
        type=_step_index,
        metavar="N",
        help="session fork: the tool_result step whose result to replace",
    )
    parser.add_argument(
        "--set",
        dest="fork_set",
        metavar="JSON|@FILE",
        help="session fork: the replacement tool result, as JSON or @file.json",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--live", action="store_true", help="session fork: after the fork point, call the real model"
    )
    how.add_argument(
        "--script",
        metavar="R",
        help="session fork: after the fork point, answer model calls with the replies in this JSON file",
    )
    parser.add_argument(
        "--match",
        choices=MATCHES,
        help="session fork: compare the requests before the fork point (strict, the default) or not",
    )


def _add_import(sub: argparse._SubParsersAction[Any]) -> None:
    imp = add_command(
        sub,
        "import",
        "convert a Claude Code or chat JSON transcript into a cassette",
        "Convert a run recorded elsewhere into a cassette, so verify, inspect, diff and assert work on it. "
        "The cassette is written only if it passes verify; a transcript holding your API key is refused.",
        [
            "blackbox import --from claude-code --in session.jsonl --out runs/session.json",
            "blackbox import --from chat-json --in chat.json --out runs/chat.json --id chat-run",
        ],
    )
    imp.add_argument(
        "--from",
        dest="source",
        choices=IMPORTERS,
        required=True,
        help='the transcript format: a Claude Code session .jsonl file (claude-code) or {"tools": [...], '
        '"messages": [...]} with OpenAI-style messages (chat-json)',
    )
    imp.add_argument("--in", dest="input", required=True, help="the transcript file")
    imp.add_argument("--out", required=True, help="the cassette to write")
    imp.add_argument("--id", dest="trace_id", help="trace id (default: the --out file name without .json)")
    imp.set_defaults(func=_import)


def _demo(args: argparse.Namespace) -> int:
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    for name in names:
        path = Path(args.out_dir) / SCENARIOS[name].file_name
        trace = run_demo(name)
        save_trace(trace, path)
        print(f"{_MARK} demo  wrote {path} ({len(trace['steps'])} steps, {terminal_outcome(trace).label})")
    return 0


# --- fork (demo form) -------------------------------------------------------------------------


def _default_fork_out(trace_path: str) -> str:
    base = trace_path[: -len(".json")] if trace_path.endswith(".json") else trace_path
    return f"{base}-fork.json"


def _payload(text: str) -> Any:
    try:
        return parse_json(text)
    except BlackboxError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise BlackboxUsageError(
            f"--payload-json is not valid JSON ({reason}); pass one JSON value, e.g. {DEFAULT_FORK_PAYLOAD}"
        ) from None


def run_demo_fork(args: argparse.Namespace) -> int:
    """The command-less ``fork``: re-run the demo agent from a changed tool result or prompt."""
    out = args.out or _default_fork_out(args.trace)
    if same_file(out, args.trace):
        raise ForkError(f"Refusing to overwrite the parent trace at {args.trace}. Pass an explicit --out.")
    if args.mode == "prompt" and args.prompt is None:
        raise BlackboxUsageError("--mode prompt needs the new prompt: --prompt TEXT")
    if not os.path.exists(args.trace):
        raise BlackboxUsageError(
            f"{args.trace} does not exist; run `blackbox demo` first, or pass --trace <cassette>"
        )
    parent = load_trace(args.trace)
    if args.mode == "prompt":
        result = fork_run(parent, args.fork_index, f"{parent['id']}-fork", prompt_mutation=args.prompt)
        changed = f"step {args.fork_index} starts from your new prompt"
    else:
        mutations = {args.mutation_step: _payload(args.payload_json)}
        result = fork_run(parent, args.fork_index, f"{parent['id']}-fork", tool_result_mutations=mutations)
        changed = f"step {args.mutation_step} is your new result"
    save_trace(result.child_trace, out)
    child = result.child_trace
    copied = _copied_steps(result.prefix_length)
    summary = f"{len(child['steps'])} steps, {terminal_outcome(child).label}"
    print(f"{_MARK} fork  wrote {out} ({summary}); {copied} from {args.trace}, {changed}")
    if result.final_answer is not None:
        print(f"  answer: {truncate_masked(result.final_answer, 200, api_keys())}")
    print(f"  next:   blackbox diff {args.trace} {out}")
    return 0


def _copied_steps(count: int) -> str:
    if count == 0:
        return "no steps are copied"
    if count == 1:
        return "step 0 is copied"
    return f"steps 0–{count - 1} are copied"


# --- fork (session form) ----------------------------------------------------------------------

#: The demo form's options and defaults; the session form refuses them.
_DEMO_DEFAULTS: dict[str, Any] = {
    "trace": _DEFAULT_TRACE,
    "mode": "tool-result",
    "fork_index": 4,
    "mutation_step": 3,
    "payload_json": DEFAULT_FORK_PAYLOAD,
    "prompt": None,
}
_SESSION_FLAGS = {
    "at": "--at",
    "fork_set": "--set",
    "live": "--live",
    "script": "--script",
    "match": "--match",
}
_SESSION_USAGE = "blackbox fork <cassette> --at N --set JSON --out F (--live | --script R) -- <command>"


def _fork(args: argparse.Namespace) -> int:
    """A cassette makes it the session fork; without one it is the demo fork."""
    if args.cassette is not None:
        return run_session_fork(args)
    given = [flag for dest, flag in _SESSION_FLAGS.items() if getattr(args, dest) not in (None, False)]
    if given or args.child:
        what = given[0] if given else "a command"
        raise BlackboxUsageError(
            f"{what} belongs to the session fork, which needs the cassette: {_SESSION_USAGE}"
        )
    return run_demo_fork(args)


def _fork_command(args: argparse.Namespace) -> list[str]:
    """The command after ``--``; the options between the cassette and ``--`` are parsed here.

    argparse hands everything after the positional cassette to the command, options included.
    """
    rest = list(args.child)
    split = rest.index("--") if "--" in rest else len(rest)
    if split:
        options = argparse.ArgumentParser(prog="blackbox fork", add_help=False)
        _session_fork_options(options)
        _, unknown = options.parse_known_args(rest[:split], namespace=args)
        if unknown:
            raise BlackboxUsageError("put -- between the options and the command, e.g. -- python agent.py")
    command = rest[split + 1 :]
    if not command:
        raise BlackboxUsageError(f"a command is needed after --, e.g. {_SESSION_USAGE}")
    return command


def _refuse_demo_options(args: argparse.Namespace) -> None:
    for dest, default in _DEMO_DEFAULTS.items():
        if getattr(args, dest) != default:
            raise BlackboxUsageError(
                f"--{dest.replace('_', '-')} belongs to the demo fork (blackbox fork without a cassette); "
                "the session fork replaces the result at step --at with --set"
            )
    if args.live and args.script is not None:
        raise BlackboxUsageError("--live and --script exclude each other; continue the fork one way")


def _fork_settings(fork: SessionFork, options: SessionOptions) -> dict[str, str]:
    """The child's ``BLACKBOX_*`` variables: absolute paths, the replacement as compact JSON."""
    assert options.cassette is not None and options.out is not None and options.continue_with is not None
    settings = {
        "BLACKBOX_MODE": "fork",
        "BLACKBOX_CASSETTE": os.path.abspath(options.cassette),
        "BLACKBOX_OUT": os.path.abspath(options.out),
        "BLACKBOX_TRACE_ID": fork.child_id,
        "BLACKBOX_FORK_AT": str(fork.at),
        "BLACKBOX_FORK_SET": json.dumps(fork.replacement, ensure_ascii=False, separators=(",", ":")),
        "BLACKBOX_CONTINUE": options.continue_with,
        "BLACKBOX_MATCH": options.match,
    }
    if fork.scripted and options.script is not None:
        settings["BLACKBOX_SCRIPT"] = os.path.abspath(options.script)
    return settings


def run_session_fork(args: argparse.Namespace) -> int:
    """``blackbox fork <cassette> --at N … -- <command>``: every check first, then the command runs."""
    # the session's side (recording, interception) is imported by this command only: every other
    # command of ``blackbox`` builds this module's parser and never needs it
    from ..engine import SessionFork, read_fork_set, resolve_options

    command = _fork_command(args)
    _refuse_demo_options(args)
    continue_with = "live" if args.live else "script" if args.script is not None else None
    options = resolve_options(
        mode="fork",
        cassette=args.cassette,
        out=args.out,
        fork_at=args.at,
        fork_set=read_fork_set(args.fork_set) if args.fork_set is not None else UNSET,
        continue_with=continue_with,
        script=args.script,
        match=args.match,
        env={},
    )
    fork = SessionFork.prepare(options)
    env = child_env(_fork_settings(fork, options), offline=fork.scripted)
    code, report = run_child(command, env)
    if report is not None and report.get("ok", False):
        copied = f"{_copied_steps(fork.at)} from {args.cassette}, step {fork.at} is your new result"
        line = (
            f"{_MARK} fork  wrote {args.out} ({report.get('steps')} steps, {report.get('status')}); {copied}"
        )
        exit_code = code
    else:
        line, exit_code = outcome_line("fork", report, code, str(args.out))
    print(line, file=sys.stderr)
    return exit_code


# --- check ------------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    if args.out_dir is not None:
        return _check_in(Path(args.out_dir), keep=True)
    with tempfile.TemporaryDirectory(prefix="blackbox-check-") as scratch:
        return _check_in(Path(scratch), keep=False)


def _check_in(directory: Path, *, keep: bool) -> int:
    """Each stage returns a failure description or ``None``; the first failure ends the check."""
    parent_path = directory / SCENARIOS["success"].file_name
    child_path = directory / "example-trace-fork.json"
    stages: Sequence[tuple[str, Callable[[], str | None]]] = (
        ("demo", lambda: _record(parent_path)),
        ("verify", lambda: _verified(parent_path)),
        ("fork", lambda: _forked(parent_path, child_path)),
        ("verify fork", lambda: _verified(child_path)),
        ("diff", lambda: _diverges_at_mutation(parent_path, child_path)),
    )
    for name, stage in stages:
        try:
            failure = stage()
        except BlackboxError as exc:
            failure = str(exc).splitlines()[0]
        if failure is not None:
            print(f"{_MARK} check  ✗ FAIL  {name}: {failure}")
            return 1
    where = f"; cassettes in {directory}" if keep else ""
    print(f"{_MARK} check  ✓ PASS  record → verify → fork → verify → diff (diverges at step 3{where})")
    return 0


def _record(path: Path) -> str | None:
    save_trace(run_demo("success"), path)
    return None


def _failure(report: VerifyReport) -> str:
    failure = report.first_failure
    if failure is None:
        return "verification failed"
    return failure.summary()


def _verified(path: Path) -> str | None:
    report = verify_trace(path)
    return None if report.ok else _failure(report)


def _forked(parent_path: Path, child_path: Path) -> str | None:
    parent = load_trace(parent_path)
    mutations = {3: parse_json(DEFAULT_FORK_PAYLOAD)}
    result = fork_run(parent, 4, f"{parent['id']}-fork", tool_result_mutations=mutations)
    save_trace(result.child_trace, child_path)
    return None


def _diverges_at_mutation(parent_path: Path, child_path: Path) -> str | None:
    parent, child = load_trace(parent_path), load_trace(child_path)
    diff = diff_traces(parent, child)
    if diff.first_divergence_index != 3 or diff.shared_prefix_length != 3:
        return f"expected the first divergence at step 3, found {diff.first_divergence_index}"
    if child.get("parentId") != parent["id"] or child.get("forkedFromStepId") != parent["steps"][4]["id"]:
        return "the fork does not name its parent (parentId / forkedFromStepId)"
    verdict = diff_outcome(parent, child).verdict
    if verdict != "same final status (success), but the final answer changed":
        return f"unexpected outcome: {verdict}"
    return None


# --- import -----------------------------------------------------------------------------------


def _refuse_api_key(path: str, text: str, trace: Trace | None = None) -> None:
    """Refuse a transcript holding the environment's API key, with or without its surrounding whitespace."""
    for name, value in environment_keys(os.environ).items():
        if any(secret in text for secret in known_secrets([value])) or contains_secret(trace, [value]):
            raise SecretLeakError(
                f"{path} contains your API key (the value of {name}); remove it from the transcript and "
                "import again. Nothing was written."
            )


def _trace_id(args: argparse.Namespace) -> str:
    if args.trace_id:
        return str(args.trace_id)
    name = os.path.basename(args.out)
    name = name[: -len(".json")] if name.endswith(".json") else name
    return name or "run"


def _import(args: argparse.Namespace) -> int:
    if same_file(args.out, args.input):
        raise BlackboxUsageError(f"--out {args.out} is the transcript itself; choose another output path")
    text = read_text(args.input, subject="transcript", error=TranscriptImportError)
    _refuse_api_key(args.input, text)
    trace_id = _trace_id(args)
    if args.source == "claude-code":
        trace = import_claude_code(text, trace_id=trace_id)
    else:
        trace = import_chat_json(text, trace_id=trace_id)
    _refuse_api_key(args.input, text, trace)
    report = verify_trace(trace, api_keys=api_keys())
    if not report.ok:
        raise TranscriptImportError(
            f"the imported cassette does not pass verify ({_failure(report)}); nothing was written"
        )
    save_trace(trace, args.out)
    tools = tool_call_sequence(trace)
    rows = (
        ("From:", f"{args.input} ({args.source})"),
        ("Out:", args.out),
        ("Steps:", str(len(trace["steps"]))),
        ("Status:", terminal_outcome(trace).label),
        ("Tools:", truncate_masked(" → ".join(tools), 400, api_keys()) if tools else "(none)"),
    )
    print(f"{_MARK} import")
    for label, value in rows:
        print(f"{label:<8} {value}")
    return 0
