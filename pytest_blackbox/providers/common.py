"""Pieces the wire protocols share: the call-id map, JSON handling, refusals and payload builders.

Provider modules are pure: bodies come in as parsed JSON and neutral payloads go out as plain dicts.
Nothing here does I/O or reads the clock, so a recording and its replay normalize a request in
exactly the same way.

The JSON helpers follow JavaScript's ``JSON.parse`` / ``JSON.stringify`` rather than Python's
``json`` defaults, because cassettes are shared with the original Blackbox (arda-ulas/blackbox) and a
value must normalize to the same neutral payload whichever implementation recorded it.

See docs/providers.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypedDict, TypeVar, get_args

from ..errors import BlackboxUnsupportedError
from ..trace.canonical import js_stringify
from ..trace.model import (
    FinalAnswer,
    Message,
    ModelInput,
    Omitted,
    Stop,
    ToolCallRef,
    ToolCallsOutput,
    ToolDefinition,
)
from ..trace.prefix import same_start
from .state import StateIds

if TYPE_CHECKING:
    from typing_extensions import NotRequired

__all__ = [
    "OMITTABLE",
    "OUTPUT_PARTS",
    "STOPS",
    "CallIds",
    "ReplayArgs",
    "arguments_text",
    "azure_deployment",
    "final_answer",
    "is_stream_request",
    "join_text_blocks",
    "json_copy",
    "label",
    "list_field",
    "malformed",
    "model_input",
    "parse_arguments",
    "pick_params",
    "present",
    "replayed_model",
    "require_object",
    "require_str",
    "tool_calls_output",
    "tool_definition",
    "unsupported",
]

#: The neutral names a ``model_output``'s ``omitted`` may hold (``Omitted`` in the trace model).
OMITTABLE: Final[tuple[str, ...]] = get_args(Omitted)
#: Every neutral stop (``Stop`` in the trace model); a ``tool_calls`` output allows only ``length``.
STOPS: Final[tuple[str, ...]] = get_args(Stop)

#: 2**53: JavaScript reads larger integers as the nearest double.
_SAFE_INT: Final = 9007199254740992
_CALL_ID = re.compile(r"call-(\d+)")
_SERVER_ID = re.compile(r"server-(\d+)")
#: The parts a model output's ordered ``content`` may hold (docs/cassette-format.md).
OUTPUT_PARTS: Final = ("text", "tool_use", "server_tool_use", "server_tool_result", "compaction")
_LABEL_LIMIT: Final = 60
N = TypeVar("N")
_AZURE_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)/")


class ReplayArgs(TypedDict):
    """What a provider's ``synthesize_response`` and ``synthesize_stream`` take besides the output.

    One definition for every protocol's replay verbs (``**where: Unpack[ReplayArgs]``): the recorded
    output's ``output_index`` (response ids derive from it), the ``model`` the request named, the step's
    ``timestamp`` (ms), and for a stream the ``request_body``, which decides optional parts (the OpenAI
    Chat usage chunk). A protocol whose wire carries no such field ignores it.
    """

    output_index: int
    model: str | None
    timestamp: int | float
    request_body: NotRequired[Any]


def replayed_model(where: ReplayArgs) -> str:
    """The model name a replayed answer carries: the one the request named, else ``"unknown"``."""
    model = where["model"]
    return model if model is not None else "unknown"


class CallIds:
    """Provider tool-call ids ↔ Blackbox ``call-N`` ids, for one session.

    Ids are handed out in the order the calls are first seen, so a recording and its replay assign
    the same ones. A replay hands the agent ``call-N`` itself as the provider id, so those map to
    themselves and the counter moves past them. Tool names are remembered because a tool result in
    the history carries only the id of the call it answers.
    """

    def __init__(self) -> None:
        self._next = 0
        self._by_provider: dict[str, str] = {}
        self._names: dict[str, str] = {}
        #: Bumped whenever an answer this map already gave could change (an id rebound, a name
        #: learnt after a result was resolved as "unknown"): normalized history items older than
        #: that are not reused.
        self._version = 0
        self._unnamed: set[str] = set()
        #: This session's last normalized history: the mapping's version then, the parsed items and
        #: their normalized values.
        self._normalized: tuple[int, list[Any], list[Any]] = (-1, [], [])
        #: Other parts of the last request built once (:meth:`reused`): name → (parsed, built).
        self._reused: dict[str, tuple[Any, Any]] = {}
        self._next_server = 0
        self._servers: dict[str, tuple[str, str]] = {}
        #: Ids of conversation state the provider keeps (response ids, conversations, containers).
        self.states = StateIds()

    def neutral(self, provider_id: str, name: str | None = None) -> str:
        """The ``call-N`` for a provider id, assigning the next one if the id is new."""
        call_id = self._by_provider.get(provider_id)
        if call_id is None:
            call_id = self._take()
            self._by_provider[provider_id] = call_id
        if name is not None and provider_id not in self._names:
            self._names[provider_id] = name
            if provider_id in self._unnamed:
                self._version += 1
        return call_id

    def server(self, provider_id: str, name: str | None = None) -> tuple[str, str]:
        """``(server-N, tool name)`` for a provider-run tool call's id, assigning the next if it is new.

        Its own counter, so provider-run calls never shift the ``call-N`` of the agent's calls. A
        replay hands out ``server-N`` itself as the provider id: those map to themselves (the name
        comes from the call that carried it, or ``"unknown"``).
        """
        known = self._servers.get(provider_id)
        if known is None:
            own = _SERVER_ID.fullmatch(provider_id)
            if own is not None:
                self._next_server = max(self._next_server, int(own.group(1)) + 1)
                server_id = provider_id
            else:
                server_id = f"server-{self._next_server}"
                self._next_server += 1
            known = (server_id, name or "unknown")
            self._servers[provider_id] = known
        elif name is not None and known[1] == "unknown":
            known = (known[0], name)
            self._servers[provider_id] = known
        return known

    def fresh_server(self) -> str:
        """A new ``server-N`` for a provider-run tool's result that carries no id of its own."""
        server_id = f"server-{self._next_server}"
        self._next_server += 1
        return server_id

    def resolve(self, provider_id: str) -> tuple[str, str]:
        """``(call-N, tool name)`` for an id a tool result refers to; ``"unknown"`` if no call named it."""
        call_id = self.neutral(provider_id)
        name = self._names.get(provider_id)
        if name is None:
            self._unnamed.add(provider_id)
        return call_id, name or "unknown"

    def normalized(self, items: list[Any], normalize: Callable[[Any, int], N]) -> list[N]:
        """``[normalize(item, index) …]`` for a request's history, reusing this session's last one.

        The leading items that are the very objects normalized for the previous request, at the
        same places, with no mapping changed since, get the same normalized values (found by identity
        at C speed, ``trace.prefix``): the request body parser hands back an object again only when
        its text is byte for byte the same (``engine.bodies``), and a provider's normalization of an
        item depends on nothing else. ``normalize`` may map ids; only the items after those run it.
        """
        version, before, normalized = self._normalized
        start = self._version  # what the items are normalized under: a change during the loop voids them
        reused = same_start(items, before) if version == start else 0
        result: list[N] = normalized[:reused]
        result += [normalize(item, index) for index, item in enumerate(items[reused:], reused)]
        self._normalized = (start, list(items), result[:])
        return result

    def reused(self, name: str, raw: Any, build: Callable[[Any], N]) -> N:
        """``build(raw)`` for a part of a request that maps no ids (its tool definitions), or what it
        gave for the last request if ``raw`` is the very object parsed for it: the request body
        parser hands an object back only when its text is byte for byte the same (``engine.bodies``).
        ``raw`` may be a tuple of the values ``build`` reads, each compared so."""
        known = self._reused.get(name)
        if known is not None and _same_objects(known[0], raw):
            built: N = known[1]
            return built
        built = build(raw)
        self._reused[name] = (raw, built)
        return built

    def bind(self, provider_id: str, call_id: str, name: str | None = None) -> None:
        """Map a provider id to a ``call-N`` given out already, replacing what it mapped to (if anything).

        For keys that are not unique by nature: a Gemini call without an id is known by its place in
        the conversation, and a conversation that is run again answers at that place with new calls.
        """
        if self._by_provider.get(provider_id, call_id) != call_id or (
            name is not None and self._names.get(provider_id, name) != name
        ):
            self._version += 1
        self._by_provider[provider_id] = call_id
        if name is not None:
            self._names[provider_id] = name

    def get(self, provider_id: str) -> str | None:
        """The ``call-N`` already assigned to a provider id, without assigning one."""
        return self._by_provider.get(provider_id)

    def register_identity(self, call_ids: Iterable[str], names: Mapping[str, str] | None = None) -> None:
        """Map replayed ``call-N`` ids to themselves and move the counter past them; ``names`` (id →
        tool name) names the calls, for a request that sends a result without its call (a Responses
        request continuing ``previous_response_id``)."""
        for call_id in call_ids:
            if self._by_provider.get(call_id, call_id) != call_id:
                self._version += 1
            self._by_provider[call_id] = call_id
            self._advance_past(call_id)
            if names is not None and call_id in names:
                self.neutral(call_id, names[call_id])

    def fresh(self) -> str:
        """A new ``call-N`` that Blackbox itself hands out (unrequested invocations, scripted replies)."""
        call_id = self._take()
        if self._by_provider.get(call_id, call_id) != call_id:
            self._version += 1
        self._by_provider[call_id] = call_id
        return call_id

    def seed_past(self, call_ids: Iterable[str]) -> None:
        """Move the counter past every ``call-N`` given, without mapping anything."""
        for call_id in call_ids:
            self._advance_past(call_id)

    def peek(self) -> str:
        """The ``call-N`` the next new id will get."""
        return f"call-{self._next}"

    def _take(self) -> str:
        call_id = f"call-{self._next}"
        self._next += 1
        return call_id

    def _advance_past(self, call_id: str) -> None:
        match = _CALL_ID.fullmatch(call_id)
        if match is not None:
            self._next = max(self._next, int(match.group(1)) + 1)


def _same_objects(a: Any, b: Any) -> bool:
    """Whether ``b`` is ``a``, or a tuple of the very objects the tuple ``a`` holds."""
    if a is b:
        return True
    return type(a) is tuple and type(b) is tuple and len(a) == len(b) and same_start(a, b) == len(a)


# -- refusals ----------------------------------------------------------------------------------


def unsupported(what: str, advice: str, at: str | None = None) -> NoReturn:
    """Refuse a feature: ``<what> is not supported yet; <advice> (<field>)``, on one line."""
    where = f" ({at})" if at else ""
    raise BlackboxUnsupportedError(f"{what} is not supported yet; {advice}{where}")


def malformed(at: str, expected: str, side: str = "request") -> NoReturn:
    """Refuse a body the provider itself would not produce or accept."""
    raise BlackboxUnsupportedError(
        f"{at} must be {expected}; the provider {side} does not have the shape Blackbox can record"
    )


def label(value: Any) -> str:
    """A short, one-line rendering of a type or role value for a message (never a whole body)."""
    if isinstance(value, str):
        text = value if len(value) <= _LABEL_LIMIT else value[:_LABEL_LIMIT] + "…"
        return js_stringify(text)
    if value is None:
        return "null"
    return f"a {type(value).__name__} value"


def is_stream_request(body: Any, *, path: str = "") -> bool:
    """Whether the body asks for a streamed answer: streaming is how an answer travels, not what it says,
    so it is never part of ``model_input`` and a replay answers in whichever form is asked for.

    ``path`` is unused: these protocols say ``stream: true`` in the body."""
    mapping = type(body) is dict or isinstance(body, Mapping)  # a parsed body's own type first
    return mapping and body.get("stream") is True


def require_object(value: Any, at: str, side: str = "request") -> dict[str, Any]:
    """A JSON object, or a refusal naming where one was expected."""
    if not isinstance(value, dict):
        malformed(at, "a JSON object", side)
    return value


def require_str(value: Any, at: str, side: str = "request") -> str:
    """A string, or a refusal naming where one was expected."""
    if not isinstance(value, str):
        malformed(at, "a string", side)
    return value


def list_field(body: Mapping[str, Any], key: str, side: str = "request") -> list[Any]:
    """A list-valued field; absent or null reads as empty."""
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        malformed(key, "a list", side)
    return value


# -- JSON as JavaScript reads and writes it ----------------------------------------------------


def json_copy(value: Any) -> Any:
    """A copy of parsed JSON as ``JSON.parse`` would hold it.

    Non-finite numbers become ``null`` and integers beyond 2**53 the nearest double, as in
    JavaScript; both keep the value storable in a cassette, whose hash is defined over JavaScript
    numbers.
    """
    try:
        return _json_copy(value)
    except RecursionError:
        raise BlackboxUnsupportedError(
            "a provider body nested this deeply is not supported; send plain JSON of reasonable depth"
        ) from None


def _json_copy(value: Any) -> Any:
    kind = type(value)  # parsed JSON's own types first: the abstract checks below cost more
    if kind is dict:
        return {str(key): _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind is str:
        return value
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -_SAFE_INT <= value <= _SAFE_INT else _as_double(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): _json_copy(item) for key, item in value.items()}
    if isinstance(value, Sequence):
        return [_json_copy(item) for item in value]
    raise BlackboxUnsupportedError(
        f"a {type(value).__name__} in a provider body is not supported yet; bodies must be plain JSON"
    )


def _as_double(value: int) -> float | None:
    try:
        return float(value)
    except OverflowError:
        return None


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments as recorded: parsed JSON, else the raw text.

    A value that parses to a string keeps its raw encoded text, so a replay hands the agent exactly
    the text it got when recording. Text that does not parse is kept as it is for the same reason.
    """
    if not isinstance(raw, str):
        return json_copy({} if raw is None else raw)
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return raw
    return raw if isinstance(parsed, str) else json_copy(parsed)


def arguments_text(tool_input: Any) -> str:
    """OpenAI tool-call arguments for a recorded input: a string as it was recorded, else compact JSON."""
    return tool_input if isinstance(tool_input, str) else js_stringify(tool_input)


def present(value: Any) -> bool:
    """Whether an optional response list (logprobs, annotations) holds anything."""
    return value is not None and value != []


# -- request pieces ----------------------------------------------------------------------------


def azure_deployment(path: str) -> str | None:
    """The Azure OpenAI deployment a ``/openai/deployments/{deployment}/…`` path names, if it does.

    Azure answers with the deployment's model whatever the body's ``model`` says, so the deployment
    is what the request asked for and is compared (``params.azureDeployment``, docs/providers.md).
    """
    found = _AZURE_DEPLOYMENT.search(path)
    return found.group(1) if found else None


def pick_params(body: Mapping[str, Any], mapping: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """The neutral ``params``: fields present and non-null, in table order; ``None`` when empty."""
    params: dict[str, Any] = {}
    for wire, neutral in mapping:
        value = body.get(wire)
        if value is not None:
            params[neutral] = json_copy(value)
    return params or None


def join_text_blocks(blocks: list[Any], at: str, advice: str) -> str:
    """The text of ``{type: "text", text}`` blocks joined with a blank line; other blocks are refused."""
    texts = []
    for index, block in enumerate(blocks):
        where = f"{at}[{index}]"
        if not isinstance(block, dict):
            malformed(where, "a JSON object")
        kind = block.get("type")
        if kind != "text":
            unsupported(f"{label(kind)} content", advice, where)
        texts.append(require_str(block.get("text"), f"{where}.text"))
    return "\n\n".join(texts)


def model_input(
    messages: list[Message],
    tools: list[ToolDefinition],
    *,
    system_prompt: str | None,
    model: Any,
    params: dict[str, Any] | None,
) -> ModelInput:
    """The ``model_input`` payload, keys in the order the original Blackbox writes them."""
    payload: ModelInput = {"messages": messages, "tools": tools}
    if system_prompt is not None:
        payload["systemPrompt"] = system_prompt
    if isinstance(model, str):
        payload["model"] = model
    if params is not None:
        payload["params"] = params
    return payload


def tool_definition(name: str, description: Any, schema: Any) -> ToolDefinition:
    """A neutral tool: ``description`` is ``""`` when absent, ``inputSchema`` only when an object."""
    definition: ToolDefinition = {
        "name": name,
        "description": description if isinstance(description, str) else "",
    }
    if isinstance(schema, dict):
        definition["inputSchema"] = json_copy(schema)
    return definition


# -- model outputs -----------------------------------------------------------------------------


def tool_calls_output(calls: list[ToolCallRef], text: str, stop: Literal["length"] | None) -> ToolCallsOutput:
    """A ``tool_calls`` output: ``text`` only when non-empty, ``stop`` only when set."""
    output: ToolCallsOutput = {"type": "tool_calls", "calls": calls}
    if text:
        output["text"] = text
    if stop is not None:
        output["stop"] = stop
    return output


def final_answer(text: str, stop: Stop | None, stop_sequence: str | None = None) -> FinalAnswer:
    """A ``final_answer`` output, ``stop`` only when set, ``stopSequence`` with a ``stopSequence`` stop."""
    output: FinalAnswer = {"type": "final_answer", "text": text}
    if stop is not None:
        output["stop"] = stop
    if stop_sequence is not None:
        output["stopSequence"] = stop_sequence
    return output
