"""Concurrent conversations in one session, and calls that fail while recording.

The fake model answers each conversation from the request's own content (after a delay chosen per
conversation), so two recordings differ only in scheduling: which conversation's call completes first,
which tool of a parallel round finishes first, which ``call-N`` the session meets first. The cassettes
must not show any of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_blackbox.analysis.diff import diff_traces
from pytest_blackbox.engine.recording import INSIDE_TOOL_MESSAGE, OVERLAP_MESSAGE
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError, ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse
from pytest_blackbox.trace.io import load_trace
from pytest_blackbox.trace.model import Trace
from tests.agents.travel import MODELS
from tests.conftest import NetworkGuard

CITIES = (
    "Jakarta",
    "Berlin",
    "Helsinki",
    "Amsterdam",
    "Florence",
    "Cairo",
    "Istanbul",
    "Dublin",
    "Geneva",
    "Edinburgh",
)
SYSTEM = "You are a weather assistant. Answer from the tools' data only."
SDKS = ("anthropic", "openai")
Pause = Callable[[], Awaitable[None]]


def ask(city: str) -> str:
    return f"What's the weather in {city}, and what time is it there?"


def weather(city: str) -> dict[str, Any]:
    return {"city": city, "tempC": len(city) + 10, "sky": "clear" if len(city) % 2 else "cloudy"}


def local_time(city: str) -> dict[str, Any]:
    return {"city": city, "time": f"{len(city):02d}:{len(city) * 3:02d}"}


def final_text(city: str, weather_json: str, time_json: str) -> str:
    sky, clock = json.loads(weather_json), json.loads(time_json)
    return f"{city}: {sky['sky']}, {sky['tempC']}°C; local time {clock['time']}."


def expected_answer(city: str) -> str:
    return final_text(city, json.dumps(weather(city)), json.dumps(local_time(city)))


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


# -- the fake model ---------------------------------------------------------------------------------


@dataclass
class WeatherModel:
    """Asks for both tools of its conversation's city, then answers from their results.

    Everything it says depends on the request alone; ``delay(city, turn)`` only decides when.
    """

    sdk: str
    delay: Callable[[str, int], float] = lambda city, turn: 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    most_in_flight: int = 0
    answered: list[tuple[str, int]] = field(default_factory=list)
    attempts: Counter[tuple[str, int]] = field(default_factory=Counter)

    def __call__(self, path: str, body: Any) -> tuple[int, Any]:
        city, results = self._read(body)
        turn = 0 if not results else 1
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.attempts[(city, turn)] += 1
        try:
            time.sleep(self.delay(city, turn))
            if turn == 0:
                return 200, self._tool_calls(city)
            return 200, self._answer(final_text(city, results["get_weather"], results["get_time"]))
        finally:
            with self.lock:
                self.in_flight -= 1
                self.answered.append((city, turn))

    def _read(self, body: Any) -> tuple[str, dict[str, str]]:
        """The conversation's city, and the tool results it sent back (by tool name)."""
        messages = body["messages"]
        if self.sdk == "anthropic":
            prompt, last = messages[0]["content"], messages[-1]
            history = messages[-2]["content"] if len(messages) > 1 else []
            names = {b["id"]: b["name"] for b in history if b["type"] == "tool_use"}
            blocks = last["content"] if isinstance(last["content"], list) else []
            results = {names[b["tool_use_id"]]: b["content"] for b in blocks if b["type"] == "tool_result"}
        else:
            prompt = messages[1]["content"]
            calls = messages[2].get("tool_calls", []) if len(messages) > 2 else []
            names = {c["id"]: c["function"]["name"] for c in calls}
            results = {names[m["tool_call_id"]]: m["content"] for m in messages if m["role"] == "tool"}
        match = re.search(r"weather in ([A-Z][a-z]+)", prompt)
        assert match is not None, prompt
        return match.group(1), results

    def _tool_calls(self, city: str) -> dict[str, Any]:
        calls = [("get_weather", {"city": city}), ("get_time", {"city": city})]
        if self.sdk == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": f"Looking up {city}."}]
            blocks += [
                {"type": "tool_use", "id": "toolu_01" + _digest(city, name)[:22], "name": name, "input": args}
                for name, args in calls
            ]
            return self._anthropic(city, blocks, "tool_use")
        tool_calls = [
            {
                "id": "call_" + _digest(city, name)[:24],
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in calls
        ]
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        return self._openai(city, message, "tool_calls")

    def _answer(self, text: str) -> dict[str, Any]:
        city = text.split(":")[0]
        if self.sdk == "anthropic":
            return self._anthropic(city, [{"type": "text", "text": text}], "end_turn")
        return self._openai(city, {"role": "assistant", "content": text}, "stop")

    def _anthropic(self, city: str, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "id": "msg_01" + _digest(city, stop)[:22],
            "type": "message",
            "role": "assistant",
            "model": MODELS["anthropic"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 10},
        }

    def _openai(self, city: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-" + _digest(city, finish)[:24],
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": MODELS["openai"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        }


# -- the agent: one conversation per city, all at once --------------------------------------------


def pauses(seed: int, longest: float) -> Pause:
    """Random waits from one seeded generator: they shuffle the order tasks and tools get to run in."""
    rng = random.Random(seed)

    async def pause() -> None:
        await asyncio.sleep(rng.random() * longest)

    return pause


async def no_pause() -> None:
    await asyncio.sleep(0)


class ToolBox:
    """The real tools; they count their runs (a replay must run none)."""

    def __init__(self, pause: Pause = no_pause) -> None:
        self.runs: list[tuple[str, str]] = []
        self.pause = pause

    def functions(self) -> dict[str, Callable[..., Any]]:
        async def get_weather(city: str) -> dict[str, Any]:
            await self.pause()
            self.runs.append(("get_weather", city))
            return weather(city)

        async def get_time(city: str) -> dict[str, Any]:
            await self.pause()
            self.runs.append(("get_time", city))
            return local_time(city)

        return {"get_weather": get_weather, "get_time": get_time}


def tool_specs(sdk: str) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    specs = [("get_weather", "Current weather in a city."), ("get_time", "Local time in a city.")]
    if sdk == "anthropic":
        return [{"name": n, "description": d, "input_schema": schema} for n, d in specs]
    return [
        {"type": "function", "function": {"name": n, "description": d, "parameters": schema}}
        for n, d in specs
    ]


def async_client(sdk: str, root: str, max_retries: int = 0) -> Any:
    if sdk == "anthropic":
        return anthropic.AsyncAnthropic(base_url=root, max_retries=max_retries)
    return openai.AsyncOpenAI(base_url=root + "/v1", max_retries=max_retries)


async def converse(
    client: Any, sdk: str, city: str, tools: Mapping[str, Any], pause: Pause, prompt: str
) -> str:
    """One conversation: the model asks for both tools, they run in parallel, then it answers."""
    if sdk == "anthropic":
        messages: list[Any] = [{"role": "user", "content": prompt}]
        request = {"model": MODELS[sdk], "max_tokens": 256, "system": SYSTEM, "tools": tool_specs(sdk)}
        await pause()
        first = await client.messages.create(messages=messages, **request)
        calls = [(b.id, b.name, b.input) for b in first.content if b.type == "tool_use"]
        results = await asyncio.gather(*(tools[name](**args) for _, name, args in calls))
        messages.append({"role": "assistant", "content": first.content})
        blocks = [
            {"type": "tool_result", "tool_use_id": call_id, "content": json.dumps(result)}
            for (call_id, _, _), result in zip(calls, results, strict=True)
        ]
        messages.append({"role": "user", "content": blocks})
        await pause()
        second = await client.messages.create(messages=messages, **request)
        return "".join(b.text for b in second.content if b.type == "text")
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    await pause()
    reply = await client.chat.completions.create(model=MODELS[sdk], messages=messages, tools=tool_specs(sdk))
    message = reply.choices[0].message
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    results = await asyncio.gather(*(tools[name](**args) for _, name, args in calls))
    messages.append(message.model_dump(exclude_none=True))
    messages += [
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}
        for (call_id, _, _), result in zip(calls, results, strict=True)
    ]
    await pause()
    final = await client.chat.completions.create(model=MODELS[sdk], messages=messages, tools=tool_specs(sdk))
    return str(final.choices[0].message.content)


async def fleet(
    sdk: str,
    root: str,
    tools: Mapping[str, Any],
    *,
    cities: tuple[str, ...] = CITIES,
    pause: Pause = no_pause,
    prompt: Callable[[str], str] = ask,
    max_retries: int = 0,
) -> dict[str, Any]:
    """Every city's conversation at once; each city maps to its answer or the exception it raised."""
    client = async_client(sdk, root, max_retries)
    try:
        done = await asyncio.gather(
            *(converse(client, sdk, city, tools, pause, prompt(city)) for city in cities),
            return_exceptions=True,
        )
    finally:
        await client.close()
    return dict(zip(cities, done, strict=True))


def answers_of(cities: tuple[str, ...] = CITIES) -> dict[str, Any]:
    return {city: expected_answer(city) for city in cities}


def result_of(answers: Mapping[str, Any]) -> str:
    return json.dumps(dict(sorted(answers.items())))


def record(
    fake: FakeProvider,
    sdk: str,
    path: Path,
    *,
    delay: Callable[[str, int], float] = lambda city, turn: 0.0,
    seed: int = 0,
    cities: tuple[str, ...] = CITIES,
    max_retries: int = 0,
) -> WeatherModel:
    """Record every conversation at once; returns the fake model (what it saw, and in which order)."""
    model = WeatherModel(sdk, delay)
    fake.respond_with(model)
    session = blackbox(mode="record", out=path)
    box = ToolBox(pauses(seed, 0.004))
    answers = asyncio.run(
        fleet(sdk, fake.base_url, session.tools(box.functions()), cities=cities, max_retries=max_retries)
    )
    assert answers == answers_of(cities)
    session.finish(result=result_of(answers))
    return model


def refusal_message(error: Any) -> str:
    """The message of the HTTP 400 a refused call got, from either SDK's error body."""
    body = error.body
    return str(body["error"]["message"] if "error" in body else body["message"])


def conversation_starts(trace: Trace) -> list[tuple[int, str]]:
    """(step index, first message) of every model call that starts a conversation."""
    return [
        (step["index"], step["payload"]["messages"][0]["content"])
        for step in trace["steps"]
        if step["type"] == "model_input" and len(step["payload"]["messages"]) == 1
    ]


# -- recording ------------------------------------------------------------------------------------


@pytest.mark.parametrize("sdk", SDKS)
def test_ten_concurrent_conversations_record_the_same_cassette_whatever_the_scheduling(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    rank = {city: i for i, city in enumerate(CITIES)}
    first = record(fake_provider, sdk, tmp_path / "a.json", delay=lambda c, t: 0.002 * rank[c], seed=1)
    second = record(fake_provider, sdk, tmp_path / "b.json", delay=lambda c, t: 0.002 * (9 - rank[c]), seed=2)
    assert first.most_in_flight > 1 and second.most_in_flight > 1  # the calls really overlapped
    assert [c for c, t in first.answered if t == 0] != [c for c, t in second.answered if t == 0]

    a, b = load_trace(tmp_path / "a.json"), load_trace(tmp_path / "b.json")
    assert diff_traces(a, b, semantic=True).has_divergence is False
    # One conversation after another, in a canonical order (here: by the first message's text).
    kinds = (
        ["model_input", "model_output"] + ["tool_call", "tool_result"] * 2 + ["model_input", "model_output"]
    )
    assert [s["type"] for s in a["steps"]] == kinds * 10 + ["metadata"]
    assert [text for _, text in conversation_starts(a)] == [ask(city) for city in sorted(CITIES)]
    # call-N ids numbered in written order, the same in outputs, tool steps and the next request.
    for n, city in enumerate(sorted(CITIES)):
        steps = a["steps"][n * 8 : n * 8 + 8]
        ids = [f"call-{2 * n}", f"call-{2 * n + 1}"]
        assert [c["toolCallId"] for c in steps[1]["payload"]["calls"]] == ids
        assert [steps[i]["payload"]["toolCallId"] for i in (2, 3, 4, 5)] == [ids[0], ids[0], ids[1], ids[1]]
        assert [s["payload"]["toolName"] for s in steps[2:6:2]] == ["get_weather", "get_time"]
        history = steps[6]["payload"]["messages"]
        assert [p["toolCallId"] for p in history[1]["content"] if p["type"] == "tool_use"] == ids
        assert [p["toolCallId"] for p in history[2]["content"]] == ids
        assert steps[7]["payload"] == {"type": "final_answer", "text": expected_answer(city)}
    assert a["steps"][-1]["payload"] == {
        "event": "run_completed",
        "status": "success",
        "result": result_of(answers_of()),
    }


def test_concurrent_threads_record_the_same_cassette_whatever_the_scheduling(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    """Sync clients in threads: each thread's tool calls join its own conversation."""
    cities = CITIES[:6]

    def run(path: Path, delay: Callable[[str, int], float]) -> WeatherModel:
        model = WeatherModel("anthropic", delay)
        fake_provider.respond_with(model)
        session = blackbox(mode="record", out=path)
        answers = run_threads(session, fake_provider.base_url, cities)
        session.finish(result=result_of(answers))
        return model

    rank = {city: i for i, city in enumerate(cities)}
    first = run(tmp_path / "a.json", lambda c, t: 0.003 * rank[c])
    second = run(tmp_path / "b.json", lambda c, t: 0.003 * (5 - rank[c]))
    assert first.most_in_flight > 1 and second.most_in_flight > 1
    a, b = load_trace(tmp_path / "a.json"), load_trace(tmp_path / "b.json")
    assert diff_traces(a, b, semantic=True).has_divergence is False
    assert [text for _, text in conversation_starts(a)] == [ask(city) for city in sorted(cities)]

    session = blackbox(mode="replay", cassette=tmp_path / "a.json")
    assert run_threads(session, fake_provider.base_url, cities) == answers_of(cities)
    assert session.finish(result=result_of(answers_of(cities))).status == "success"


def run_threads(session: Session, root: str, cities: tuple[str, ...]) -> dict[str, Any]:
    """One sync conversation per thread, the tools run one after the other in their thread."""
    tools = session.tools({"get_weather": weather, "get_time": local_time})

    def converse_sync(city: str) -> str:
        client: Any = anthropic.Anthropic(base_url=root, max_retries=0)
        request: dict[str, Any] = {
            "model": MODELS["anthropic"],
            "max_tokens": 256,
            "system": SYSTEM,
            "tools": tool_specs("anthropic"),
        }
        messages: list[Any] = [{"role": "user", "content": ask(city)}]
        first = client.messages.create(messages=messages, **request)
        calls = [(b.id, b.name, b.input) for b in first.content if b.type == "tool_use"]
        blocks = [
            {"type": "tool_result", "tool_use_id": i, "content": json.dumps(tools[name](**args))}
            for i, name, args in calls
        ]
        messages += [{"role": "assistant", "content": first.content}, {"role": "user", "content": blocks}]
        second = client.messages.create(messages=messages, **request)
        client.close()
        return "".join(b.text for b in second.content if b.type == "text")

    with ThreadPoolExecutor(len(cities)) as pool:
        return dict(zip(cities, pool.map(converse_sync, cities), strict=True))


# -- replaying ------------------------------------------------------------------------------------


@pytest.fixture(params=SDKS)
def concurrent_cassette(
    request: pytest.FixtureRequest, fake_provider: FakeProvider, tmp_path: Path
) -> tuple[str, Path]:
    sdk: str = request.param
    path = tmp_path / f"{sdk}.json"
    record(fake_provider, sdk, path, delay=lambda c, t: 0.001 * (len(c) % 4))
    return sdk, path


def test_replay_answers_each_conversation_under_random_scheduling(
    concurrent_cassette: tuple[str, Path], network_guard: NetworkGuard
) -> None:
    sdk, path = concurrent_cassette
    attempts = network_guard.block()
    for seed in range(4):
        session = blackbox(mode="replay", cassette=path)
        box = ToolBox()
        answers = asyncio.run(
            fleet(sdk, "http://127.0.0.1:9", session.tools(box.functions()), pause=pauses(seed, 0.003))
        )
        assert answers == answers_of()
        report = session.finish(result=result_of(answers))
        assert (report.status, report.replayed_steps) == ("success", 81)
        assert box.runs == []
    assert attempts == []


def test_a_changed_prompt_in_one_conversation_fails_strict_replay_at_its_step(
    concurrent_cassette: tuple[str, Path],
) -> None:
    sdk, path = concurrent_cassette
    starts = dict((text, index) for index, text in conversation_starts(load_trace(path)))
    session = blackbox(mode="replay", cassette=path)
    changed = "Florence"
    answers = asyncio.run(
        fleet(
            sdk,
            "http://127.0.0.1:9",
            session.tools(ToolBox().functions()),
            pause=pauses(7, 0.003),
            prompt=lambda city: ask(city) + (" Be quick." if city == changed else ""),
        )
    )
    assert isinstance(answers[changed], anthropic.BadRequestError | openai.BadRequestError)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish()
    assert caught.value.step_index == starts[ask(changed)]
    assert str(caught.value).splitlines()[:3] == [
        f"replay diverged at step {starts[ask(changed)]}, messages[0].content",
        f"  recorded: {json.dumps(ask(changed), ensure_ascii=False)}",
        f"  actual:   {json.dumps(ask(changed) + ' Be quick.', ensure_ascii=False)}",
    ]


def test_sequence_match_pairs_each_conversation_with_its_own_recorded_calls(
    concurrent_cassette: tuple[str, Path], network_guard: NetworkGuard
) -> None:
    """Prompts with a run-dependent part: each still gets its own conversation's answers."""
    sdk, path = concurrent_cassette
    network_guard.block()
    session = blackbox(mode="replay", cassette=path, match="sequence")
    stamp = f" (asked at {time.time():.6f})"
    answers = asyncio.run(
        fleet(
            sdk,
            "http://127.0.0.1:9",
            session.tools(ToolBox().functions()),
            pause=pauses(3, 0.003),
            prompt=lambda city: ask(city) + stamp,
        )
    )
    assert answers == answers_of()
    assert session.finish(result=result_of(answers)).status == "success"


def test_a_conversation_that_skips_a_recorded_tool_diverges_at_its_next_model_call(
    concurrent_cassette: tuple[str, Path],
) -> None:
    """Its next request equals the recorded one (the agent got the value elsewhere): still a divergence."""
    sdk, path = concurrent_cassette
    skipped = "Cairo"
    step = next(
        s
        for s in load_trace(path)["steps"]
        if s["type"] == "tool_call" and s["payload"]["toolName"] == "get_time"
        if s["payload"]["toolInput"] == {"city": skipped}
    )
    session = blackbox(mode="replay", cassette=path)
    wrapped = session.tools(ToolBox().functions())

    async def unwrapped_time(city: str) -> dict[str, Any]:
        return local_time(city)

    async def run() -> dict[str, Any]:
        client = async_client(sdk, "http://127.0.0.1:9")
        done = await asyncio.gather(
            *(
                converse(
                    client,
                    sdk,
                    city,
                    {**wrapped, "get_time": unwrapped_time} if city == skipped else wrapped,
                    pauses(5, 0.002),
                    ask(city),
                )
                for city in CITIES
            ),
            return_exceptions=True,
        )
        await client.close()
        return dict(zip(CITIES, done, strict=True))

    answers = asyncio.run(run())
    expected = [
        f"replay diverged at step {step['index']}, tool get_time",
        f"  recorded: the agent runs get_time ({step['payload']['toolCallId']})",
        "  actual:   the agent moved on without running it",
    ]
    refused = answers[skipped]  # refused at the conversation's next model call, not only at finish()
    assert isinstance(refused, anthropic.BadRequestError | openai.BadRequestError)
    assert refusal_message(refused) == "[blackbox] " + "\n".join(expected)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish()
    assert str(caught.value) == "\n".join(expected)


def test_unrequested_tools_join_their_conversation_or_follow_every_conversation(
    fake_provider: FakeProvider, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    """``note`` runs in each conversation's task after its answer; ``save`` runs once all are done."""
    cities = CITIES[:4]

    def run(session: Session, root: str, pause: Pause) -> tuple[dict[str, Any], list[str]]:
        ran: list[str] = []

        async def note(city: str) -> str:
            await pause()
            ran.append(f"note {city}")
            return f"noted {city}"

        def save(report: str) -> int:
            ran.append("save")
            return len(report)

        functions: dict[str, Callable[..., Any]] = {**ToolBox(pause).functions(), "note": note, "save": save}
        tools = session.tools(functions)

        async def one(client: Any, city: str) -> str:
            answer = await converse(client, "anthropic", city, tools, pause, ask(city))
            assert await tools["note"](city) == f"noted {city}"
            return answer

        async def everything() -> dict[str, Any]:
            client = async_client("anthropic", root)
            answers = await asyncio.gather(*(one(client, city) for city in cities))
            await client.close()
            return dict(zip(cities, answers, strict=True))

        answers = asyncio.run(everything())
        assert tools["save"](result_of(answers)) == len(result_of(answers))
        session.finish(result=result_of(answers))
        return answers, ran

    rank = {city: i for i, city in enumerate(cities)}
    for name, delay, seed in (
        ("a", lambda c, t: 0.003 * rank[c], 1),
        ("b", lambda c, t: 0.003 * (3 - rank[c]), 2),
    ):
        fake_provider.respond_with(WeatherModel("anthropic", delay))
        session = blackbox(mode="record", out=tmp_path / f"{name}.json")
        answers, ran = run(session, fake_provider.base_url, pauses(seed, 0.003))
        assert answers == answers_of(cities)
        assert sorted(ran) == [*(f"note {c}" for c in sorted(cities)), "save"]
    a, b = load_trace(tmp_path / "a.json"), load_trace(tmp_path / "b.json")
    assert diff_traces(a, b, semantic=True).has_divergence is False
    kinds = ["model_input", "model_output", *["tool_call", "tool_result"] * 2, "model_input", "model_output"]
    kinds += ["tool_call", "tool_result"]  # the conversation's own note, after its last model call
    assert [s["type"] for s in a["steps"]] == kinds * 4 + ["tool_call", "tool_result", "metadata"]
    for n, city in enumerate(sorted(cities)):
        assert a["steps"][n * 10 + 8]["payload"] == {
            "toolCallId": f"call-{3 * n + 2}",
            "toolName": "note",
            "toolInput": {"city": city},
        }
    assert a["steps"][-3]["payload"] == {
        "toolCallId": "call-12",
        "toolName": "save",
        "toolInput": {"report": result_of(answers_of(cities))},
    }

    network_guard.block()
    for seed in range(3):
        session = blackbox(mode="replay", cassette=tmp_path / "a.json")
        answers, ran = run(session, "http://127.0.0.1:9", pauses(seed, 0.003))
        assert (answers, ran) == (answers_of(cities), [])


def test_a_tool_of_one_conversation_left_running_is_refused_only_for_that_conversation(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.respond_with(WeatherModel("anthropic"))
    session = blackbox(mode="record", out=tmp_path / "x.json")
    release, started, berlin_done = threading.Event(), asyncio.Event(), asyncio.Event()
    berlin_answer: list[str] = []

    async def slow_weather(city: str) -> dict[str, Any]:
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.001)
        return weather(city)

    async def fast_time(city: str) -> dict[str, Any]:
        return local_time(city)

    tools = session.tools({"get_weather": slow_weather, "get_time": fast_time})
    request: dict[str, Any] = {
        "model": MODELS["anthropic"],
        "max_tokens": 256,
        "system": SYSTEM,
        "tools": tool_specs("anthropic"),
    }

    async def amsterdam(client: anthropic.AsyncAnthropic) -> Exception:
        messages: list[Any] = [{"role": "user", "content": ask("Amsterdam")}]
        first = await client.messages.create(messages=messages, **request)
        calls = [(b.id, b.name, b.input) for b in first.content if b.type == "tool_use"]
        background = asyncio.create_task(tools["get_weather"](**calls[0][2]))
        clock = await tools["get_time"](**calls[1][2])
        await berlin_done.wait()
        messages.append({"role": "assistant", "content": first.content})
        blocks = [{"type": "tool_result", "tool_use_id": calls[1][0], "content": json.dumps(clock)}]
        messages.append({"role": "user", "content": blocks})
        try:
            await client.messages.create(messages=messages, **request)
        except anthropic.BadRequestError as exc:
            return exc
        finally:
            release.set()
            await background
        raise AssertionError("the call was not refused")

    async def berlin(client: anthropic.AsyncAnthropic) -> None:
        await started.wait()  # Amsterdam's tool is running: another conversation may still call the model
        reply = await client.messages.create(messages=[{"role": "user", "content": ask("Berlin")}], **request)
        berlin_answer.append(reply.content[0].text)
        berlin_done.set()

    async def both() -> Exception:
        client = anthropic.AsyncAnthropic(base_url=fake_provider.base_url, max_retries=0)
        refused, _ = await asyncio.gather(amsterdam(client), berlin(client))
        await client.close()
        return refused

    refused = asyncio.run(both())
    message = (
        "a wrapped tool (get_weather) is still running while its conversation's next model call starts; "
        "await every tool call of a model turn before that conversation's next model call"
    )
    assert isinstance(refused, anthropic.BadRequestError)
    assert refused.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"[blackbox] {message}"},
    }
    assert berlin_answer == ["Looking up Berlin."]
    assert len(fake_provider.requests) == 2  # the refused call was never sent
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == message


def test_a_model_call_inside_a_wrapped_tool_is_refused_while_conversations_overlap(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.respond_with(WeatherModel("anthropic", delay=lambda c, t: 0.05 if c == "Cairo" else 0.0))
    session = blackbox(mode="record", out=tmp_path / "x.json")
    client: Any = anthropic.AsyncAnthropic(base_url=fake_provider.base_url, max_retries=0)

    def call(city: str) -> Any:
        return client.messages.create(
            model=MODELS["anthropic"], max_tokens=64, messages=[{"role": "user", "content": ask(city)}]
        )

    async def think(city: str) -> Any:
        return await call(city)

    wrapped = session.tool("think", think)

    async def both() -> list[Any]:
        slow = asyncio.ensure_future(call("Cairo"))  # in flight: the session records conversations
        await asyncio.sleep(0.01)
        inside = await asyncio.gather(wrapped("Dublin"), return_exceptions=True)
        await slow
        await client.close()
        return list(inside)

    [refused] = asyncio.run(both())
    assert isinstance(refused, anthropic.BadRequestError)
    assert refused.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"[blackbox] {INSIDE_TOOL_MESSAGE}"},
    }
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == INSIDE_TOOL_MESSAGE


def test_overlapping_calls_after_a_replay_went_live_are_refused(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.queue_anthropic_text("Sunny.")
    path = tmp_path / "x.json"
    recording = blackbox(mode="record", out=path)
    plain = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    plain.messages.create(
        model=MODELS["anthropic"], max_tokens=64, messages=[{"role": "user", "content": "Weather?"}]
    )
    recording.finish()

    fake_provider.respond_with(WeatherModel("anthropic", delay=lambda c, t: 0.2))
    session = blackbox(mode="replay", cassette=path, on_divergence="record")
    client: Any = anthropic.AsyncAnthropic(base_url=fake_provider.base_url, max_retries=0)

    async def both() -> list[Any]:
        async def second() -> Any:
            while len(fake_provider.requests) < 2:  # the first call went live and is being answered
                await asyncio.sleep(0.002)
            return await client.messages.create(
                model=MODELS["anthropic"],
                max_tokens=64,
                messages=[{"role": "user", "content": ask("Geneva")}],
            )

        live = client.messages.create(
            model=MODELS["anthropic"], max_tokens=64, messages=[{"role": "user", "content": ask("Dublin")}]
        )
        done = await asyncio.gather(live, second(), return_exceptions=True)
        await client.close()
        return list(done)

    live, refused = asyncio.run(both())
    assert session.went_live_at == 0
    assert live.content[0].text == "Looking up Dublin."
    assert isinstance(refused, anthropic.BadRequestError)
    assert refused.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"[blackbox] {OVERLAP_MESSAGE}"},
    }
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == OVERLAP_MESSAGE


def test_an_out_of_order_replay_does_not_go_live_at_a_divergence(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    cities = ("Amsterdam", "Berlin", "Cairo")
    path = tmp_path / "x.json"
    record(fake_provider, "anthropic", path, cities=cities)
    before = path.read_bytes()
    session = blackbox(mode="replay", cassette=path, on_divergence="record")
    tools = session.tools(ToolBox().functions())
    berlin_done = asyncio.Event()

    async def after_berlin() -> None:  # Amsterdam, the first conversation recorded, comes last
        await berlin_done.wait()

    async def one(client: Any, city: str) -> str:
        if city != "Amsterdam":
            answer = await converse(client, "anthropic", city, tools, no_pause, ask(city))
            berlin_done.set() if city == "Berlin" else None
            return answer
        return await converse(client, "anthropic", city, tools, after_berlin, ask(city) + " Now.")

    async def run() -> dict[str, Any]:
        client = async_client("anthropic", fake_provider.base_url)
        done = await asyncio.gather(*(one(client, c) for c in cities), return_exceptions=True)
        await client.close()
        return dict(zip(cities, done, strict=True))

    answers = asyncio.run(run())
    assert answers["Berlin"] == expected_answer("Berlin")
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish()
    assert (caught.value.step_index, caught.value.path) == (0, "messages[0].content")
    assert session.went_live_at is None
    assert path.read_bytes() == before


# -- failed calls while recording -----------------------------------------------------------------


def test_a_call_the_sdk_retried_is_recorded_once_and_replays_without_the_retry(
    fake_provider: FakeProvider, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    fake_provider.queue_status(429, headers=[("retry-after-ms", "1")])
    fake_provider.queue_status(500, headers=[("retry-after-ms", "1")])
    fake_provider.queue_anthropic_text("Sunny in Rome.")
    path = tmp_path / "x.json"

    def ask_rome(session: Session) -> str:
        client: Any = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=2)
        reply = client.messages.create(
            model=MODELS["anthropic"],
            max_tokens=64,
            messages=[{"role": "user", "content": "Weather in Rome?"}],
        )
        client.close()
        session.finish(result=reply.content[0].text)
        return str(reply.content[0].text)

    assert ask_rome(blackbox(mode="record", out=path)) == "Sunny in Rome."
    assert len(fake_provider.requests) == 3  # two failed attempts, then the answer
    trace = load_trace(path)
    assert [s["type"] for s in trace["steps"]] == ["model_input", "model_output", "metadata"]
    assert trace["steps"][1]["payload"] == {"type": "final_answer", "text": "Sunny in Rome."}

    network_guard.block()
    assert ask_rome(blackbox(mode="replay", cassette=path)) == "Sunny in Rome."
    assert len(fake_provider.requests) == 3


def test_failed_attempts_in_concurrent_conversations_leave_no_trace(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    record(fake_provider, "openai", tmp_path / "clean.json")
    fake_provider.queue_status(429, headers=[("retry-after-ms", "1")])
    fake_provider.queue_status(500, headers=[("retry-after-ms", "1")])
    model = record(fake_provider, "openai", tmp_path / "retried.json", max_retries=2)
    assert sum(model.attempts.values()) == 20  # the two failures were answered by the queue, not the model
    assert len(fake_provider.requests) == 2 * 20 + 2
    clean, retried = load_trace(tmp_path / "clean.json"), load_trace(tmp_path / "retried.json")
    assert diff_traces(clean, retried, semantic=True).has_divergence is False


def test_a_stream_that_reports_an_error_is_not_recorded(fake_provider: FakeProvider, tmp_path: Path) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    chunk = f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    fake_provider.queue(
        ScriptedResponse(200, headers=(("content-type", "text/event-stream"),), chunks=[chunk])
    )
    fake_provider.queue_anthropic_text("Sunny in Rome.")
    session = blackbox(mode="record", out=tmp_path / "x.json")
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    request: dict[str, Any] = {
        "model": MODELS["anthropic"],
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Weather in Rome?"}],
    }
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        for _ in client.messages.create(stream=True, **request):
            pass
    text = "".join(
        event.delta.text
        for event in client.messages.create(stream=True, **request)
        if event.type == "content_block_delta" and event.delta.type == "text_delta"
    )
    client.close()
    assert text == "Sunny in Rome."
    session.finish(result=text)
    steps = load_trace(tmp_path / "x.json")["steps"]
    assert [s["type"] for s in steps] == ["model_input", "model_output", "metadata"]
    assert steps[1]["payload"]["text"] == "Sunny in Rome."
