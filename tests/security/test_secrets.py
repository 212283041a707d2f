"""An API key never reaches a cassette, a report or any output, wherever the agent puts it.

Each test plants a key in one position (request headers, the environment, tool arguments, tool
results, a tool's error message, the system prompt, the URL's query string, the model's answer) and
records with the real SDK of each provider against the fake provider. The recording either refuses
to write (``SecretLeakError``, nothing written) or writes a cassette without the key; every message,
the launcher's report, stdout and stderr show ``[redacted]`` where they show the value at all, and
never the key. Keys come in three forms: Anthropic's and OpenAI's real formats, and a key of no known
format that is recognised only because it is the value of a key variable (or of the key header).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  (imported once here: in-process inner pytest runs would import it again)
import openai  # noqa: F401
import pytest

import pytest_blackbox.plugin.testrun  # noqa: F401  (the same, for the session, respx and the providers)
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxError, ReplayDivergenceError, SecretLeakError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace, save_trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import QUIET, TEST_KEYS, VECTORS
from tests.agents import PROGRAM
from tests.agents.lookup import DEFAULT_TURNS, FINAL, Lookup, record, run_agent, script
from tests.machine import scaled

from .conftest import KEYS, LITERAL_KEY, SDKS, files_in

LEAK = "refusing to write the cassette: it contains your API key"
KEY_IDS = [kind for kind, _, _ in KEYS]

#: position → what recording does with a key planted there: "refused" or "written" (without the key).
POSITIONS = {
    "request-headers": "written",
    "environment": "written",
    "tool-arguments": "refused",
    "tool-result": "refused",
    "tool-error": "written",
    "tool-error-sent-to-the-model": "refused",
    "system-prompt": "refused",
    "url-query": "written",
    "model-answer": "refused",
}


def plant(position: str, key: str, variable: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Put ``key`` where ``position`` says; returns the agent options that do it."""
    if position == "request-headers":
        return {"api_key": key, "default_headers": {"X-Team-Token": key}}
    monkeypatch.setenv(variable, key)
    planted: dict[str, dict[str, Any]] = {
        "environment": {},
        "tool-arguments": {"tool_extra": {"api_key": key}},
        "tool-result": {"lookup": Lookup(result={"city": "Paris", "debug": f"signed with {key}"})},
        "tool-error": {"lookup": Lookup(error=f"upstream refused the key {key}")},
        "tool-error-sent-to-the-model": {
            "lookup": Lookup(error=f"upstream refused the key {key}"),
            "forward_errors": True,
        },
        "system-prompt": {"system": f"Call the weather API with the key {key}."},
        "model-answer": {"turns": [*DEFAULT_TURNS[:1], ([], f"{FINAL} (key: {key})")]},
        "url-query": {"default_query": {"api_key": key}},
    }
    return planted[position]


def assert_clean(key: str, *texts: str) -> None:
    """No text shows the key, nor its first twelve characters (a cut-off key is still a leak)."""
    shown = [text for text in texts if key in text or key[:12] in text]
    assert shown == []


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=KEY_IDS)
@pytest.mark.parametrize("position", list(POSITIONS))
def test_a_planted_key_is_never_written_or_shown(
    fake_provider: FakeProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sdk: str,
    kind: str,
    key: str,
    variable: str,
    position: str,
) -> None:
    options = plant(position, key, variable, monkeypatch)
    script(fake_provider, sdk, options.pop("turns", DEFAULT_TURNS))
    out, report = tmp_path / "run.json", tmp_path / "report.json"
    session = blackbox(mode="record", out=out, report_path=report)
    run = run_agent(session, sdk, fake_provider.base_url, **options)
    assert run.answer.startswith(FINAL)
    texts = [str(error) for error in run.agent.caught]
    try:
        if run.agent.tool_errors:
            session.finish(error=run.agent.tool_errors[0])
        else:
            session.finish(result=run.answer)
        outcome = "written"
    except BlackboxError as exc:
        assert isinstance(exc, SecretLeakError)
        assert str(exc).startswith(f"{LEAK} (the value of {variable}) in step ")
        texts.append(str(exc))
        outcome = "refused"
    assert outcome == POSITIONS[position]
    status = json.loads(report.read_text(encoding="utf-8"))
    if outcome == "refused":
        assert files_in(tmp_path) == ["report.json"]
        assert (status["ok"], status["error"], status["errorType"]) == (False, texts[-1], "SecretLeakError")
    else:
        assert files_in(tmp_path) == ["report.json", "run.json"]
        assert verify_trace(out, api_keys=[key]).ok
        texts.append(out.read_text(encoding="utf-8"))
    captured = capsys.readouterr()
    assert_clean(key, *texts, report.read_text(encoding="utf-8"), captured.out, captured.err)
    if position == "tool-error":
        steps = load_trace(out)["steps"]
        assert steps[3]["payload"]["error"] == "upstream refused the key [redacted]"
        assert steps[-1]["payload"]["message"] == "upstream refused the key [redacted]"
    if position == "request-headers":
        assert {r.headers.get("x-team-token") for r in fake_provider.requests} == {key}


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=KEY_IDS)
def test_a_key_learned_from_the_request_headers_refuses_the_cassette(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str, kind: str, key: str, variable: str
) -> None:
    """The environment holds another key: the session learns this one from the client's key header."""
    out = tmp_path / "run.json"
    script(fake_provider, sdk)
    session = blackbox(mode="record", out=out)
    run = run_agent(session, sdk, fake_provider.base_url, api_key=key, system=f"Remember {key}.")
    assert os.environ[variable] == TEST_KEYS[variable]
    with pytest.raises(SecretLeakError) as caught:
        session.finish(result=run.answer)
    sent = fake_provider.requests[0].headers
    header = next(name for name in ("x-api-key", "authorization") if name in sent)
    assert str(caught.value) == (
        f"{LEAK} (the value of the {header} request header) in step 0 (model_input) at systemPrompt; keep it "
        "out of what the agent sends and what its tools return"
    )
    assert files_in(tmp_path) == []


# -- replay: values that are shown are masked ----------------------------------------------------


@pytest.fixture(params=SDKS)
def clean_cassette(
    request: pytest.FixtureRequest, fake_provider: FakeProvider, tmp_path: Path
) -> tuple[Path, str, str]:
    """A run recorded with no key in it: (cassette, sdk, the fake's root URL, now closed)."""
    sdk: str = request.param
    path = tmp_path / "run.json"
    record(fake_provider, sdk, path)
    root = fake_provider.base_url
    fake_provider.stop()
    return path, sdk, root


@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=KEY_IDS)
@pytest.mark.parametrize("known_from", ["environment", "request-headers"])
@pytest.mark.parametrize(
    ("change", "path", "actual"),
    [
        ({"system": "Use {key} now."}, "systemPrompt", '"Use [redacted] now."'),
        ({"prompts": ["Weather? key={key}"]}, "messages[0].content", '"Weather? key=[redacted]"'),
        ({"tool_extra": {"token": "{key}"}}, "tool lookup input", '{"city":"Paris","token":"[redacted]"}'),
    ],
    ids=["system-prompt", "user-message", "tool-arguments"],
)
def test_a_divergence_shows_the_key_redacted(
    clean_cassette: tuple[Path, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    key: str,
    variable: str,
    known_from: str,
    change: dict[str, Any],
    path: str,
    actual: str,
) -> None:
    cassette, sdk, root = clean_cassette
    before = cassette.read_bytes()
    options = json.loads(json.dumps(change).replace("{key}", key))
    if known_from == "environment":
        monkeypatch.setenv(variable, key)
    else:
        options["api_key"] = key
    report = cassette.with_name("report.json")
    session = blackbox(mode="replay", cassette=cassette, report_path=report)
    run = run_agent(session, sdk, root, catch_errors=True, **options)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result=run.answer)
    assert (caught.value.path, caught.value.actual) == (path, actual)
    texts = [str(caught.value), *map(str, run.agent.caught), report.read_text(encoding="utf-8")]
    assert all("[redacted]" in text for text in texts)
    captured = capsys.readouterr()
    assert_clean(key, *texts, captured.out, captured.err)
    assert cassette.read_bytes() == before


# -- the launcher --------------------------------------------------------------------------------


def launch(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "pytest_blackbox.cli",
        *args,
        "--",
        sys.executable,
        str(PROGRAM),
        "finish",
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(120), check=False)


#: Launcher runs are real processes (slow), so each SDK gets its own key format and the literal key.
LAUNCHED = [
    ("anthropic", *KEYS[0]),
    ("openai", *KEYS[1]),
    ("anthropic", *KEYS[2]),
    ("openai", *KEYS[2]),
]


@pytest.mark.parametrize(
    ("sdk", "kind", "key", "variable"), LAUNCHED, ids=[f"{s}-{k}" for s, k, _, _ in LAUNCHED]
)
def test_the_launcher_never_prints_the_key(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str, kind: str, key: str, variable: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.update(
        AGENT_CONVERSATION="lookup",
        AGENT_SDK=sdk,
        AGENT_BASE_URL=fake_provider.base_url,
        PYTHONWARNINGS="ignore",
    )
    env[variable] = key
    script(fake_provider, sdk)
    leaky, clean = tmp_path / "leaky.json", tmp_path / "clean.json"
    refused = launch(["record", "--out", str(leaky)], {**env, "AGENT_SYSTEM": f"Key: {key}"})
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1].startswith(
        f"◼ blackbox · record  ✗ FAIL  failed: {LEAK} (the value"
    )
    assert not leaky.exists()

    script(fake_provider, sdk)
    assert launch(["record", "--out", str(clean)], env).returncode == 0
    fake_provider.stop()
    diverged = launch(["replay", str(clean)], {**env, "AGENT_SYSTEM": f"Key: {key}"})
    assert diverged.returncode == 1
    assert '  actual:   "Key: [redacted]"' in diverged.stderr.splitlines()
    for proc in (refused, diverged):
        assert_clean(key, proc.stdout, proc.stderr)
    assert_clean(key, clean.read_text(encoding="utf-8"))


# -- the pytest plugin ---------------------------------------------------------------------------

INNER_TESTS = '''
import os

import anthropic
import openai
import pytest

from pytest_blackbox.testing.fake_provider import FakeProvider

KEY = os.environ["PLANTED_KEY"]
SDK = os.environ["PLANTED_SDK"]
WHERE = os.environ.get("PLANTED_WHERE", "")


@pytest.fixture
def provider():
    with FakeProvider() as fake:
        yield fake


def ask(provider, root, system):
    """One model call; a replay gets a closed server, so trying the network would fail."""
    if SDK == "anthropic":
        provider.queue_anthropic_text("Sunny.")
        client = anthropic.Anthropic(base_url=root, max_retries=0)
        message = client.messages.create(
            model="claude-haiku-4-5", max_tokens=64, system=system,
            messages=[{"role": "user", "content": "Weather?"}],
        )
        return message.content[0].text
    provider.queue_openai_text("Sunny.")
    client = openai.OpenAI(base_url=root + "/v1", max_retries=0)
    completion = client.chat.completions.create(
        model="gpt-5",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": "Weather?"}],
    )
    return completion.choices[0].message.content


def lookup(city):
    if WHERE == "tool-error":
        raise PermissionError("upstream refused the key " + KEY)
    return {"city": city, "debug": "signed with " + KEY} if WHERE == "tool-result" else {"city": city}


@pytest.mark.blackbox
def test_agent(blackbox, provider):
    root = provider.base_url
    if blackbox.mode == "replay":
        provider.stop()
    tool = blackbox.tool("lookup", lookup)
    try:
        tool("Paris")
    except Exception:  # the tool's own error, or the recorded one in a replay
        pass
    system = "Use the key " + KEY if WHERE == "system-prompt" else "Be brief."
    assert ask(provider, root, system) == "Sunny."
'''


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=KEY_IDS)
def test_the_plugin_never_writes_or_prints_the_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, sdk: str, kind: str, key: str, variable: str
) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_agent=INNER_TESTS)
    monkeypatch.setenv(variable, key)
    monkeypatch.setenv("PLANTED_KEY", key)
    monkeypatch.setenv("PLANTED_SDK", sdk)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent.json"
    outputs: list[str] = []

    def run(where: str, *args: str) -> pytest.RunResult:
        monkeypatch.setenv("PLANTED_WHERE", where)
        result = pytester.runpytest(*QUIET, *args)
        outputs.append(result.stdout.str() + result.stderr.str())
        return result

    for where in ("tool-result", "system-prompt"):
        run(where, "--record-mode=once").assert_outcomes(failed=1)
        assert any(line.startswith("blackbox: " + LEAK) for line in outputs[-1].splitlines())
        assert not cassette.parent.exists() or files_in(cassette.parent) == []

    run("tool-error", "--record-mode=once").assert_outcomes(passed=1)
    recorded = cassette.read_text(encoding="utf-8")
    assert json.loads(recorded)["steps"][1]["payload"]["error"] == "upstream refused the key [redacted]"
    assert files_in(cassette.parent) == ["test_agent.json"]

    diverged = run("system-prompt")
    diverged.assert_outcomes(failed=1)
    assert '  actual:   "Use the key [redacted]"' in outputs[-1].splitlines()
    for text in outputs:
        assert_clean(key, text)
    assert_clean(key, recorded)


STRANGERS = [KEYS[0], KEYS[1]]


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("kind", "key", "variable"), STRANGERS, ids=[kind for kind, _, _ in STRANGERS])
@pytest.mark.parametrize("position", ["tool-arguments", "tool-result", "system-prompt", "model-answer"])
def test_a_realistic_key_the_session_does_not_know_is_refused_too(
    fake_provider: FakeProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sdk: str,
    kind: str,
    key: str,
    variable: str,
    position: str,
) -> None:
    """Someone else's key (not in the environment, not sent): its format alone refuses the cassette."""
    options = plant(position, key, variable, monkeypatch)
    monkeypatch.setenv(variable, TEST_KEYS[variable])
    script(fake_provider, sdk, options.pop("turns", DEFAULT_TURNS))
    out = tmp_path / "run.json"
    session = blackbox(mode="record", out=out)
    run = run_agent(session, sdk, fake_provider.base_url, **options)
    with pytest.raises(BlackboxError) as caught:
        session.finish(result=run.answer)
    label = "-".join(key.split("-")[:2])  # sk-ant or sk-proj; a real key is also a long generic sk- key
    assert str(caught.value) == (
        f"refusing to write the cassette: provider_neutrality failed — markers: {label}, sk-"
    )
    assert files_in(tmp_path) == []
    captured = capsys.readouterr()
    assert_clean(key, str(caught.value), captured.out, captured.err)


# -- a cassette that already holds a key (hand-edited, or recorded before the key was set) --------

VECTOR = VECTORS / "fixtures" / "traces"


def leaky_cassette(path: Path, key: str) -> Path:
    """The demo run with the key in a tool result and in the final answer, chained like a real cassette."""
    trace = load_trace(VECTOR / "success-tool-use.v2.json")
    recorder = TraceRecorder(trace["id"], trace["createdAt"])
    for step in trace["steps"]:
        payload = json.loads(json.dumps(step["payload"]))
        if step["type"] == "tool_result" and step["index"] == 3:
            payload["result"] = {"token": key, "note": f"signed with {key}"}
        if step["type"] == "metadata":
            payload["result"] = f"Booked. Receipt key: {key}"
        recorder.append(step["type"], payload, step["timestamp"])
    save_trace(recorder.trace(), path)
    return path


@pytest.mark.parametrize(("kind", "key", "variable"), KEYS, ids=KEY_IDS)
def test_the_cli_never_prints_a_key_held_in_a_cassette(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    key: str,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, key)
    monkeypatch.chdir(tmp_path)
    leaky = leaky_cassette(tmp_path / "leaky.json", key)
    clean = VECTOR / "success-tool-use.v2.json"
    commands = [
        ["verify", str(leaky)],
        ["verify", "--json", str(leaky)],
        ["inspect", str(leaky)],
        ["inspect", str(leaky), "--step", "3"],
        ["inspect", str(leaky), "--step", "14"],
        ["diff", str(clean), str(leaky)],
        ["diff", "--json", str(clean), str(leaky)],
        ["replay", str(leaky)],
        ["list", str(tmp_path)],
        ["assert", str(leaky), "--expect-final-answer", "x"],
        ["view", str(leaky), "-o", str(tmp_path / "run.html")],
        ["view", str(clean), str(leaky), "-o", str(tmp_path / "diff.html")],
    ]
    shown: list[str] = []
    for argv in commands:
        main(argv)
        captured = capsys.readouterr()
        shown.append(captured.out + captured.err)
    pages = [(tmp_path / name).read_text(encoding="utf-8") for name in ("run.html", "diff.html")]
    assert_clean(key, *shown, *pages)
    assert "[redacted]" in shown[3] and "[redacted]" in shown[4]
    assert "<api-key-value>" in shown[0]


@pytest.mark.parametrize("sdk", SDKS)
def test_a_divergence_masks_a_key_on_the_recorded_side(
    fake_provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sdk: str
) -> None:
    """Recorded while the key was unknown (a literal key is no pattern); replayed once it is the env key."""
    path = tmp_path / "run.json"
    record(fake_provider, sdk, path, system=f"Use {LITERAL_KEY}.")
    assert LITERAL_KEY in path.read_text(encoding="utf-8")
    root = fake_provider.base_url
    fake_provider.stop()
    monkeypatch.setenv("ANTHROPIC_API_KEY", LITERAL_KEY)
    run = run_agent(blackbox(mode="replay", cassette=path), sdk, root, system="Be brief.", catch_errors=True)
    with pytest.raises(ReplayDivergenceError) as caught:
        run.session.finish(result=run.answer)
    assert (caught.value.expected, caught.value.actual) == ('"Use [redacted]."', '"Be brief."')
    assert_clean(LITERAL_KEY, str(caught.value), str(run.agent.caught[0]))


@pytest.mark.parametrize("sdk", SDKS)
def test_the_exit_safety_net_refuses_a_leaky_cassette_without_printing_the_key(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    script(fake_provider, sdk)
    out = tmp_path / "run.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.update(
        AGENT_CONVERSATION="lookup",
        AGENT_SDK=sdk,
        AGENT_BASE_URL=fake_provider.base_url,
        AGENT_SYSTEM=f"Key: {LITERAL_KEY}",
        ANTHROPIC_API_KEY=LITERAL_KEY,
        BLACKBOX_MODE="record",
        BLACKBOX_OUT=str(out),
        PYTHONWARNINGS="ignore",
    )
    proc = subprocess.run(
        [sys.executable, str(PROGRAM), "no-finish"],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"blackbox (at process exit): {LEAK} (the value of")
    assert not out.exists()
    assert_clean(LITERAL_KEY, proc.stdout, proc.stderr)
