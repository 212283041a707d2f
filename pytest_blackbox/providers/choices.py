"""Several choices per request (Chat Completions ``n > 1``, Gemini ``candidateCount > 1``).

The first choice is the model output, as with one; the others are its ``choices`` list, each a model
output of its own (without the response-level ``moderation``), written only when there are several.
A protocol module answers one choice; these functions split a response (or a stream) of several into
one-choice ones for it, and join what it makes of each back into one, the choices in order and
indexed by their place. See docs/cassette-format.md#stops-choices-logprobs-and-moderation.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from ..trace.model import ModelOutput
from .common import CallIds, malformed, unsupported
from .sse import encode_event, event_object, parse_events

__all__ = [
    "CHOICES",
    "INDEX_ADVICE",
    "choice_outputs",
    "collected_per_choice",
    "join_choices",
    "join_streams",
    "normalized_per_choice",
    "split_choices",
    "split_stream",
    "synthesized_per_choice",
    "with_choices",
]

#: Why a stream whose one choice (or candidate) is not numbered 0 is refused.
INDEX_ADVICE: Final = "a replay numbers the choices from 0, as the API does"
#: The model output field holding the choices after the first.
CHOICES: Final = "choices"
#: Response-level fields a choice after the first does not repeat.
_RESPONSE_LEVEL: Final = ("moderation", CHOICES)


def with_choices(outputs: list[ModelOutput]) -> ModelOutput:
    """The first choice's output, with the others as its ``choices`` when there are several."""
    first = outputs[0]
    if len(outputs) > 1 and first["type"] != "tool_call":  # the protocols write tool_calls
        extra = [{k: v for k, v in output.items() if k not in _RESPONSE_LEVEL} for output in outputs[1:]]
        first["choices"] = extra
    return first


def choice_outputs(output: Any) -> list[Any]:
    """A recorded output's choices in order: the output itself (without ``choices``), then the others."""
    if not isinstance(output, dict) or output.get(CHOICES) is None:
        return [output]
    extra = output[CHOICES]
    if not isinstance(extra, list) or not extra:
        unsupported(
            "a recorded model_output whose choices is not a non-empty list",
            "fix the cassette, or record it again",
            CHOICES,
        )
    return [{k: v for k, v in output.items() if k != CHOICES}, *extra]


def split_choices(response: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The one-choice responses a response of several choices (its ``key`` list) stands for."""
    return [{**response, key: [_indexed(choice, 0)]} for choice in response[key]]


def join_choices(responses: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The response one-choice responses make together: the first one's fields, the choices in order."""
    return {**responses[0], key: [_indexed(one[key][0], index) for index, one in enumerate(responses)]}


def _indexed(choice: Any, index: int) -> Any:
    """``choice`` numbered ``index`` when it carries a number (Gemini may leave ``index`` out)."""
    return {**choice, "index": index} if isinstance(choice, dict) and "index" in choice else choice


def split_stream(body: bytes, key: str) -> list[bytes] | None:
    """A stream of several choices as one stream per choice, or ``None`` when it holds one.

    Each choice's chunks keep their order, numbered 0; chunks without choices (usage, moderation,
    an error, the end marker) go to every one.
    """
    events = parse_events(body)
    chunks = [event_object(e, n) if e.data.lstrip().startswith("{") else None for n, e in enumerate(events)]
    indexes: list[int] = []
    for chunk in chunks:
        for choice in (chunk or {}).get(key) or []:
            index = choice.get("index", 0) if isinstance(choice, dict) else 0
            if not isinstance(index, int) or isinstance(index, bool):
                malformed(f"{key}[].index", "an integer", "response")
            indexes += [] if index in indexes else [index]
    if len(indexes) < 2:
        return None
    streams = []
    for wanted in sorted(indexes):
        parts = []
        for event, chunk in zip(events, chunks, strict=True):
            if chunk is None or not chunk.get(key):
                parts.append(encode_event(event.event, event.data if chunk is None else chunk))
                continue
            mine = [_indexed(c, 0) for c in chunk[key] if isinstance(c, dict) and c.get("index", 0) == wanted]
            if mine:
                parts.append(encode_event(event.event, {**chunk, key: mine}))
        streams.append(b"".join(parts))
    return streams


def join_streams(streams: list[list[bytes]], key: str) -> list[bytes]:
    """One stream of several choices from a stream for each: each choice's chunks in turn, numbered
    by its place; the first stream's chunks without choices (usage, moderation, the end marker) last."""
    joined: list[bytes] = []
    tail: list[bytes] = []
    for number, stream in enumerate(streams):
        for event in parse_events(b"".join(stream)):
            chunk = json.loads(event.data) if event.data.startswith("{") else None
            if chunk is not None and chunk.get(key):
                chunk[key] = [_indexed(choice, number) for choice in chunk[key]]
                joined.append(encode_event(event.event, chunk))
            elif number == 0:
                tail.append(encode_event(event.event, event.data if chunk is None else chunk))
    return joined + tail


def counted(request: dict[str, Any]) -> dict[str, Any]:
    """A Chat request as recorded: ``n`` (``params.choiceCount``) left out when it is 1, as a
    cassette of one choice has it."""
    return {k: v for k, v in request.items() if k != "n"} if request.get("n") == 1 else request


def join_chat_choices(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """The Chat completion of several choices that one-choice completions make together."""
    return join_choices(responses, "choices")


def join_chat_streams(streams: list[list[bytes]]) -> list[bytes]:
    """The Chat chunk stream of several choices that one-choice streams make together."""
    return join_streams(streams, "choices")


def join_gemini_choices(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """The Gemini response of several candidates that one-candidate responses make together."""
    return join_choices(responses, "candidates")


def join_gemini_streams(streams: list[list[bytes]]) -> list[bytes]:
    """The Gemini stream of several candidates that one-candidate streams make together."""
    return join_streams(streams, "candidates")


Normalize = Callable[[Any, CallIds], ModelOutput]
Collect = Callable[[bytes], dict[str, Any]]
P = ParamSpec("P")
R = TypeVar("R")
Synthesize = Callable[Concatenate[Any, P], R]


def normalized_per_choice(key: str) -> Callable[[Normalize], Normalize]:
    """A one-choice response normalizer made to take a response of several choices (``key``) too."""

    def wrap(normalize: Normalize) -> Normalize:
        def normalized(body: Any, ids: CallIds) -> ModelOutput:
            choices = body.get(key) if isinstance(body, dict) else None
            if not isinstance(choices, list) or len(choices) < 2:
                return normalize(body, ids)
            return with_choices([normalize(one, ids) for one in split_choices(body, key)])

        functools.update_wrapper(normalized, normalize)  # its name and docstring
        return normalized

    return wrap


def collected_per_choice(key: str) -> Callable[[Collect], Collect]:
    """A one-choice stream collector made to take a stream of several choices (``key``) too."""

    def wrap(collect: Collect) -> Collect:
        def collected(body: bytes) -> dict[str, Any]:
            streams = split_stream(body, key)
            if streams is None:
                return collect(body)
            return join_choices([collect(stream) for stream in streams], key)

        functools.update_wrapper(collected, collect)  # its name and docstring
        return collected

    return wrap


def synthesized_per_choice(
    join: Callable[[list[R]], R],
) -> Callable[[Synthesize[P, R]], Synthesize[P, R]]:
    """A one-choice replay (a response, or a stream) made to give back each recorded choice, joined."""

    def wrap(synthesize: Synthesize[P, R]) -> Synthesize[P, R]:
        def synthesized(output: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            outputs = choice_outputs(output)
            if len(outputs) < 2:
                return synthesize(output, *args, **kwargs)
            return join([synthesize(one, *args, **kwargs) for one in outputs])

        functools.update_wrapper(synthesized, synthesize)  # its name and docstring
        return synthesized

    return wrap
