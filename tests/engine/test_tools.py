"""Wrapped tools: matching invocations to the model's calls, errors, and the JSON the agent gets back."""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.engine.tools import identity_text, tool_input_of
from pytest_blackbox.errors import BlackboxUnsupportedError, RecordedToolError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.travel import MODELS


def conversation(
    root: str, session: Session, tools: dict[str, Callable[..., Any]], act: Callable[..., Any]
) -> Any:
    """Two model calls; between them ``act(wrapped_tools, response)`` runs tools and returns their results."""
    client = anthropic.Anthropic(base_url=root, max_retries=0)
    wrapped = session.tools(tools)
    messages: list[Any] = [{"role": "user", "content": "go"}]
    first = client.messages.create(model=MODELS["anthropic"], max_tokens=64, messages=messages)
    results = act(wrapped, first)
    messages.append({"role": "assistant", "content": first.content})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": block.id, "content": json.dumps(value)}
                for block, value in zip(
                    [b for b in first.content if b.type == "tool_use"], results, strict=False
                )
            ],
        }
    )
    client.messages.create(model=MODELS["anthropic"], max_tokens=64, messages=messages)
    session.finish()
    return results


def record_and_replay(
    fake: FakeProvider,
    tmp_path: Path,
    calls: list[tuple[str, dict[str, Any]]],
    tools: dict[str, Any],
    act: Any,
) -> tuple[Any, Any, list[Any]]:
    fake.queue_anthropic_tool_calls(calls)
    fake.queue_anthropic_text("done")
    path = tmp_path / "tools.json"
    recorded = conversation(fake.base_url, blackbox(mode="record", out=path), tools, act)
    root = fake.base_url
    fake.stop()
    replayed = conversation(root, blackbox(mode="replay", cassette=path), tools, act)
    return recorded, replayed, load_trace(path)["steps"]


def tool_steps(steps: list[Any]) -> list[tuple[str, Any]]:
    return [(s["type"], s["payload"]) for s in steps if s["type"] in ("tool_call", "tool_result")]


def test_an_unrequested_invocation_gets_the_next_call_id_after_the_requested_ones(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    runs: list[str] = []

    def weather(city: str) -> str:
        runs.append(city)
        return f"sunny in {city}"

    def act(tools: Any, response: Any) -> list[Any]:
        tools["get_time"]("Paris")  # the model never asked for it, and it runs first
        return [tools["get_weather"]("Paris"), tools["get_weather"](city="Lyon")]

    tools = {"get_weather": weather, "get_time": lambda city: "14:05"}
    calls = [("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Paris"})]
    recorded, replayed, steps = record_and_replay(fake_provider, tmp_path, calls, tools, act)
    assert recorded == replayed == ["sunny in Paris", "sunny in Lyon"]
    assert runs == ["Paris", "Lyon"]
    assert tool_steps(steps) == [
        ("tool_call", {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Lyon"}}),
        ("tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": "sunny in Lyon"}),
        ("tool_call", {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Paris"}}),
        ("tool_result", {"toolCallId": "call-1", "toolName": "get_weather", "result": "sunny in Paris"}),
        ("tool_call", {"toolCallId": "call-2", "toolName": "get_time", "toolInput": {"city": "Paris"}}),
        ("tool_result", {"toolCallId": "call-2", "toolName": "get_time", "result": "14:05"}),
    ]


def test_identical_duplicate_calls_are_matched_in_order(fake_provider: FakeProvider, tmp_path: Path) -> None:
    counter = itertools.count(1)

    def roll(sides: int) -> dict[str, int]:
        return {"n": next(counter)}

    def act(tools: Any, response: Any) -> list[Any]:
        return [tools["roll"](sides=6), tools["roll"](sides=6)]

    calls = [("roll", {"sides": 6}), ("roll", {"sides": 6})]
    recorded, replayed, steps = record_and_replay(fake_provider, tmp_path, calls, {"roll": roll}, act)
    assert recorded == replayed == [{"n": 1}, {"n": 2}]
    results = [p for t, p in tool_steps(steps) if t == "tool_result"]
    assert results == [
        {"toolCallId": "call-0", "toolName": "roll", "result": {"n": 1}},
        {"toolCallId": "call-1", "toolName": "roll", "result": {"n": 2}},
    ]


def test_a_tool_error_is_recorded_and_raised_again_in_replay(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    def weather(city: str) -> str:
        raise ValueError(f"no weather for {city}")

    seen: list[BaseException] = []

    def act(tools: Any, response: Any) -> list[Any]:
        try:
            tools["get_weather"]("Atlantis")
        except Exception as exc:
            seen.append(exc)
            return [str(exc)]
        return ["no error"]

    calls = [("get_weather", {"city": "Atlantis"})]
    _, _, steps = record_and_replay(fake_provider, tmp_path, calls, {"get_weather": weather}, act)
    assert tool_steps(steps)[1] == (
        "tool_result",
        {"toolCallId": "call-0", "toolName": "get_weather", "error": "no weather for Atlantis"},
    )
    recorded, replayed = seen
    assert type(recorded) is ValueError
    assert type(replayed) is RecordedToolError
    assert str(recorded) == str(replayed) == "no weather for Atlantis"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_record_and_replay_hand_the_agent_the_same_json_value(tmp_path: Path, is_async: bool) -> None:
    def reading() -> Any:
        return {"t": 23.0, "xs": (1, 2)}

    async def areading() -> Any:
        return reading()

    def call(session: Session) -> Any:
        tool = session.tool("reading", areading if is_async else reading)
        value = asyncio.run(tool()) if is_async else tool()
        session.finish(result="ok")
        return value

    path = tmp_path / "value.json"
    recorded = call(blackbox(mode="record", out=path))
    replayed = call(blackbox(mode="replay", cassette=path))
    assert recorded == replayed == {"t": 23, "xs": [1, 2]}
    assert type(recorded["t"]) is int and type(replayed["t"]) is int
    assert type(recorded["xs"]) is list


def test_a_replayed_result_is_the_agents_own_to_change(tmp_path: Path) -> None:
    """Replays of one cassette share its steps: what an agent does to a result it got never reaches
    the next replay (nor a nested object or array of it)."""

    def reading() -> Any:
        return {"tags": ["a"], "inner": {"k": 1, "xs": [[1]]}}

    def call(session: Session) -> Any:
        value = session.tool("reading", reading)()
        session.finish(result="ok")
        return value

    path = tmp_path / "value.json"
    call(blackbox(mode="record", out=path))
    first = call(blackbox(mode="replay", cassette=path))
    first["tags"].append("b")
    first["inner"]["k"] = 2
    first["inner"]["xs"][0].append(2)
    assert call(blackbox(mode="replay", cassette=path)) == reading()


REFUSED = {
    "set": ({1}, "a set"),
    "bytes": (b"\x00", "a bytes"),
    "nan": (math.nan, "a float"),
    "object": (object(), "an object"),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_a_refused_argument_stops_the_tool_before_it_runs(tmp_path: Path, kind: str) -> None:
    value, described = REFUSED[kind]
    runs: list[Any] = []

    def lookup(query: Any) -> None:
        runs.append(query)

    session = blackbox(mode="record", out=tmp_path / "refused.json")
    tool = session.tool("lookup", lookup)
    with pytest.raises(BlackboxUnsupportedError) as caught:
        tool(query=value)
    assert runs == []
    assert str(caught.value).startswith(f"{described} in the arguments of tool lookup is not supported: ")
    with pytest.raises(BlackboxUnsupportedError) as again:
        session.finish()
    assert again.value is caught.value
    assert not (tmp_path / "refused.json").exists()


@pytest.mark.parametrize("kind", list(REFUSED))
def test_a_refused_result_is_refused_after_the_tool_ran(tmp_path: Path, kind: str) -> None:
    value, described = REFUSED[kind]
    runs: list[str] = []

    def lookup(query: str) -> Any:
        runs.append(query)
        return {"value": value}

    session = blackbox(mode="record", out=tmp_path / "refused.json")
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.tool("lookup", lookup)("x")
    assert runs == ["x"]
    assert str(caught.value).startswith(f"{described} in the result of tool lookup is not supported: ")
    with pytest.raises(BlackboxUnsupportedError):
        session.finish()


def test_the_set_message_in_full(tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "refused.json")
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.tool("lookup", lambda tags: None)(tags={"a"})
    assert str(caught.value) == (
        "a set in the arguments of tool lookup is not supported: it would not come back from the cassette "
        "as the same value; convert it to JSON data (dict, list, str, int, float, bool, None) first"
    )
    session.discard()


def test_tool_input_follows_the_parameter_names() -> None:
    def weather(city: str, unit: str = "C") -> None: ...

    assert tool_input_of(weather, (), {}) == {}
    assert tool_input_of(weather, ("Paris",), {}) == {"city": "Paris"}
    assert tool_input_of(weather, (), {"city": "Paris"}) == {"city": "Paris"}
    assert tool_input_of(weather, ("Paris", "F"), {}) == {"city": "Paris", "unit": "F"}
    assert tool_input_of(weather, ({"city": "Paris"},), {}) == {"city": "Paris"}
    assert tool_input_of(weather, ("Paris",), {"extra": 1}) == ["Paris", {"extra": 1}]

    def log(*lines: str, **fields: Any) -> None: ...

    assert tool_input_of(log, ("x",), {}) == "x"
    assert tool_input_of(log, ("x", "y"), {}) == ["x", "y"]

    def search(query: str, **filters: Any) -> None: ...

    assert tool_input_of(search, ("pizza",), {"city": "Rome"}) == {"query": "pizza", "city": "Rome"}


class Echo:
    """A tool as an object: ``__call__`` (sync or async) and a method of each kind."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def __call__(self, text: str) -> str:
        self.runs.append(text)
        return text

    def method(self, text: str) -> str:
        return self(text)

    async def amethod(self, text: str) -> str:
        return self(text)


class AsyncEcho(Echo):
    async def __call__(self, text: str) -> str:  # type: ignore[override]
        self.runs.append(text)
        return text


async def echo_with_prefix(prefix: str, text: str) -> str:
    return prefix + text


def sync_echo_with_prefix(prefix: str, text: str) -> str:
    return prefix + text


TOOL_KINDS: dict[str, tuple[Callable[[], Callable[..., Any]], bool]] = {
    "callable-object": (Echo, False),
    "async-callable-object": (AsyncEcho, True),
    "bound-method": (lambda: Echo().method, False),
    "async-bound-method": (lambda: Echo().amethod, True),
    "partial": (lambda: functools.partial(sync_echo_with_prefix, ""), False),
    "async-partial": (lambda: functools.partial(echo_with_prefix, ""), True),
    "partial-of-async-object": (lambda: functools.partial(AsyncEcho()), True),
}


@pytest.mark.parametrize("kind", list(TOOL_KINDS))
def test_every_kind_of_callable_keeps_its_nature(tmp_path: Path, kind: str) -> None:
    """An object with ``async def __call__`` was once wrapped as sync ("a coroutine in the result of
    tool echo is not supported"); every kind of callable is wrapped as what it is."""
    make, is_async = TOOL_KINDS[kind]

    def call(session: Session) -> Any:
        tool = session.tool("echo", make())
        assert inspect.iscoroutinefunction(tool) is is_async
        value = asyncio.run(tool(text="hi")) if is_async else tool(text="hi")
        session.finish(result=value)
        return value

    path = tmp_path / "echo.json"
    assert call(blackbox(mode="record", out=path)) == "hi"
    steps = load_trace(path)["steps"]
    assert [s["payload"].get("toolInput", s["payload"].get("result")) for s in steps[:2]] == [
        {"text": "hi"},
        "hi",
    ]
    assert call(blackbox(mode="replay", cassette=path)) == "hi"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_identity_text_is_the_sorted_encoders_text(value: Any) -> None:
    """The reused C encoder writes what ``json.JSONEncoder(sort_keys=True, allow_nan=False)`` does."""
    assert identity_text(value) == json.JSONEncoder(sort_keys=True, allow_nan=False).encode(value)


def test_identity_text_of_what_has_no_json_form() -> None:
    looped: list[Any] = []
    looped.append(looped)
    for value in (math.nan, {"x": math.inf}, looped, object(), {"at": {1, 2}}):
        assert identity_text(value) is None, value
