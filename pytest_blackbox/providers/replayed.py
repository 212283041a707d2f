"""A recorded ``model_output`` read back for a replay: checked, and reduced to what a synthesized
response needs (its parts in order and the envelope fields). Every protocol's synthesis reads it.

See docs/cassette-format.md#payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import BlackboxUnsupportedError
from .common import OMITTABLE, OUTPUT_PARTS, STOPS, json_copy, label

__all__ = ["ReplayOutput", "read_output"]


@dataclass(frozen=True)
class ReplayOutput:
    """A recorded model output, checked and reduced to what a synthesized response needs."""

    calls: list[dict[str, Any]]
    text: str
    stop: str | None
    #: Every part in the order a replay gives them back: the recorded ``content``, else the text
    #: (when there is any) then the calls.
    parts: list[dict[str, Any]]
    #: The recorded moderation result (camelCase), when the response had one.
    moderation: dict[str, Any] | None = None
    #: The neutral names of wire fields the response left out (see ``providers.envelope``).
    omitted: frozenset[str] = frozenset()
    #: The stop sequence that ended the answer (with ``stop == "stopSequence"``).
    stop_sequence: str | None = None
    #: The recorded token log probabilities of the text (camelCase), when the response had them.
    logprobs: list[Any] | None = None
    #: The neutral id of the conversation the response belonged to (Responses ``conversation``).
    conversation: str | None = None
    #: The container the response used (Anthropic ``container``): its neutral id, fields in camelCase.
    container: dict[str, Any] | None = None

    @property
    def has_calls(self) -> bool:
        return bool(self.calls)


def read_output(output: Any) -> ReplayOutput:
    """Check a recorded ``model_output`` payload before a response is built from it.

    The single-call shape of the built-in agent loop is served as one call of ``tool_calls``.
    """
    if not isinstance(output, dict):
        _bad_output("is not a JSON object")
    kind = output.get("type")
    if kind == "final_answer":
        text = output.get("text")
        if not isinstance(text, str):
            _bad_output("is a final_answer without a string text")
        return _replay_output(output, [], text, _stop(output, STOPS))
    if kind == "tool_call":
        return _replay_output(output, [_call(output)], "", None)
    if kind == "tool_calls":
        calls = output.get("calls")
        if not isinstance(calls, list) or not calls:
            _bad_output("is a tool_calls output without calls")
        text = output.get("text", "")
        if not isinstance(text, str):
            _bad_output("has a text that is not a string")
        return _replay_output(output, [_call(call) for call in calls], text, _stop(output, ("length",)))
    _bad_output(f"has type {label(kind)} (expected tool_calls, tool_call or final_answer)")


def _replay_output(
    output: dict[str, Any], calls: list[dict[str, Any]], text: str, stop: str | None
) -> ReplayOutput:
    content = output.get("content")
    if content is None:
        parts = [{"type": "text", "text": text}] if text else []
        parts += [{"type": "tool_use", **call} for call in calls]
        return ReplayOutput(calls, text, stop, parts, **_envelope(output))
    if not isinstance(content, list):
        _bad_output("has a content that is not a list")
    parts = [_output_part(part) for part in content]
    uses = [
        {key: part[key] for key in ("toolCallId", "toolName", "toolInput")}
        for part in parts
        if part["type"] == "tool_use"
    ]
    if uses != calls:
        _bad_output("has a content whose tool_use parts are not its calls")
    return ReplayOutput(calls, text, stop, parts, **_envelope(output))


def _output_part(part: Any) -> dict[str, Any]:
    if not isinstance(part, dict) or part.get("type") not in OUTPUT_PARTS:
        _bad_output(f"has a content part that is not one of {', '.join(OUTPUT_PARTS)}")
    if part["type"] == "text":
        if not isinstance(part.get("text"), str):
            _bad_output("has a text part without a string text")
    elif part["type"] == "compaction":
        if not isinstance(part.get("content"), dict):
            _bad_output("has a compaction part without an object content")
    elif not isinstance(part.get("toolCallId"), str) or not isinstance(part.get("toolName"), str):
        _bad_output(f"has a {part['type']} part without a string toolCallId and toolName")
    copied: dict[str, Any] = json_copy(part)
    return copied


def _call(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict):
        _bad_output("has a call that is not a JSON object")
    call_id, name = call.get("toolCallId"), call.get("toolName")
    if not isinstance(call_id, str) or not isinstance(name, str):
        _bad_output("has a call without a string toolCallId and toolName")
    return {"toolCallId": call_id, "toolName": name, "toolInput": json_copy(call.get("toolInput"))}


def _stop(output: dict[str, Any], allowed: tuple[str, ...]) -> str | None:
    stop = output.get("stop")
    if stop is not None and stop not in allowed:
        _bad_output(f"has stop {label(stop)} (a {output['type']} output allows only {' or '.join(allowed)})")
    return stop


def _envelope(output: dict[str, Any]) -> dict[str, Any]:
    """The optional fields of an output beyond text, calls and stop (``ReplayOutput``'s keywords)."""
    moderation, omitted = output.get("moderation"), output.get("omitted", [])
    sequence, logprobs = output.get("stopSequence"), output.get("logprobs")
    if moderation is not None and not isinstance(moderation, dict):
        _bad_output("has a moderation that is not a JSON object")
    if logprobs is not None and not isinstance(logprobs, list):
        _bad_output("has logprobs that are not a list")
    reasoning = output.get("reasoning") or {}  # given back by providers.reasoning, from the output itself
    if not isinstance(reasoning, dict) or not all(isinstance(text, str) for text in reasoning.values()):
        _bad_output("has a reasoning that is not an object of texts")
    conversation, container = output.get("conversation"), output.get("container")
    if not isinstance(conversation, (str, type(None))):
        _bad_output("has a conversation that is not a string")
    if container is not None and not (isinstance(container, dict) and isinstance(container.get("id"), str)):
        _bad_output("has a container that is not an object with a string id")
    if not isinstance(omitted, list) or not all(name in OMITTABLE for name in omitted):
        _bad_output(f"has omitted other than a list of {', '.join(OMITTABLE)}")
    if (sequence is not None) != (output.get("stop") == "stopSequence") or not isinstance(
        sequence, (str, type(None))
    ):
        _bad_output('has a stopSequence without stop "stopSequence", or the other way round')
    return {
        "moderation": moderation,
        "omitted": frozenset(omitted),
        "stop_sequence": sequence,
        "logprobs": logprobs,
        "conversation": conversation,
        "container": container,
    }


def _bad_output(problem: str) -> NoReturn:
    raise BlackboxUnsupportedError(
        f"this recorded model_output cannot be replayed: it {problem}; fix the cassette or the fork script "
        "so it holds one of the shapes Blackbox records"
    )
