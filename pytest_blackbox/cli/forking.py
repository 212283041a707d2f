"""``blackbox demo``, ``check``, ``fork`` and ``import``: the commands that write new cassettes.

``demo``, ``check`` and the command-less ``fork`` run the built-in demo agent, so they work on a fresh
install with no API key, no network and no test file. ``import`` converts a transcript recorded
elsewhere. Each handler is a thin shell over the library (:mod:`pytest_blackbox.demo`,
:mod:`pytest_blackbox.fork`, :mod:`pytest_blackbox.importers`).

``fork`` without a command is the demo fork (:func:`run_demo_fork`). The session fork
(``blackbox fork <cassette> --at N … -- <command>``) is a separate form that re-runs the user's agent;
it adds its own arguments to the same subparser and is dispatched before the demo form.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..demo import SCENARIOS, run_demo
from ..errors import BlackboxError, BlackboxUsageError, ForkError, SecretLeakError, TranscriptImportError
from ..fork import fork_run, same_file
from ..importers import IMPORTERS, import_chat_json, import_claude_code
from ..trace.diff import diff_outcome, diff_traces
from ..trace.io import load_trace, parse_json, save_trace
from ..trace.model import Trace
from ..trace.payloads import terminal_outcome, tool_call_sequence
from ..trace.secrets import contains_secret, known_secrets, truncate_masked
from ..trace.verify import VerifyReport, verify_trace

__all__ = ["DEFAULT_FORK_PAYLOAD", "register", "run_demo_fork"]

#: The demo fork's replacement for the hotel search result: nothing is available.
DEFAULT_FORK_PAYLOAD = '{"results":[],"available":false,"message":"No hotels available for that date."}'
_DEFAULT_TRACE = os.path.join("traces", "example-trace.json")
_API_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
_MARK = "◼ blackbox ·"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``demo``, ``check``, ``fork`` and ``import``."""
    _add_demo(sub)
    _add_check(sub)
    _add_fork(sub)
    _add_import(sub)


def _parser(
    sub: argparse._SubParsersAction[Any], name: str, summary: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 78, break_on_hyphens=False),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _add_demo(sub: argparse._SubParsersAction[Any]) -> None:
    demo = _parser(
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
    check = _parser(
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
    fork = _parser(
        sub,
        "fork",
        "fork a demo cassette: change one tool result or the prompt, run on",
        "Copy a demo cassette up to --fork-index, change one tool result (or the prompt) and let the demo "
        "agent run on from there, to see how the run would have gone. The child cassette names its parent, "
        "so blackbox diff shows where and how the two runs part.",
        [
            "blackbox fork",
            'blackbox fork --mode prompt --prompt "Book a hotel for Bob next weekend." --out traces/bob.json',
        ],
    )
    fork.add_argument("--trace", default=_DEFAULT_TRACE, help=f"parent cassette (default: {_DEFAULT_TRACE})")
    fork.add_argument(
        "--mode",
        choices=("tool-result", "prompt"),
        default="tool-result",
        help="what to change: tool-result (the default) replaces the tool result at --mutation-step, "
        "prompt replaces the prompt with --prompt",
    )
    fork.add_argument("--fork-index", type=int, default=4, help="step to fork at (default: 4)")
    fork.add_argument("--mutation-step", type=int, default=3, help="tool_result step to change (default: 3)")
    fork.add_argument("--payload-json", default=DEFAULT_FORK_PAYLOAD, help="the new tool result, as JSON")
    fork.add_argument("--prompt", help="the new prompt (--mode prompt)")
    fork.add_argument("--out", help="child cassette (default: <trace>-fork.json)")
    fork.set_defaults(func=run_demo_fork)


def _add_import(sub: argparse._SubParsersAction[Any]) -> None:
    imp = _parser(
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


def _status(trace: Trace) -> str:
    outcome = terminal_outcome(trace)
    if outcome.status == "error" and outcome.failure_reason:
        return f"error/{outcome.failure_reason}"
    return outcome.status


def _demo(args: argparse.Namespace) -> int:
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    for name in names:
        path = Path(args.out_dir) / SCENARIOS[name].file_name
        trace = run_demo(name)
        save_trace(trace, path)
        print(f"{_MARK} demo  wrote {path} ({len(trace['steps'])} steps, {_status(trace)})")
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
    summary = f"{len(child['steps'])} steps, {_status(child)}"
    print(f"{_MARK} fork  wrote {out} ({summary}); {copied} from {args.trace}, {changed}")
    if result.final_answer is not None:
        print(f"  answer: {truncate_masked(result.final_answer, 200, _api_keys())}")
    print(f"  next:   blackbox diff {args.trace} {out}")
    return 0


def _copied_steps(count: int) -> str:
    if count == 0:
        return "no steps are copied"
    if count == 1:
        return "step 0 is copied"
    return f"steps 0–{count - 1} are copied"


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
    where = f" at step {failure.step_index}" if failure.step_index is not None else ""
    return f"{failure.name} failed{where}: {failure.detail}"


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


def _api_keys() -> list[str]:
    return [os.environ[name] for name in _API_KEY_VARIABLES if os.environ.get(name)]


def _read_transcript(path: str) -> str:
    """The transcript's exact text; a leading byte-order mark (editors on Windows add one) is dropped."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        raise TranscriptImportError(f"cannot read the transcript {path}: no such file") from None
    except IsADirectoryError:
        raise TranscriptImportError(f"cannot read the transcript {path}: it is a directory") from None
    except UnicodeDecodeError:
        raise TranscriptImportError(f"cannot read the transcript {path}: it is not UTF-8 text") from None
    except OSError as exc:
        raise TranscriptImportError(f"cannot read the transcript {path}: {exc.strerror}") from None


def _refuse_api_key(path: str, text: str, trace: Trace | None = None) -> None:
    """Refuse a transcript holding the environment's API key, with or without its surrounding whitespace."""
    for name in _API_KEY_VARIABLES:
        value = os.environ.get(name)
        if not value:
            continue
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
    text = _read_transcript(args.input)
    _refuse_api_key(args.input, text)
    trace_id = _trace_id(args)
    if args.source == "claude-code":
        trace = import_claude_code(text, trace_id=trace_id)
    else:
        trace = import_chat_json(text, trace_id=trace_id)
    _refuse_api_key(args.input, text, trace)
    report = verify_trace(trace, api_keys=_api_keys())
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
        ("Status:", _status(trace)),
        ("Tools:", truncate_masked(" → ".join(tools), 400, _api_keys()) if tools else "(none)"),
    )
    print(f"{_MARK} import")
    for label, value in rows:
        print(f"{label:<8} {value}")
    return 0
