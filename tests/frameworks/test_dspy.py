"""DSPy's ``ReAct`` records and replays on both of DSPy's engines, to Chat Completions, Anthropic and
Gemini, sync, async and streamed.

DSPy builds a tool from the function (``dspy.Tool`` reads the signature and the docstring), so the
function is wrapped first: ``bb.tool("get_weather", get_weather)``. ``ReAct`` asks the model for its
next tool in DSPy's own text format (``[[ ## next_tool_name ## ]]`` …), one tool per step, then
extracts the answer in one more call; the signature's instructions are part of the system prompt DSPy
writes. The language model runs on DSPy's native engine (``engine="lm15"``, which the default,
``"auto"``, picks whenever it can carry the request), sending over HTTP transports of its own that the
interception layer has an adapter for, or on its LiteLLM engine (``engine="litellm"``, which
``"auto"`` falls back to); docs/frameworks.md#dspy. Each is named here, so that neither test proves
the other. The replay runs with only the offline placeholder keys.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_blackbox import ReplayDivergenceError
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider, ReceivedRequest
from tests.conftest import NetworkGuard

from .conftest import (
    CHANGED_INSTRUCTIONS,
    INSTRUCTIONS,
    LOCAL_TIME,
    WEATHER,
    InnerSuite,
    TravelTools,
    deferred_import,
    go_keyless,
    payload,
    step_types,
)
from .contract import Recording, record, replays_offline

if TYPE_CHECKING:
    import dspy
else:
    dspy = deferred_import("dspy", "DSPy is not installed (pip install 'pytest-blackbox[frameworks]')")

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
STEP_TYPES = [
    *["model_input", "model_output", "tool_call", "tool_result"] * 2,
    *["model_input", "model_output"] * 2,
    "metadata",
]


def react_step(thought: str, tool: str, args: dict[str, Any]) -> str:
    """One ``ReAct`` answer in DSPy's chat format."""
    fields = {"next_thought": thought, "next_tool_name": tool, "next_tool_args": json.dumps(args)}
    return (
        "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items())
        + "[[ ## completed ## ]]"
    )


#: The model's four answers: both tools, one per step, ``finish``, then the extracted answer.
ANSWERS = [
    react_step("I need the weather.", "get_weather", {"city": "Paris"}),
    react_step("Now the local time.", "get_time", {"city": "Paris"}),
    react_step("I have both.", "finish", {}),
    f"[[ ## reasoning ## ]]\nBoth tools answered.\n\n[[ ## answer ## ]]\n{FINAL}\n\n[[ ## completed ## ]]",
]


@dataclass(frozen=True)
class Flavor:
    """The provider, DSPy's engine (its native one, lm15, or LiteLLM), and ``module(...)``,
    ``await module.acall(...)`` or ``dspy.streamify(module)``."""

    api: str
    style: str
    engine: str

    def lm(self, root: str) -> dspy.LM:
        """The key comes from the environment: the suite's while recording, the placeholder in a replay.

        The base is the API's as the provider documents it (``…/v1``, ``…/v1beta``); LiteLLM adds
        Anthropic's ``/v1`` itself."""
        model, base = API[self.api][:2]
        root = root if (self.engine, self.api) == ("litellm", "anthropic") else root + base
        return dspy.LM(model, api_base=root, cache=False, engine=self.engine)

    def script(self, fake: FakeProvider) -> None:
        queue = getattr(fake, API[self.api][2])
        for answer in ANSWERS:
            queue(answer)

    def streamed(self, request: ReceivedRequest) -> bool:
        """Whether a request asked for a stream: in its body, or (Gemini) in its path."""
        return ":streamGenerateContent" in request.path or bool(request.json.get("stream"))


#: Each API: DSPy's model, the base under the server root, and the fake provider's queue.
API = {
    "anthropic": ("anthropic/claude-sonnet-4-5", "/v1", "queue_anthropic_text"),
    "openai-chat": ("openai/gpt-5", "/v1", "queue_openai_text"),
    "gemini": ("gemini/gemini-2.5-flash", "/v1beta", "queue_gemini_text"),
}
GEMINI_KEY = "gemini-suite-test-key-0123456789abcdef"


FLAVORS = [
    pytest.param(Flavor(api, style, engine), id=f"{engine}-{api}-{style}")
    for engine in ("lm15", "litellm")
    for api in API
    for style in ("sync", "async", "stream")
]


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """``ReAct`` over a signature whose instructions are the agent's, with the wrapped tools."""
    signature = dspy.Signature("question -> answer", instructions)
    tools = [bb.tool("get_weather", travel.get_weather), bb.tool("get_time", travel.get_time)]
    react = dspy.ReAct(signature, tools=tools, max_iters=4)
    with dspy.context(lm=flavor.lm(root)):
        if flavor.style == "stream":
            return str(asyncio.run(streamed(react)).answer)
        if flavor.style == "async":
            return str(asyncio.run(react.acall(question=PROMPT)).answer)
        return str(react(question=PROMPT).answer)


async def streamed(react: Any) -> Any:
    """``dspy.streamify``: each model call streamed, the answer's tokens listened to, the prediction last."""
    listener = dspy.streaming.StreamListener(signature_field_name="answer")
    prediction = None
    async for item in dspy.streamify(react, stream_listeners=[listener])(question=PROMPT):
        prediction = item if isinstance(item, dspy.Prediction) else prediction
    return prediction


@pytest.fixture
def recorded(
    fake_provider: FakeProvider,
    flavor: Flavor,
    tmp_path: Path,
    sessions: Callable[..., Session],
    monkeypatch: pytest.MonkeyPatch,
) -> Recording:
    """Recorded against the fake, which is then stopped; the keys are the placeholder from then on."""
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    flavor.script(fake_provider)
    recording, answer, tools = record(fake_provider, tmp_path / "dspy.json", sessions, partial(run, flavor))
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris"), ("get_time", "Paris")]
    # streamify streams the call whose output field is listened to: the answer's extraction, the last
    streams = [flavor.streamed(request) for request in fake_provider.requests]
    assert streams == [False, False, False, flavor.style == "stream"]
    go_keyless(monkeypatch)
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert INSTRUCTIONS in first["systemPrompt"]
    assert PROMPT in json.dumps(first["messages"])
    assert [payload(recorded.path, index)["result"] for index in (3, 7)] == [WEATHER, LOCAL_TIME]
    assert payload(recorded.path, 11) == {"type": "final_answer", "text": ANSWERS[-1]}


def test_replay_is_offline_keyless_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions.
    DSPy writes the instructions into its own system prompt: the divergence names it."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=13)
    network_guard.block()
    tools = TravelTools()
    bb = sessions(mode="replay", cassette=recorded.path)
    with pytest.raises(Exception, match=r"\[blackbox\] replay diverged at step 0, systemPrompt"):
        run(flavor, recorded.root, bb, tools, CHANGED_INSTRUCTIONS)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (0, "systemPrompt")
    assert INSTRUCTIONS in str(error.expected) and CHANGED_INSTRUCTIONS in str(error.actual)
    assert tools.calls == []
    with pytest.raises(ReplayDivergenceError):
        bb.finish()


#: A user's test file importing DSPy inside the test, while the session runs: its transports are
#: loaded only then, and the replay has no key (the plugin sets a placeholder) and no provider. The
#: native engine is named: ``"auto"`` may send this request through LiteLLM instead.
INNER_TEST = '''
import os

import pytest

CALLS = []


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    CALLS.append(city)
    return {"city": city, "tempC": 21, "sky": "clear"}


@pytest.mark.blackbox
def test_weather(blackbox):
    weather = blackbox.tool("get_weather", get_weather)  # the run starts here
    import dspy

    lm = dspy.LM("openai/gpt-5", api_base=os.environ["FAKE_OPENAI_BASE"], cache=False, engine="lm15")
    react = dspy.ReAct("question -> answer", tools=[weather], max_iters=3)
    with dspy.context(lm=lm):
        answer = react(question="What's the weather in Paris?").answer
    assert answer == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
'''


def test_the_native_engine_imported_during_the_run_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    for answer in (
        react_step("I need the weather.", "get_weather", {"city": "Paris"}),
        react_step("I have it.", "finish", {}),
        "[[ ## reasoning ## ]]\nIt answered.\n\n[[ ## answer ## ]]\nParis is clear at 21 °C.\n\n"
        "[[ ## completed ## ]]",
    ):
        fake_provider.queue_openai_text(answer)
    monkeypatch.setenv("FAKE_OPENAI_BASE", fake_provider.openai_base_url)
    inner.in_a_process_of_its_own = True  # DSPy is first imported while the session runs
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == [*STEP_TYPES[:4], *STEP_TYPES[8:]]
    inner.replays_offline(cassette, fake_provider, "OPENAI_API_KEY")
