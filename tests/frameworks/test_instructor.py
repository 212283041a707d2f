"""instructor's structured outputs record and replay: a Pydantic model asked for through a forced tool call.

instructor patches the SDK client it is given, so nothing needs wrapping: every request it sends
(the first one and each re-ask after a failed validation) is an ordinary model call, recorded with
the tool instructor made of the response model. There is no tool step: instructor never runs the tool,
it parses the call's arguments. Run by ``.ci/instructor`` in an environment of its own (see
docs/frameworks.md for why).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NetworkGuard

pytest.importorskip(
    "instructor",
    reason="instructor is not installed: its jiter<0.15 pin excludes openai>=3.4, so .ci/instructor tests it "
    "in an environment of its own (pip install 'pytest-blackbox[instructor]')",
)

import anthropic
import instructor
import openai
from pydantic import BaseModel, field_validator

from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests import TEST_KEYS

from .conftest import (
    CHANGED_INSTRUCTIONS,
    INSTRUCTIONS,
    InnerSuite,
    compact,
    payload,
    step_types,
)

PROMPT = "Paris is clear today, 21 degrees. Extract the weather report."
REPORT = {"city": "Paris", "tempC": 21, "sky": "clear"}


class WeatherReport(BaseModel):
    """A weather report extracted from text."""

    city: str
    tempC: int
    sky: str

    @field_validator("sky")
    @classmethod
    def one_word(cls, sky: str) -> str:
        if " " in sky:
            raise ValueError("sky must be one word")
        return sky


@dataclass(frozen=True)
class Flavor:
    """The SDK client instructor patches, its mode, and a sync or an async client."""

    api: str
    style: str = "sync"

    def client(self, root: str) -> Any:
        is_async = self.style == "async"
        if self.api == "anthropic":
            sdk: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
                base_url=root, api_key=TEST_KEYS["ANTHROPIC_API_KEY"]
            )
            return instructor.from_anthropic(sdk)
        sdk = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", api_key=TEST_KEYS["OPENAI_API_KEY"]
        )
        mode = instructor.Mode.RESPONSES_TOOLS if self.api == "openai-responses" else instructor.Mode.TOOLS
        return instructor.from_openai(sdk, mode=mode)

    def queue(self, fake: FakeProvider, arguments: dict[str, Any]) -> None:
        """One answer: the forced call of the response model's tool."""
        queue: Callable[..., None] = {
            "anthropic": fake.queue_anthropic_tool_calls,
            "openai-chat": fake.queue_openai_tool_calls,
            "openai-responses": fake.queue_responses_tool_calls,
        }[self.api]
        queue([("WeatherReport", arguments)])


FLAVORS = [
    pytest.param(Flavor(api, style), id=f"{api}-{style}")
    for api in ("anthropic", "openai-chat", "openai-responses")
    for style in ("sync", "async")
]


def extract(flavor: Flavor, root: str, instructions: str = INSTRUCTIONS) -> WeatherReport:
    """The structured call as instructor documents it, with one re-ask allowed."""
    client = flavor.client(root)
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": PROMPT}]
    options: dict[str, Any] = {"max_retries": 2, "response_model": WeatherReport, "messages": messages}
    if flavor.api == "anthropic":
        create = client.messages.create
        options.update(model="claude-sonnet-5-5", max_tokens=1024)
    elif flavor.api == "openai-chat":
        create = client.chat.completions.create
        options.update(model="gpt-5")
    else:
        create = client.responses.create
        options.update(model="gpt-5")
    report = asyncio.run(create(**options)) if flavor.style == "async" else create(**options)
    assert isinstance(report, WeatherReport)
    return report


@dataclass
class Recording:
    path: Path
    root: str


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """One structured call recorded against the fake, which is then stopped: a replay has no server."""
    flavor.queue(fake_provider, REPORT)
    path = tmp_path / "instructor.json"
    bb = sessions(mode="record", out=path)
    report = extract(flavor, fake_provider.base_url)
    bb.finish(result=report.model_dump_json())
    assert report.model_dump() == REPORT
    assert fake_provider.pending == 0
    root = fake_provider.base_url
    fake_provider.stop()
    return Recording(path, root)


def test_the_recording_holds_the_forced_tool_call(recorded: Recording) -> None:
    """One model call, no tool step: instructor runs no tool, it parses the call's arguments."""
    assert step_types(recorded.path) == ["model_input", "model_output", "metadata"]
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["messages"]) == (INSTRUCTIONS, [{"role": "user", "content": PROMPT}])
    assert [tool["name"] for tool in first["tools"]] == ["WeatherReport"]
    assert set(first["tools"][0]["inputSchema"]["properties"]) == {"city", "tempC", "sky"}
    call = {"toolCallId": "call-0", "toolName": "WeatherReport", "toolInput": REPORT}
    assert payload(recorded.path, 1) == {"type": "tool_calls", "calls": [call]}
    assert payload(recorded.path, 2) == {
        "event": "run_completed",
        "status": "success",
        "result": compact(REPORT),
    }


def test_replay_is_offline_and_gives_the_same_object(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    attempts = network_guard.block()
    bb = sessions(mode="replay", cassette=recorded.path)
    report = extract(flavor, recorded.root)
    finished = bb.finish(result=report.model_dump_json())
    assert report.model_dump() == REPORT
    assert attempts == []
    assert (finished.mode, finished.status, finished.replayed_steps, finished.steps) == (
        "replay",
        "success",
        3,
        3,
    )


def test_strict_replay_fails_on_changed_instructions(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """instructor does not retry an HTTP 400: the SDK's error reaches the caller at once."""
    network_guard.block()
    bb = sessions(mode="replay", cassette=recorded.path)
    with pytest.raises(Exception) as rejected:
        extract(flavor, recorded.root, instructions=CHANGED_INSTRUCTIONS)
    assert "[blackbox] replay diverged at step 0, systemPrompt" in str(rejected.value)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (0, "systemPrompt")
    with pytest.raises(ReplayDivergenceError) as finished:
        bb.finish()
    assert finished.value is error


def record_reask(flavor: Flavor, fake: FakeProvider, path: Path, sessions: Callable[..., Session]) -> str:
    """An answer that fails validation, instructor's re-ask, the valid answer; the fake is then stopped."""
    flavor.queue(fake, dict(REPORT, sky="clear blue"))
    flavor.queue(fake, REPORT)
    bb = sessions(mode="record", out=path)
    report = extract(flavor, fake.base_url)
    bb.finish(result=report.model_dump_json())
    assert report.model_dump() == REPORT
    assert step_types(path) == ["model_input", "model_output"] * 2 + ["metadata"]
    assert "sky must be one word" in json.dumps(payload(path, 2)["messages"][1:])
    assert payload(path, 3)["calls"][0]["toolInput"] == REPORT
    root = fake.base_url
    fake.stop()
    return root


@pytest.mark.parametrize(
    "reask", [Flavor("anthropic"), Flavor("openai-chat", "async")], ids=["anthropic", "openai-chat"]
)
def test_a_reask_after_a_failed_validation_replays(
    reask: Flavor,
    fake_provider: FakeProvider,
    tmp_path: Path,
    network_guard: NetworkGuard,
    sessions: Callable[..., Session],
) -> None:
    """The re-ask carries the validation error back to the model: a second recorded call, replayed alike."""
    path = tmp_path / "reask.json"
    root = record_reask(reask, fake_provider, path, sessions)
    attempts = network_guard.block()
    bb = sessions(mode="replay", cassette=path)
    report = extract(reask, root)
    assert bb.finish(result=report.model_dump_json()).replayed_steps == 5
    assert report.model_dump() == REPORT
    assert attempts == []


def test_a_responses_reask_quotes_the_provider_call_id_so_it_replays_only_in_sequence_mode(
    fake_provider: FakeProvider,
    tmp_path: Path,
    network_guard: NetworkGuard,
    sessions: Callable[..., Session],
) -> None:
    """On the Responses API instructor writes the provider's call id (``fc_…``) into the re-ask's text.
    A cassette keeps no provider ids, so the replayed call has another one and the strict comparison
    names the re-ask's text; ``match="sequence"`` replays it."""
    path = tmp_path / "reask.json"
    root = record_reask(Flavor("openai-responses"), fake_provider, path, sessions)
    network_guard.block()
    strict = sessions(mode="replay", cassette=path)
    with pytest.raises(Exception, match=r"InstructorRetryException|diverged"):
        extract(Flavor("openai-responses"), root)
    error = strict.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (2, "messages[1].content")
    assert "(tool call name=WeatherReport, id=fc_" in payload(path, 2)["messages"][1]["content"]
    strict.stop()

    sequence = sessions(mode="replay", cassette=path, match="sequence")
    report = extract(Flavor("openai-responses"), root)
    assert sequence.finish(result=report.model_dump_json()).replayed_steps == 5


#: A user's test file: the plugin's ``blackbox`` fixture and instructor over the OpenAI client, which
#: reads OPENAI_BASE_URL and OPENAI_API_KEY (a replay gets a placeholder key).
INNER_TEST = """
import instructor
import openai
import pytest
from pydantic import BaseModel


class WeatherReport(BaseModel):
    city: str
    tempC: int
    sky: str


@pytest.mark.blackbox
def test_extract(blackbox):
    client = instructor.from_openai(openai.OpenAI())
    report = client.chat.completions.create(
        model="gpt-5",
        response_model=WeatherReport,
        messages=[{"role": "user", "content": "Paris is clear today, 21 degrees."}],
    )
    assert report.model_dump() == {"city": "Paris", "tempC": 21, "sky": "clear"}
    blackbox.finish(result=report.model_dump_json())  # the run ends on a tool call: record its outcome
"""


def test_the_plugin_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    Flavor("openai-chat").queue(fake_provider, REPORT)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_base_url)
    cassette = inner.records(INNER_TEST, "test_extract", expect_tool_calls="")
    assert step_types(cassette) == ["model_input", "model_output", "metadata"]
    inner.replays_offline(cassette, fake_provider, "OPENAI_API_KEY")
