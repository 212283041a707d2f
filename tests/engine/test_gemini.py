"""Record a Gemini agent through the real ``google-genai`` client and the fake provider, then replay it
offline: ``models`` and ``chats``, sync and async, plain and streamed, with parallel function calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import _api_client, errors, types

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.errors import ReplayDivergenceError, SecretLeakError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.gemini import FLAVOR_IDS, FLAVORS, MODEL, GeminiAgent, script
from tests.agents.travel import FINAL, SYSTEM, ToolBox, tool_specs

from .test_record_replay import STEP_TYPES

GEMINI_KEY = "AIzaSyEngineTestKey0123456789abcdefghij"
GOOGLE_KEY = "AIzaSyGoogleTestKey9876543210zyxwvutsrq"
Flavor = tuple[str, bool, bool]


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recording reads GEMINI_API_KEY; GOOGLE_API_KEY (which the SDK prefers) is not set."""
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)


@pytest.fixture(params=FLAVORS, ids=FLAVOR_IDS)
def gemini_flavor(request: pytest.FixtureRequest) -> Flavor:
    result: Flavor = request.param
    return result


def run(
    flavor: Flavor,
    root: str,
    session: Session,
    *,
    box: ToolBox | None = None,
    finish: bool = True,
    **agent_options: Any,
) -> tuple[GeminiAgent, ToolBox, str]:
    """Run the agent with its tools wrapped by ``session``; finish with its answer."""
    api, is_async, stream = flavor
    box = box or ToolBox()
    agent = GeminiAgent(root, api=api, is_async=is_async, stream=stream, **agent_options)
    answer = asyncio.run(agent.run(session.tools(box.functions(is_async))))
    if finish:
        session.finish(result=answer)
    return agent, box, answer


@pytest.fixture(params=[False, True], ids=["gemini-2", "gemini-3"])
def call_ids(request: pytest.FixtureRequest) -> bool:
    """Gemini 2.x sends function calls without ids; Gemini 3 sends ids and thought signatures."""
    result: bool = request.param
    return result


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, gemini_flavor: Flavor, call_ids: bool, tmp_path: Path
) -> Iterator[tuple[Path, str]]:
    """The travel conversation recorded with this gemini_flavor: (cassette, the fake's base URL)."""
    script(fake_provider, call_ids=call_ids)
    path = tmp_path / "gemini.json"
    with blackbox(mode="record", out=path) as session:
        agent, box, answer = run(gemini_flavor, fake_provider.gemini_base_url, session)
    assert answer == FINAL
    assert box.calls == [("get_weather", "Paris"), ("get_weather", "Rome"), ("get_time", "Rome")]
    assert agent.model_calls == 3
    yield path, fake_provider.gemini_base_url


def test_record_writes_the_neutral_transcript(
    recorded: tuple[Path, str], fake_provider: FakeProvider
) -> None:
    path, _ = recorded
    trace = load_trace(path)
    steps = trace["steps"]
    assert [step["type"] for step in steps] == STEP_TYPES
    assert verify_trace(path).ok
    assert steps[0]["payload"] == {
        "messages": [
            {
                "role": "user",
                "content": "What's the weather in Paris, and the weather and local time in Rome?",
            }
        ],
        "tools": [
            {"name": spec["name"], "description": spec["description"], "inputSchema": spec["schema"]}
            for spec in tool_specs()
        ],
        "systemPrompt": SYSTEM,
        "model": MODEL,
    }
    assert steps[5]["payload"] == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Rome"}},
            {"toolCallId": "call-2", "toolName": "get_time", "toolInput": {"city": "Rome"}},
        ],
        "text": "Checking Rome.",
    }
    history = steps[10]["payload"]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "user"]
    assert [p["toolCallId"] for p in history[3]["content"][1:]] == ["call-1", "call-2"]
    assert [(p["toolCallId"], p["result"]) for p in history[4]["content"]] == [
        ("call-1", {"result": {"city": "Rome", "tempC": 24.5}}),
        ("call-2", {"result": {"city": "Rome", "time": "14:05"}}),
    ]
    assert steps[-1]["payload"] == {"event": "run_completed", "status": "success", "result": FINAL}
    assert all(request.headers["x-goog-api-key"] == GEMINI_KEY for request in fake_provider.requests)


def test_replay_offline_answers_every_call_and_runs_no_tool(
    recorded: tuple[Path, str],
    fake_provider: FakeProvider,
    gemini_flavor: Flavor,
    offline: Callable[[], list[str]],
) -> None:
    path, root = recorded
    seen = len(fake_provider.requests)
    fake_provider.stop()
    attempts = offline()
    with blackbox(mode="replay", cassette=path) as session:
        agent, box, answer = run(gemini_flavor, root, session)
    assert (answer, box.calls, attempts) == (FINAL, [], [])
    assert len(fake_provider.requests) == seen == 3
    assert agent.seen_call_ids == ["call-0", "call-1", "call-2"]
    report = session.report
    assert report is not None
    assert (report.mode, report.steps, report.status, report.replayed_steps) == ("replay", 13, "success", 13)


def test_a_changed_system_instruction_diverges_strictly_at_system_prompt(
    recorded: tuple[Path, str],
    fake_provider: FakeProvider,
    gemini_flavor: Flavor,
    offline: Callable[[], list[str]],
) -> None:
    path, root = recorded
    fake_provider.stop()
    offline()
    session = blackbox(mode="replay", cassette=path)
    with pytest.raises(errors.ClientError, match=r"\[blackbox\] replay diverged at step 0, systemPrompt"):
        run(gemini_flavor, root, session, finish=False, system="Be brief.")
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result="anything")
    session.stop()
    error = caught.value
    assert (error.step_index, error.path) == (0, "systemPrompt")
    assert (error.expected, error.actual) == (json.dumps(SYSTEM), '"Be brief."')


def test_plain_and_streamed_recordings_of_one_run_have_no_semantic_difference(
    fake_provider: FakeProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Streaming is how an answer travels: the chats API streamed records what models recorded plain."""
    cassettes = []
    for flavor in [("models", False, False), ("chats", True, True)]:
        script(fake_provider)
        path = tmp_path / f"{flavor[0]}.json"
        with blackbox(mode="record", out=path) as session:
            run(flavor, fake_provider.gemini_base_url, session)
        cassettes.append(str(path))
    assert cli_main(["diff", *cassettes, "--semantic", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["hasDivergence"], data["sharedPrefixLength"]) == (False, 13)


# -- the cassette like any other -------------------------------------------------------------------


def test_a_gemini_cassette_verifies_views_forks_and_diffs(
    fake_provider: FakeProvider,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    offline: Callable[[], list[str]],
) -> None:
    flavor: Flavor = ("chats", False, True)
    script(fake_provider)
    parent = tmp_path / "parent.json"
    with blackbox(mode="record", out=parent) as session:
        run(flavor, fake_provider.gemini_base_url, session)
    root = fake_provider.gemini_base_url
    fake_provider.stop()
    offline()

    assert cli_main(["verify", str(parent)]) == 0
    assert "Result: ✓ PASS" in capsys.readouterr().out
    page = tmp_path / "parent.html"
    assert cli_main(["view", str(parent), "-o", str(page)]) == 0
    assert capsys.readouterr().out.startswith("wrote ")
    html = page.read_text(encoding="utf-8")
    assert all(text in html for text in ("get_weather", "Checking Rome.", MODEL))

    heatwave = {"city": "Paris", "tempC": 40.5, "sky": "heatwave"}
    replies = tmp_path / "replies.json"
    replies.write_text(
        json.dumps([{"type": "final_answer", "text": "Paris is in a heatwave."}]), encoding="utf-8"
    )
    child = tmp_path / "child.json"
    fork = blackbox(
        mode="fork",
        cassette=parent,
        out=child,
        fork_at=3,
        fork_set=heatwave,
        continue_with="script",
        script=replies,
    )
    with fork:
        _, box, answer = run(flavor, root, fork)
    assert (answer, box.calls) == ("Paris is in a heatwave.", [])
    steps = load_trace(child)["steps"]
    assert [step["type"] for step in steps] == [*STEP_TYPES[:4], "model_input", "model_output", "metadata"]
    assert steps[3]["payload"] == {"toolCallId": "call-0", "toolName": "get_weather", "result": heatwave}
    assert steps[4]["payload"]["messages"][2]["content"][0]["result"] == {"result": heatwave}
    assert verify_trace(child).ok

    assert cli_main(["diff", str(parent), str(child), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["hasDivergence"], data["firstDivergenceIndex"], data["childTraceId"]) == (True, 3, "child")


def test_concurrent_conversations_without_call_ids_record_and_replay(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    """Two chats at once, each with an id-less call: each history finds its own conversation's call."""

    def respond(path: str, body: Any) -> tuple[int, Any]:
        city = "Paris" if "Paris" in body["contents"][0]["parts"][0]["text"] else "Rome"
        first = len(body["contents"]) == 1
        part = {"functionCall": {"name": "get_weather", "args": {"city": city}}} if first else {"text": city}
        candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        return 200, {"candidates": [candidate]}

    async def both(root: str, session: Session, box: ToolBox) -> list[str]:
        tools = session.tools(box.functions(True))
        agents = [
            GeminiAgent(root, api="chats", is_async=True, prompt=f"Weather in {c}?")
            for c in ("Paris", "Rome")
        ]
        return list(await asyncio.gather(*(agent.run(tools) for agent in agents)))

    fake_provider.respond_with(respond)
    path = tmp_path / "two.json"
    with blackbox(mode="record", out=path) as session:
        box = ToolBox()
        assert asyncio.run(both(fake_provider.gemini_base_url, session, box)) == ["Paris", "Rome"]
        session.finish(result="both")
    histories = [s["payload"]["messages"] for s in load_trace(path)["steps"] if s["type"] == "model_input"]
    answered = [
        (m[1]["content"][0]["toolCallId"], m[2]["content"][0]["toolCallId"]) for m in histories if len(m) > 1
    ]
    assert answered == [("call-0", "call-0"), ("call-1", "call-1")]
    root = fake_provider.gemini_base_url
    fake_provider.stop()
    attempts = offline()
    with blackbox(mode="replay", cassette=path) as session:
        box = ToolBox()
        assert asyncio.run(both(root, session, box)) == ["Paris", "Rome"]
        session.finish(result="both")
    assert (box.calls, attempts) == ([], [])


# -- automatic function calling ------------------------------------------------------------------


@pytest.mark.parametrize(
    "gemini_flavor", [("chats", False, False), ("models", True, False)], ids=["chats-sync", "models-async"]
)
@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapped", "unwrapped"])
def test_automatic_function_calling_is_recorded_faithfully(
    fake_provider: FakeProvider,
    gemini_flavor: Flavor,
    wrapped: bool,
    tmp_path: Path,
    offline: Callable[[], list[str]],
) -> None:
    """The SDK calls the Python functions itself. Wrapped, they are recorded as tool steps and a replay
    answers them from the cassette; unwrapped, they run again and their results are compared."""
    script(fake_provider)
    path = tmp_path / "afc.json"
    with blackbox(mode="record", out=path) as session:
        box = ToolBox()
        tools = box.functions(gemini_flavor[1])
        agent = GeminiAgent(
            fake_provider.gemini_base_url, api=gemini_flavor[0], is_async=gemini_flavor[1], automatic=True
        )
        answer = asyncio.run(agent.run(session.tools(tools) if wrapped else tools))
        session.finish(result=answer)
    assert (answer, len(box.calls)) == (FINAL, 3)
    types_ = [step["type"] for step in load_trace(path)["steps"]]
    assert types_ == (STEP_TYPES if wrapped else ["model_input", "model_output"] * 3 + ["metadata"])
    root = fake_provider.gemini_base_url
    fake_provider.stop()
    attempts = offline()
    with blackbox(mode="replay", cassette=path) as session:
        box = ToolBox()
        tools = box.functions(gemini_flavor[1])
        agent = GeminiAgent(root, api=gemini_flavor[0], is_async=gemini_flavor[1], automatic=True)
        answer = asyncio.run(agent.run(session.tools(tools) if wrapped else tools))
        session.finish(result=answer)
    assert (answer, attempts) == (FINAL, [])
    assert len(box.calls) == (0 if wrapped else 3)


# -- keys ----------------------------------------------------------------------------------------


def leaky_tools(box: ToolBox, key: str) -> dict[str, Callable[..., Any]]:
    """get_weather puts the key into its result: it would reach the next request, and the cassette."""

    def get_weather(city: str) -> Any:
        return {**box.get_weather(city), "debug": f"called with {key}"}

    return {"get_weather": get_weather, "get_time": box.get_time}


@pytest.mark.parametrize(
    ("style", "key"),
    [("GEMINI_API_KEY", GEMINI_KEY), ("GOOGLE_API_KEY", GOOGLE_KEY), ("api_key", GOOGLE_KEY)],
    ids=["gemini-env", "google-env", "explicit-argument"],
)
def test_a_key_in_any_style_is_never_written(
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, style: str, key: str
) -> None:
    """The SDK reads either variable (GOOGLE_API_KEY first) or takes the key as an argument; each way
    it travels as ``x-goog-api-key``. A run that leaks it is not written."""
    if style == "GOOGLE_API_KEY":
        monkeypatch.setenv("GOOGLE_API_KEY", key)
    if style != "GEMINI_API_KEY":
        monkeypatch.delenv("GEMINI_API_KEY")
    script(fake_provider)
    path = tmp_path / "leak.json"
    session = blackbox(mode="record", out=path)
    box = ToolBox()
    agent = GeminiAgent(fake_provider.gemini_base_url, api_key=key if style == "api_key" else None)
    answer = asyncio.run(agent.run(session.tools(leaky_tools(box, key))))
    with pytest.raises(SecretLeakError, match="refusing to write the cassette: it contains your API key"):
        session.finish(result=answer)
    session.stop()
    assert {request.headers["x-goog-api-key"] for request in fake_provider.requests} == {key}
    assert not path.exists()


def test_a_key_sent_as_a_query_parameter_is_a_secret_too(fake_provider: FakeProvider, tmp_path: Path) -> None:
    """The REST API also takes ``?key=``; a call made that way (here with httpx2 itself) is read."""
    key = "AIzaSyQueryParamKey00112233445566778899"
    fake_provider.queue_gemini_text("Noted.")
    path = tmp_path / "query.json"
    with blackbox(mode="record", out=path) as session:
        url = f"{fake_provider.gemini_base_url}/v1beta/models/{MODEL}:generateContent?key={key}"
        body = {"contents": [{"role": "user", "parts": [{"text": f"remember {key}"}]}]}
        assert httpx2.post(url, json=body).json()["candidates"][0]["content"]["parts"] == [{"text": "Noted."}]
        with pytest.raises(SecretLeakError):
            session.finish(result="done")
    assert not path.exists()


# -- the async client and aiohttp ----------------------------------------------------------------


def test_the_async_client_records_over_aiohttp_and_over_an_httpx2_client_alike(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    """google-genai's ``client.aio`` sends through aiohttp when it is installed (it is, here), or
    through the httpx2 client it is given: both are the same recorded model call."""
    assert _api_client.has_aiohttp is True
    fake_provider.queue_gemini_text("Hello.")
    fake_provider.queue_gemini_text("Hello.")
    session = blackbox(mode="record", out=tmp_path / "late.json")
    on_aiohttp = types.HttpOptions(base_url=fake_provider.gemini_base_url)
    on_httpx2 = types.HttpOptions(
        base_url=fake_provider.gemini_base_url, httpx_async_client=httpx2.AsyncClient()
    )

    async def ask(http_options: types.HttpOptions) -> str | None:
        client = genai.Client(http_options=http_options)
        try:
            return (await client.aio.models.generate_content(model=MODEL, contents="Hi")).text
        finally:
            await client.aio.aclose()

    assert asyncio.run(ask(on_aiohttp)) == asyncio.run(ask(on_httpx2)) == "Hello."
    session.finish(result="Hello.")
    session.stop()
    assert len(fake_provider.requests) == 2
    assert [step["type"] for step in load_trace(tmp_path / "late.json")["steps"]] == [
        "model_input",
        "model_output",
        "model_input",
        "model_output",
        "metadata",
    ]
