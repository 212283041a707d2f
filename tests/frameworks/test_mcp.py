"""MCP tools record as tool steps against a real stdio server, and replay with that server's command gone.

The server (``mcp_weather_server.py``) is built with the ``mcp`` SDK's own server API and started by
``mcp.Client`` over stdio. The agent lists the server's tools, offers them to the model under their
plain names, and calls what the model asks for: one result, one ``isError`` result, one ``MCPError``.
A replay points the client at a command that does not exist and must neither start it nor notice.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest

from pytest_blackbox import MCPClient, mcp_client
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine.mcp import listing_tool_name, mcp_error_from_text, mcp_error_text
from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import BlackboxUnsupportedError, BlackboxUsageError, ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests import TEST_KEYS
from tests.conftest import NetworkGuard

from .conftest import (
    CHANGED_INSTRUCTIONS,
    INSTRUCTIONS,
    InnerSuite,
    deferred_import,
    payload,
    step_types,
)

if TYPE_CHECKING:
    import mcp
    import mcp.shared.exceptions
    import mcp_types
else:
    mcp = deferred_import("mcp", "the MCP SDK is not installed (pip install 'pytest-blackbox[frameworks]')")
    mcp_types = deferred_import(
        "mcp_types", "mcp_types is not installed (pip install 'pytest-blackbox[frameworks]')"
    )

SERVER = Path(__file__).with_name("mcp_weather_server.py")
PROMPT = "What's the weather in Paris and Atlantis, and any alerts for Brittany?"
FINAL = "Paris is clear at 21 °C; Atlantis has no station; Brittany is unknown."
CALLS = [
    ("get_forecast", {"city": "Paris"}),
    ("get_forecast", {"city": "Atlantis"}),
    ("get_alerts", {"region": "Brittany"}),
]
FORECAST = {"city": "Paris", "tempC": 21, "sky": "clear"}
ALERTS_ERROR = {
    "code": -32602,
    "message": "unknown region: Brittany",
    "data": {"region": "Brittany", "known": ["Île-de-France"]},
}
STEP_TYPES = [
    "tool_call",
    "tool_result",
    "model_input",
    "model_output",
    *["tool_call", "tool_result"] * 3,
    "model_input",
    "model_output",
    "metadata",
]


def stdio(command: str, starts: Path) -> mcp.StdioServerParameters:
    return mcp.StdioServerParameters(command=command, args=[str(SERVER), str(starts)])


@dataclass
class Observed:
    """What the agent saw of the server: the tool names it listed, and each call's outcome."""

    tools: list[str] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)

    async def call(self, weather: MCPClient, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Call one tool; the text and error flag the model gets back."""
        try:
            result = await weather.call_tool(name, arguments)
        except mcp.shared.exceptions.MCPError as error:
            self.calls.append(("MCPError", error.code, error.message, error.data))
            return f"MCP error {error.code}: {error.message}", True
        self.calls.append(("result", result))
        text = "".join(part.text for part in result.content if isinstance(part, mcp_types.TextContent))
        return text, result.is_error


@dataclass(frozen=True)
class Flavor:
    """The SDK the agent talks to the model with (async: the MCP client is)."""

    api: str

    def script(self, fake: FakeProvider) -> None:
        queue = fake.queue_anthropic_tool_calls if self.api == "anthropic" else fake.queue_openai_tool_calls
        queue(CALLS)
        queue([], text=FINAL)

    async def run(self, root: str, weather: MCPClient, instructions: str) -> tuple[str, Observed]:
        observed = Observed()
        listed = await weather.list_tools()
        observed.tools = [tool.name for tool in listed.tools]
        if self.api == "anthropic":
            return await anthropic_agent(root, weather, listed.tools, instructions, observed), observed
        return await openai_agent(root, weather, listed.tools, instructions, observed), observed


async def anthropic_agent(
    root: str, weather: MCPClient, listed: list[Any], instructions: str, observed: Observed
) -> str:
    client = anthropic.AsyncAnthropic(base_url=root, api_key=TEST_KEYS["ANTHROPIC_API_KEY"])
    tools: Any = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in listed
    ]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        reply = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=1024, system=instructions, messages=messages, tools=tools
        )
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
        results = []
        for use in uses:
            text, is_error = await observed.call(weather, use.name, dict(use.input))
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": text, "is_error": is_error}
            )
        messages.append({"role": "user", "content": results})


async def openai_agent(
    root: str, weather: MCPClient, listed: list[Any], instructions: str, observed: Observed
) -> str:
    client = openai.AsyncOpenAI(base_url=root + "/v1", api_key=TEST_KEYS["OPENAI_API_KEY"])
    tools: Any = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in listed
    ]
    messages: list[Any] = [{"role": "system", "content": instructions}, {"role": "user", "content": PROMPT}]
    while True:
        reply = (await client.chat.completions.create(model="gpt-5", messages=messages, tools=tools)).choices[
            0
        ]
        if not reply.message.tool_calls:
            return reply.message.content or ""
        messages.append(reply.message.model_dump(exclude_none=True))
        for call in reply.message.tool_calls:
            assert call.type == "function", call
            text, _is_error = await observed.call(
                weather, call.function.name, json.loads(call.function.arguments)
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


async def run_agent(
    flavor: Flavor,
    root: str,
    bb: Session,
    server: mcp.StdioServerParameters,
    instructions: str = INSTRUCTIONS,
) -> tuple[str, Observed, bool]:
    """The recipe: the session's MCP client owns the connection; the agent uses it like ``mcp.Client``."""
    async with mcp_client(bb, server, name="weather") as weather:
        answer, observed = await flavor.run(root, weather, instructions)
        return answer, observed, weather.connected


@dataclass
class Recording:
    path: Path
    root: str
    observed: Observed
    starts: Path


FLAVORS = [
    pytest.param(Flavor("anthropic"), id="anthropic"),
    pytest.param(Flavor("openai-chat"), id="openai-chat"),
]


@pytest.fixture
async def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """The run recorded against the real server and the fake provider; both are gone afterwards."""
    flavor.script(fake_provider)
    path, starts = tmp_path / "mcp.json", tmp_path / "starts.txt"
    bb = sessions(mode="record", out=path)
    answer, observed, connected = await run_agent(
        flavor, fake_provider.base_url, bb, stdio(sys.executable, starts)
    )
    bb.finish(result=answer)
    assert (answer, connected) == (FINAL, True)
    assert starts.read_text() == "started\n"
    assert fake_provider.pending == 0
    root = fake_provider.base_url
    fake_provider.stop()
    return Recording(path, root, observed, starts)


def test_the_recording_holds_the_listing_and_every_call(recorded: Recording) -> None:
    """The listing comes first (an unrequested call, before the model call that used it); each tool call
    is tied to the model's request by the plain tool name the model used."""
    assert step_types(recorded.path) == STEP_TYPES
    assert payload(recorded.path, 0) == {
        "toolCallId": "call-0",
        "toolName": "mcp:weather/tools/list",
        "toolInput": {},
    }
    listing = payload(recorded.path, 1)["result"]
    assert [tool["name"] for tool in listing["tools"]] == ["get_forecast", "get_alerts"]
    assert listing["tools"][0]["outputSchema"]["required"] == ["city", "tempC", "sky"]
    requested = payload(recorded.path, 3)["calls"]
    assert [(c["toolCallId"], c["toolName"], c["toolInput"]) for c in requested] == [
        ("call-1", *CALLS[0]),
        ("call-2", *CALLS[1]),
        ("call-3", *CALLS[2]),
    ]
    assert [payload(recorded.path, i)["toolCallId"] for i in (4, 5, 6, 7, 8, 9)] == ["call-1"] * 2 + [
        "call-2"
    ] * 2 + ["call-3"] * 2
    assert verify_trace(recorded.path).ok


def test_results_and_errors_are_recorded_as_the_server_sent_them(recorded: Recording) -> None:
    forecast, atlantis, alerts = (payload(recorded.path, i) for i in (5, 7, 9))
    assert forecast["result"]["structuredContent"] == FORECAST
    assert forecast["result"]["isError"] is False
    assert atlantis["result"]["isError"] is True
    assert atlantis["result"]["content"] == [
        {"type": "text", "text": "Error executing tool get_forecast: no weather station in Atlantis"}
    ]
    assert alerts == {
        "toolCallId": "call-3",
        "toolName": "get_alerts",
        "error": "MCPError " + json.dumps(ALERTS_ERROR, ensure_ascii=False, separators=(",", ":")),
    }


async def test_replay_never_starts_the_server_and_the_agent_sees_the_same(
    recorded: Recording,
    flavor: Flavor,
    tmp_path: Path,
    network_guard: NetworkGuard,
    sessions: Callable[..., Session],
) -> None:
    """The server's command does not exist in the replay: starting it would fail the run."""
    attempts = network_guard.block()
    bb = sessions(mode="replay", cassette=recorded.path)
    gone = stdio(str(tmp_path / "no-such-python"), recorded.starts)
    answer, observed, connected = await run_agent(flavor, recorded.root, bb, gone)
    report = bb.finish(result=answer)
    assert (answer, connected) == (FINAL, False)
    assert observed == recorded.observed
    assert observed.calls[2] == (
        "MCPError",
        ALERTS_ERROR["code"],
        ALERTS_ERROR["message"],
        ALERTS_ERROR["data"],
    )
    assert isinstance(observed.calls[1][1], mcp_types.CallToolResult) and observed.calls[1][1].is_error
    assert recorded.starts.read_text() == "started\n"
    assert attempts == []
    assert (report.mode, report.status, report.replayed_steps, report.steps) == ("replay", "success", 13, 13)


async def test_strict_replay_fails_on_changed_instructions_without_starting_the_server(
    recorded: Recording,
    flavor: Flavor,
    tmp_path: Path,
    network_guard: NetworkGuard,
    sessions: Callable[..., Session],
) -> None:
    """The listing replays; the first model call, which carries the changed prompt, is refused."""
    network_guard.block()
    bb = sessions(mode="replay", cassette=recorded.path)
    expected = anthropic.BadRequestError if flavor.api == "anthropic" else openai.BadRequestError
    with pytest.raises(expected) as rejected:
        await run_agent(
            flavor,
            recorded.root,
            bb,
            stdio(str(tmp_path / "no-such-python"), recorded.starts),
            CHANGED_INSTRUCTIONS,
        )
    assert "[blackbox] replay diverged at step 2, systemPrompt" in str(rejected.value)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (2, "systemPrompt")
    assert recorded.starts.read_text() == "started\n"


async def test_a_replay_that_goes_live_starts_the_server_for_the_first_call_that_must_run(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    """New episodes: the listing is answered from the cassette, the run goes live at the changed prompt,
    and the client connects only when the first tool call has to reach the server."""
    flavor, path, starts = Flavor("anthropic"), tmp_path / "mcp.json", tmp_path / "starts.txt"
    server = stdio(sys.executable, starts)
    flavor.script(fake_provider)
    bb = sessions(mode="record", out=path)
    bb.finish(result=(await run_agent(flavor, fake_provider.base_url, bb, server))[0])
    flavor.script(fake_provider)

    bb = sessions(mode="replay", cassette=path, on_divergence="record")
    answer, observed, connected = await run_agent(
        flavor, fake_provider.base_url, bb, server, CHANGED_INSTRUCTIONS
    )
    bb.finish(result=answer)
    assert (answer, connected, bb.went_live_at) == (FINAL, True, 2)
    assert starts.read_text() == "started\n" * 2
    assert observed.calls[2][0] == "MCPError"
    assert step_types(path) == STEP_TYPES
    assert payload(path, 2)["systemPrompt"] == CHANGED_INSTRUCTIONS
    assert payload(path, 1)["result"]["tools"][0]["name"] == "get_forecast"


async def test_calls_record_under_the_prefixed_name_the_agent_shows_the_model(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    """An agent offering a tool as ``weather_get_forecast`` records it so; the server gets the plain name."""
    fake_provider.queue_anthropic_tool_calls([("weather_get_forecast", {"city": "Paris"})])
    fake_provider.queue_anthropic_text(FINAL)
    path = tmp_path / "prefixed.json"
    bb = sessions(mode="record", out=path)
    client = anthropic.AsyncAnthropic(base_url=fake_provider.base_url, api_key=TEST_KEYS["ANTHROPIC_API_KEY"])
    async with mcp_client(
        bb, stdio(sys.executable, tmp_path / "starts.txt"), name="weather", tool_prefix="weather_"
    ) as weather:
        reply = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
        )
        use = reply.content[0]
        assert use.type == "tool_use"
        result = await weather.call_tool(use.name.removeprefix("weather_"), dict(use.input))
    bb.finish(result=str(result.structured_content))
    assert result.structured_content == FORECAST
    assert payload(path, 2)["toolName"] == "weather_get_forecast"
    assert payload(path, 2)["toolCallId"] == payload(path, 1)["calls"][0]["toolCallId"] == "call-0"


@pytest.mark.parametrize(
    "error",
    [
        mcp.shared.exceptions.MCPError(
            -32602, "unknown region: Brittany", {"region": "Brittany", "known": ["Île-de-France"]}
        ),
        mcp.shared.exceptions.MCPError(-32601, "Method not found"),
        mcp.shared.exceptions.MCPError(-32000, 'quotes " and\nnewlines', ["a", 1, None]),
    ],
    ids=["with-data", "without-data", "awkward-text"],
)
def test_an_mcp_error_round_trips_through_its_recorded_text(error: mcp.shared.exceptions.MCPError) -> None:
    again = mcp_error_from_text(mcp_error_text(error))
    assert again is not None
    assert (type(again), again.error) == (mcp.shared.exceptions.MCPError, error.error)
    assert str(again) == str(error)


@pytest.mark.parametrize("text", ["boom", "MCPError not json", 'MCPError {"code": "x"}', "MCPError []"])
def test_other_recorded_errors_are_not_mcp_errors(text: str) -> None:
    assert mcp_error_from_text(text) is None


def test_the_listing_name_cannot_be_a_model_tool_name() -> None:
    assert listing_tool_name("weather") == "mcp:weather/tools/list"


async def test_usage_errors_say_what_to_do(sessions: Callable[..., Session], tmp_path: Path) -> None:
    bb = sessions(mode="replay", cassette=write_empty_cassette(tmp_path))
    server = stdio(str(tmp_path / "no-such-python"), tmp_path / "starts.txt")
    with pytest.raises(
        BlackboxUsageError, match=r"an MCP server needs a name \(name=\.\.\.\): its tool listings record it"
    ):
        mcp_client(bb, server, name="")
    weather = mcp_client(bb, server, name="weather")
    with pytest.raises(BlackboxUsageError, match="is not open: use it inside `async with mcp_client"):
        await weather.call_tool("get_forecast", {"city": "Paris"})
    async with weather:
        with pytest.raises(
            BlackboxUnsupportedError, match="read_resource of an MCP client is not recorded in this version"
        ):
            weather.read_resource  # noqa: B018
        with pytest.raises(AttributeError):
            weather.no_such_thing  # noqa: B018
    bb.discard()


def write_empty_cassette(tmp_path: Path) -> Path:
    """A replayable cassette of a run that did nothing."""
    from pytest_blackbox.engine.session import blackbox

    path = tmp_path / "empty.json"
    bb = blackbox(mode="record", out=path)
    bb.finish(result="")
    bb.stop()
    return path


#: A user's test file: the plugin's ``blackbox`` fixture, the server started from a command the test
#: reads from the environment (the replay gets one that does not exist), and AsyncAnthropic reading
#: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (a replay gets a placeholder key).
INNER_TEST = """
import os

import anthropic
import pytest
from mcp import StdioServerParameters

from pytest_blackbox import mcp_client

SERVER = StdioServerParameters(
    command=os.environ["WEATHER_PYTHON"], args=[os.environ["WEATHER_SERVER"], os.environ["WEATHER_STARTS"]]
)


@pytest.mark.blackbox
async def test_weather(blackbox):
    client = anthropic.AsyncAnthropic()
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    async with mcp_client(blackbox, SERVER, name="weather") as weather:
        listed = await weather.list_tools()
        tools = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
            for tool in listed.tools
        ]
        while True:
            reply = await client.messages.create(
                model="claude-sonnet-5-5", max_tokens=1024, messages=messages, tools=tools
            )
            messages.append({"role": "assistant", "content": reply.content})
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                break
            results = []
            for use in uses:
                result = await weather.call_tool(use.name, use.input)
                text = result.content[0].text
                results.append({"type": "tool_result", "tool_use_id": use.id, "content": text})
            messages.append({"role": "user", "content": results})
    assert reply.content[0].text == "Paris is clear at 21 °C."
"""


def test_the_plugin_records_once_then_replays_without_server_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_provider.queue_anthropic_tool_calls([CALLS[0]])
    fake_provider.queue_anthropic_text("Paris is clear at 21 °C.")
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_base_url)
    monkeypatch.setenv("WEATHER_PYTHON", sys.executable)
    monkeypatch.setenv("WEATHER_SERVER", str(SERVER))
    monkeypatch.setenv("WEATHER_STARTS", str(starts))
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="")
    assert step_types(cassette) == [
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    assert payload(cassette, 5)["result"]["structuredContent"] == FORECAST
    assert starts.read_text() == "started\n"
    monkeypatch.setenv("WEATHER_PYTHON", str(tmp_path / "no-such-python"))
    inner.replays_offline(cassette, fake_provider, "ANTHROPIC_API_KEY")
    assert starts.read_text() == "started\n"
