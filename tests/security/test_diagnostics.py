"""Audit finding #8: diagnostics never quote raw input, and a key is masked before any cut.

A cassette, a transcript or a ``--payload-json`` value may hold anything (private data, a key), and
diagnostics end up in CI logs. Every bad input here carries a canary; no message, report or CLI
output may repeat it. Where a value *is* shown (a replay divergence), a key in it is masked whole,
even when it straddles the 200-character cut.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.jsondiff import render_value
from pytest_blackbox.analysis.verify import render_verify_report, verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxError, BlackboxUsageError, ReplayDivergenceError
from pytest_blackbox.importers import import_chat_json, import_claude_code
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import VECTORS
from tests.agents.lookup import record, run_agent

from .conftest import KEYS, SDKS, files_in

PARENT = VECTORS / "fixtures" / "traces" / "success-tool-use.v2.json"
CANARY = "CANARY <private-7f3a>"
#: Fragments that would show a canary was quoted, even partly or re-escaped.
CANARY_PARTS = ("CANARY", "private-7f3a")
FORGED_HASH = "deadbeef" * 8
FORGED_PREV = "cafef00d" * 8
FORGED_INDEX = 987654321


def leaks(text: str, parts: tuple[str, ...] = CANARY_PARTS) -> list[str]:
    return [part for part in parts if part in text]


def cli(*argv: str) -> tuple[int, str]:
    """Run the CLI in-process: (exit code, stdout + stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
    return code, out.getvalue() + err.getvalue()


# -- corrupted cassettes -------------------------------------------------------------------------


def _corrupt(doc: dict[str, Any], how: str) -> tuple[str, ...]:
    """Corrupt step 3 (or the trace) of ``doc`` in place; returns the text that must not be quoted."""
    step = doc["steps"][3]
    if how == "hash":
        step["hash"] = FORGED_HASH
        return ("deadbeef",)
    if how == "hash-not-hex":
        step["hash"] = CANARY
    elif how == "prevHash":
        step["prevHash"] = FORGED_PREV
        return ("cafef00d",)
    elif how == "prevHash-not-hex":
        step["prevHash"] = CANARY
    elif how == "index":
        step["index"] = FORGED_INDEX
        return (str(FORGED_INDEX),)
    elif how == "index-not-a-number":
        step["index"] = CANARY
    elif how == "unknown-step-type":
        step["type"] = CANARY
    elif how == "timestamp":
        step["timestamp"] = CANARY
    elif how == "payload-key":
        step["payload"][CANARY] = CANARY
    elif how == "step-key":
        step[CANARY] = CANARY
    elif how == "trace-key":
        doc[CANARY] = CANARY
    elif how == "version":
        doc["version"] = CANARY
    elif how == "steps":
        doc["steps"] = CANARY
    return CANARY_PARTS


CORRUPTIONS = [
    "hash",
    "hash-not-hex",
    "prevHash",
    "prevHash-not-hex",
    "index",
    "index-not-a-number",
    "unknown-step-type",
    "timestamp",
    "payload-key",
    "step-key",
    "trace-key",
    "version",
    "steps",
]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_8_a_corrupted_cassette_is_described_never_quoted(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = json.loads(PARENT.read_text(encoding="utf-8"))
    secret = _corrupt(doc, how)
    path = tmp_path / "corrupted.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")

    with pytest.raises(BlackboxError) as loaded:
        load_trace(path)
    with pytest.raises(BlackboxError) as replayed:
        blackbox(mode="replay", cassette=path)
    report = verify_trace(path)
    assert not report.ok
    outputs = [str(loaded.value), str(replayed.value), render_verify_report(report)]
    for argv in (
        ["verify", str(path)],
        ["verify", "--json", str(path)],
        ["inspect", str(path)],
        ["inspect", str(path), "--step", "3"],
        ["diff", str(PARENT), str(path)],
        ["replay", str(path)],
        ["assert", str(path), "--expect-status", "success"],
        ["list", str(tmp_path)],
    ):
        code, text = cli(*argv)
        assert code != 0 or argv[0] == "list", (argv, text)
        outputs.append(text)
    assert [leaks(text, secret) for text in outputs] == [[] for _ in outputs]
    if how in ("hash", "prevHash", "index"):
        assert "failed its hash-chain check: step 3:" in str(loaded.value)


# -- malformed command-line and environment values -----------------------------------------------


def test_8_a_malformed_payload_json_is_not_quoted(tmp_path: Path) -> None:
    assert cli("demo", "--scenario", "success", "--out-dir", str(tmp_path))[0] == 0
    parent = tmp_path / "example-trace.json"
    code, text = cli(
        "fork", "--trace", str(parent), "--payload-json", '{"note": "' + CANARY, "--out", "x.json"
    )
    assert code == 1
    assert text.startswith("blackbox fork: --payload-json is not valid JSON (")
    assert text.count("\n") == 1
    assert leaks(text) == []
    assert files_in(tmp_path) == ["example-trace.json"]


@pytest.mark.parametrize("raw", ['{"result": "' + CANARY, CANARY, '["' + CANARY + '", NaN]'])
def test_8_a_malformed_fork_set_variable_is_not_quoted(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("BLACKBOX_FORK_SET", raw)
    with pytest.raises(BlackboxUsageError) as caught:
        blackbox()
    assert str(caught.value) == "BLACKBOX_FORK_SET must be JSON (the replacement tool result)"


# -- importer object keys and values -------------------------------------------------------------


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*path, index))


def _replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copied = copy.deepcopy(doc)
    parent = copied
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return copied


def mutants(doc: Any) -> Iterator[Any]:
    """``doc`` with a canary key added to every object, and every value replaced by canary shapes."""
    for path in _paths(doc):
        node = doc
        for part in path:
            node = node[part]
        if isinstance(node, dict):
            yield _replaced(doc, path, {**node, CANARY: CANARY})
        for new in (CANARY, {CANARY: CANARY}, [CANARY], {CANARY: {CANARY: [CANARY]}}):
            yield _replaced(doc, path, new)


def _import_error(importer: Any, text: str) -> str | None:
    try:
        importer(text, trace_id="t")
    except BlackboxError as exc:
        return str(exc)
    return None


def test_8_chat_json_import_errors_never_quote_keys_or_values() -> None:
    doc = json.loads((VECTORS / "fixtures" / "external" / "chat-tool-use.foreign.json").read_text("utf-8"))
    errors = [_import_error(import_chat_json, json.dumps(mutant)) for mutant in mutants(doc)]
    refused = [error for error in errors if error is not None]
    assert len(refused) > 50
    assert [error for error in refused if leaks(error)] == []


def test_8_claude_code_import_errors_never_quote_keys_or_values() -> None:
    lines = (VECTORS / "fixtures" / "import" / "claude-code-session.jsonl").read_text("utf-8").splitlines()
    refused: list[str] = []
    for number, line in enumerate(lines):
        for mutant in mutants(json.loads(line)):
            text = "\n".join([*lines[:number], json.dumps(mutant), *lines[number + 1 :]]) + "\n"
            error = _import_error(import_claude_code, text)
            if error is not None:
                refused.append(error)
    assert len(refused) > 50
    assert [error for error in refused if leaks(error)] == []


# -- a key straddling the 200-character cut ------------------------------------------------------


@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=[k[0] for k in KEYS])
@pytest.mark.parametrize("offset", [-12, -5, -1, 0, 1, 5])
def test_8_a_key_straddling_the_cut_is_masked_before_the_cut(
    kind: str, key: str, variable: Any, offset: int
) -> None:
    """The key starts ``offset`` characters from the cut (compact JSON of a string opens with a quote)."""
    padding = "x" * (198 + offset)
    shown = render_value(padding + key + " and more text after it", [key])
    assert shown == ('"' + padding + "[redacted] and more text after it")[:199] + "…"
    assert key[:5] not in shown


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=[k[0] for k in KEYS])
def test_8_a_divergence_masks_a_key_straddling_the_cut(
    fake_provider: FakeProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sdk: str,
    kind: str,
    key: str,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, key)
    path = tmp_path / "run.json"
    record(fake_provider, sdk, path)
    root = fake_provider.base_url
    fake_provider.stop()
    system = "s" * 194 + key + " end"
    run = run_agent(blackbox(mode="replay", cassette=path), sdk, root, system=system, catch_errors=True)
    with pytest.raises(ReplayDivergenceError) as caught:
        run.session.finish(result=run.answer)
    assert caught.value.path == "systemPrompt"
    assert caught.value.actual == ('"' + "s" * 194 + "[redacted] end")[:199] + "…"
    for text in (str(caught.value), str(run.agent.caught[0])):
        assert key[:5] not in text


# -- import refuses the environment's key, whitespace or not --------------------------------------


def chat_transcript(text: str) -> str:
    return json.dumps(
        {
            "messages": [
                {"role": "user", "content": text, "timestamp": 1000},
                {"role": "assistant", "content": "Done.", "timestamp": 2000},
            ]
        }
    )


def claude_transcript(text: str) -> str:
    lines = [
        {
            "type": "user",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": text},
        },
        {
            "type": "assistant",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        },
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=[k[0] for k in KEYS])
@pytest.mark.parametrize("spaced", ["{key}", "  {key}\n", "\t{key} "])
@pytest.mark.parametrize(
    ("source", "transcript"), [("chat-json", chat_transcript), ("claude-code", claude_transcript)]
)
def test_8_import_refuses_the_environments_key_even_with_whitespace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    key: str,
    variable: str,
    spaced: str,
    source: str,
    transcript: Any,
) -> None:
    monkeypatch.setenv(variable, spaced.format(key=key))
    given = tmp_path / "transcript.txt"
    given.write_text(transcript(f"My key is {key}, please keep it safe."), encoding="utf-8")
    code, text = cli("import", "--from", source, "--in", str(given), "--out", str(tmp_path / "out.json"))
    assert code == 1
    assert text == (
        f"blackbox import: {given} contains your API key (the value of {variable}); remove it from the "
        "transcript and import again. Nothing was written.\n"
    )
    assert files_in(tmp_path) == ["transcript.txt"]


# -- the session fork's --set value and script file ----------------------------------------------


def session_fork(tmp_path: Path, *options: str) -> tuple[int, str]:
    parent = tmp_path / "parent.json"
    parent.write_bytes(PARENT.read_bytes())
    out = str(tmp_path / "child.json")
    return cli("fork", str(parent), "--at", "3", "--out", out, *options, "--", "python", "-c", "exit(7)")


@pytest.mark.parametrize(
    "value",
    ['{"note": "' + CANARY, CANARY, '["' + CANARY + '", NaN]', '{"' + CANARY + '": 1, "' + CANARY + '": 2}'],
    ids=["unterminated", "bare-text", "nan", "duplicate-keys"],
)
@pytest.mark.parametrize("where", ["inline", "file"])
def test_8_a_malformed_fork_set_is_not_quoted(tmp_path: Path, value: str, where: str) -> None:
    script_file = tmp_path / "replies.json"
    script_file.write_text('[{"type": "final_answer", "text": "Done."}]', encoding="utf-8")
    given = value
    if where == "file":
        (tmp_path / "set.json").write_text(value, encoding="utf-8")
        given = "@" + str(tmp_path / "set.json")
    code, text = session_fork(tmp_path, "--set", given, "--script", str(script_file))
    assert code == 1
    assert text.startswith("blackbox fork: --set must be JSON (the replacement tool result)")
    assert text.count("\n") == 1
    assert leaks(text) == []
    assert not (tmp_path / "child.json").exists()


@pytest.mark.parametrize(
    "script_text",
    [
        CANARY,
        '{"' + CANARY + '": "' + CANARY + '"}',
        '[{"type": "final_answer", "text": "ok", "' + CANARY + '": 1}]',
        '[{"type": "' + CANARY + '"}]',
        '[{"type": "tool_calls", "calls": [{"toolName": "x", "' + CANARY + '": {}}]}]',
        '[{"type": "tool_calls", "calls": "' + CANARY + '"}]',
        '[{"type": "final_answer", "text": ["' + CANARY + '"]}]',
    ],
    ids=["not-json", "object", "entry-key", "entry-type", "call-key", "calls-text", "text-list"],
)
def test_8_a_malformed_fork_script_is_not_quoted(tmp_path: Path, script_text: str) -> None:
    script_file = tmp_path / "replies.json"
    script_file.write_text(script_text, encoding="utf-8")
    code, text = session_fork(tmp_path, "--set", "{}", "--script", str(script_file))
    assert code == 1
    assert text.startswith(f"blackbox fork: the fork script {script_file} ")
    assert text.count("\n") == 1
    assert leaks(text) == []
    assert not (tmp_path / "child.json").exists()
