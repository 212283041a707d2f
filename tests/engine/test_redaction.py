"""Redaction and the user's secrets: nothing they name reaches a file the session writes (the cassette,
the launcher's report, and what ``verify`` and ``view`` make of the cassette), a redacted cassette
replays, and a recording made with the offline placeholder key is refused before anything is sent."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.genai import errors as genai_errors

from pytest_blackbox import BlackboxUsageError, SecretLeakError, blackbox
from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents import gemini
from tests.agents.travel import FINAL, WEATHER, ToolBox, run_agent, script
from tests.conftest import NetworkGuard

EMAIL = "jane.doe@example.com"
EMAIL_PATTERN = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
GATEWAY_KEY = "gw-live-7Hq2Zt9KxPw4"


def files_below(root: Path) -> dict[str, str]:
    """Every file under ``root`` (the cassette, temporary files, reports, pages), by relative path."""
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def tools_with_contacts(box: ToolBox, is_async: bool) -> dict[str, Callable[..., Any]]:
    """The travel tools; Paris's weather names a contact, Rome's time lookup fails naming it too."""

    def get_time(city: str) -> Any:
        raise RuntimeError(f"the time service refused {GATEWAY_KEY}; ask {EMAIL}")

    if not is_async:
        return {"get_weather": box.get_weather, "get_time": get_time}

    async def get_weather_async(city: str) -> Any:
        return box.get_weather(city)

    async def get_time_async(city: str) -> Any:
        return get_time(city)

    return {"get_weather": get_weather_async, "get_time": get_time_async}


def test_nothing_redacted_or_secret_reaches_any_file(
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    network_guard: NetworkGuard,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An e-mail address in the prompt, a tool result, a tool error and the answer; a custom auth
    header whose value a tool error repeats. Recorded, verified, viewed, replayed: neither appears."""
    sdk, is_async = flavor
    rules: dict[str, Any] = {"redact": [EMAIL_PATTERN], "secrets": {"headers": ["x-gateway-key"]}}
    path = tmp_path / "run.json"
    box = ToolBox({**WEATHER, "Paris": {"city": "Paris", "tempC": 21, "contact": EMAIL}})
    agent: dict[str, Any] = {
        "system": f"You are a travel assistant. Escalate to {EMAIL}.",
        "default_headers": {"x-gateway-key": GATEWAY_KEY},
        "forward_errors": False,  # a key the agent sent the model would refuse the cassette
    }
    script(fake_provider, sdk)
    recording = blackbox(mode="record", out=path, report_path=tmp_path / "record-report.json", **rules)
    tools = recording.tools(tools_with_contacts(box, is_async))
    run = run_agent(flavor, fake_provider, session=recording, tools=tools, finish=False, **agent)
    recording.finish(result=f"{run.answer} Questions: {EMAIL}")
    assert fake_provider.requests[0].headers["x-gateway-key"] == GATEWAY_KEY

    steps = load_trace(path)["steps"]
    assert steps[0]["payload"]["systemPrompt"] == "You are a travel assistant. Escalate to [redacted]."
    assert steps[3]["payload"]["result"]["contact"] == "[redacted]"
    assert steps[9]["payload"]["error"] == "the time service refused [redacted]; ask [redacted]"
    assert steps[-1]["payload"]["result"] == f"{FINAL} Questions: [redacted]"

    assert cli_main(["verify", str(path)]) == 0
    assert cli_main(["view", str(path), "-o", str(tmp_path / "view.html")]) == 0
    assert cli_main(["inspect", str(path), "--step", "9"]) == 0

    root = fake_provider.base_url
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(name, OFFLINE_PLACEHOLDER_KEY)
    attempts, requests = network_guard.block(), len(fake_provider.requests)
    replaying = blackbox(mode="replay", cassette=path, report_path=tmp_path / "replay-report.json", **rules)
    box.calls.clear()
    seen: list[Any] = []

    wrapped = replaying.tools(tools_with_contacts(box, is_async))
    spy = wrapped["get_weather"]

    def seen_weather(city: str) -> Any:
        seen.append(spy(city))
        return seen[-1]

    if not is_async:
        wrapped["get_weather"] = seen_weather
    replayed = run_agent(flavor, root, session=replaying, tools=wrapped, finish=False, **agent)
    replaying.finish(result=f"{replayed.answer} Questions: {EMAIL}")
    assert (attempts, len(fake_provider.requests), box.calls) == ([], requests, [])
    if not is_async:
        assert seen[0]["contact"] == "[redacted]"  # the agent gets the value the cassette holds

    written = files_below(tmp_path)
    assert sorted(written) == ["record-report.json", "replay-report.json", "run.json", "view.html"]
    captured = capsys.readouterr()
    for text in [*written.values(), captured.out, captured.err]:
        assert EMAIL not in text and GATEWAY_KEY not in text


@pytest.mark.parametrize("where", ["headers", "query", "env", "values"])
def test_a_custom_secret_in_a_tool_result_refuses_the_cassette(
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    sdk, _ = flavor
    agent: dict[str, Any] = {}
    secrets = {
        "headers": ["x-gateway-key"],
        "query": ["gw_token"],
        "env": ["GATEWAY_TOKEN"],
        "values": [GATEWAY_KEY],
    }
    if where == "headers":
        agent["default_headers"] = {"x-gateway-key": GATEWAY_KEY}
        source = "a secret (the value of the x-gateway-key request header)"
    elif where == "query":
        agent["default_query"] = {"gw_token": GATEWAY_KEY}
        source = "a secret (the value of the gw_token query parameter)"
    elif where == "env":
        monkeypatch.setenv("GATEWAY_TOKEN", GATEWAY_KEY)
        source = "a secret (the value of GATEWAY_TOKEN)"
    else:
        source = "a secret (a value listed in secrets)"
    box = ToolBox({**WEATHER, "Paris": {"city": "Paris", "note": f"signed {GATEWAY_KEY}"}})
    path = tmp_path / "run.json"

    script(fake_provider, sdk)
    run_agent(flavor, fake_provider, box=box, session_options={"mode": "record", "out": path}, **agent)
    assert GATEWAY_KEY in path.read_text(encoding="utf-8")  # without the option, it is just data
    path.unlink()

    script(fake_provider, sdk)
    session = blackbox(mode="record", out=path, secrets={where: secrets[where]})
    run = run_agent(flavor, fake_provider, box=box, session=session, finish=False, **agent)
    with pytest.raises(SecretLeakError) as caught:
        session.finish(result=run.answer)
    assert str(caught.value) == (
        f"refusing to write the cassette: it contains {source} in step 3 (tool_result) at result.note; "
        "keep it out of what the agent sends and what its tools return"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_callable_rule_redacts_and_its_marker_is_the_rules_own(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, network_guard: NetworkGuard
) -> None:
    def hide_paris(text: str) -> str:
        return text.replace("Paris", "<city>")

    path = tmp_path / "run.json"
    script(fake_provider, flavor[0])
    run_agent(flavor, fake_provider, session_options={"mode": "record", "out": path, "redact": hide_paris})
    text = path.read_text(encoding="utf-8")
    assert "Paris" not in text and '"city":"<city>"' in text.replace(" ", "")
    root = fake_provider.base_url
    network_guard.block()
    run = run_agent(
        flavor, root, session_options={"mode": "replay", "cassette": path, "redact": [hide_paris]}
    )
    assert run.answer == FINAL.replace("Paris", "<city>")


def test_a_redacted_value_shown_in_a_divergence_stays_redacted(
    fake_provider: FakeProvider, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    flavor = ("anthropic", False)
    path = tmp_path / "run.json"
    script(fake_provider, "anthropic")
    options = {"mode": "record", "out": path, "redact": [EMAIL_PATTERN]}
    run_agent(flavor, fake_provider, session_options=options, system=f"Write to {EMAIL}.")
    root = fake_provider.base_url
    network_guard.block()
    session = blackbox(mode="replay", cassette=path, redact=[EMAIL_PATTERN])
    run_agent(flavor, root, session=session, finish=False, catch_errors=True, system=f"Mail {EMAIL} now.")
    with pytest.raises(Exception) as caught:
        session.finish()
    assert str(caught.value).splitlines()[:3] == [
        "replay diverged at step 0, systemPrompt",
        '  recorded: "Write to [redacted]."',
        '  actual:   "Mail [redacted] now."',
    ]


# -- the offline placeholder key -------------------------------------------------------------------


def test_recording_with_the_placeholder_key_is_refused_before_anything_is_sent(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk, _ = flavor
    variable = f"{sdk.upper()}_API_KEY"
    monkeypatch.setenv(variable, OFFLINE_PLACEHOLDER_KEY)
    script(fake_provider, sdk)
    session = blackbox(mode="record", out=tmp_path / "run.json")
    run = run_agent(flavor, fake_provider, session=session, finish=False, catch_errors=True)
    assert fake_provider.requests == []
    header = "authorization" if sdk == "openai" else _anthropic_key_header()
    message = (
        "recording needs a real key: this request carries the offline placeholder key "
        f"(blackbox-offline-placeholder) in its {header} header, so it was not sent; set {variable} to your "
        "API key to record (the placeholder only lets SDK clients start for a replay)"
    )
    assert message in str(run.agent.caught[0])
    with pytest.raises(BlackboxUsageError) as caught:
        session.finish()
    assert str(caught.value) == message
    assert list(tmp_path.iterdir()) == []


def _anthropic_key_header() -> str:
    """The header this anthropic SDK sends its key in (``x-api-key``; ``authorization`` in newer ones)."""
    import anthropic

    headers = anthropic.Anthropic(api_key="sk-ant-probe").auth_headers
    return next(iter(headers)).lower()


@pytest.mark.parametrize("in_query", [False, True], ids=["header", "query"])
def test_recording_gemini_with_the_placeholder_key_is_refused(
    fake_provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_query: bool
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", OFFLINE_PLACEHOLDER_KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    gemini.script(fake_provider)
    root = fake_provider.gemini_base_url
    session = blackbox(mode="record", out=tmp_path / "run.json")
    if in_query:  # the Gemini API also takes the key as ?key=
        url = f"{root}/v1beta/models/{gemini.MODEL}:generateContent?key={OFFLINE_PLACEHOLDER_KEY}"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        with httpx2.Client() as client:
            assert client.post(url, json=body).status_code == 400
        where = "its ?key= query parameter"
    else:
        with pytest.raises(genai_errors.ClientError, match=re.escape("recording needs a real key")):
            asyncio.run(gemini.GeminiAgent(root).run(session.tools(ToolBox().functions(False))))
        where = "its x-goog-api-key header"
    assert fake_provider.requests == []
    with pytest.raises(BlackboxUsageError) as caught:
        session.finish()
    assert str(caught.value) == (
        "recording needs a real key: this request carries the offline placeholder key "
        f"(blackbox-offline-placeholder) in {where}, so it was not sent; set GEMINI_API_KEY to your API key "
        "to record (the placeholder only lets SDK clients start for a replay)"
    )
