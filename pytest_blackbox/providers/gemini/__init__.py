"""Gemini API (``POST …/models/{model}:generateContent`` and ``:streamGenerateContent``) ↔ neutral steps.

Gemini names the model, and whether to stream, in the URL path rather than the body, so the session
gets one :class:`GeminiCall` per request (from :func:`for_path`): this module's functions bound
to that path. A request becomes a ``model_input``: ``systemInstruction`` the system prompt,
``contents`` neutral messages (consecutive contents of one role are one turn, as a streamed answer
comes back in pieces), function declarations neutral tools, and the behaviour controls ``params``. A
response becomes a ``model_output``. Thought parts are dropped and thought signatures ignored in
both directions: a replay cannot return them.

Function calls may come without an ``id`` (Gemini 2.x). Each call of a response is therefore also
bound to its place in the conversation (the request's messages and its position in the turn), and a
history call without an ``id`` is found by the messages before it, which are that request's. A
replay hands every call its ``call-N`` as the ``id``; function responses without one (automatic
function calling sends none) answer the calls of the model turn before them by name, in order.

This package is the protocol's one face (its name and the verbs every provider module has);
the work is split by role: ``request`` (requests → ``model_input``), ``response`` (responses and
streams → ``model_output``), ``synthesis`` (what a replay sends), and ``parts`` (the contents and
parts both directions read).

See docs/providers.md#google-gemini-google-genai for the field-by-field table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ...trace.model import ModelInput, ModelOutput
from ..choices import choice_outputs
from ..common import CallIds, ReplayArgs
from ..replayed import read_output
from . import request
from .parts import CODE_TOOL, CodeIds, Conversation, bind_calls
from .response import collect_chunks
from .response import collect_stream as collect_stream
from .response import normalize_response as normalize_response
from .synthesis import error_body as error_body
from .synthesis import synthesize_response as synthesize_response
from .synthesis import synthesize_stream as synthesize_stream

if TYPE_CHECKING:
    from typing_extensions import Unpack


NAME: Final = "gemini"

#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "contents"
#: The same path, read: the model resource and the method.
PATH: Final = re.compile(r"/((?:models|tunedModels)/[^/:]+):(generateContent|streamGenerateContent)$")


# -- the call a path names -----------------------------------------------------------------------


def for_path(path: str) -> GeminiCall | None:
    """The Gemini call a request path names, or ``None`` when it is not a generateContent path.

    The provider registry asks for it once per call: the model and streaming come from the path, and
    the call keeps its request's conversation for its answer.
    """
    match = PATH.search(path)
    if match is None:
        return None
    resource, method = match.groups()
    return GeminiCall(
        model=resource.removeprefix("models/"),
        stream=method == "streamGenerateContent",
    )


class GeminiCall:
    """One generateContent call as a provider: the module's functions bound to its path and request.

    It keeps what its request said for its answer: the model and streaming from the path, and the
    conversation the request carries, to which the answer's function calls are bound (recorded by
    :meth:`normalize_response`, replayed by the ``synthesize_*`` methods) so that a later request's
    history finds them, with or without ids.
    """

    NAME: ClassVar[str] = NAME
    HISTORY: ClassVar[str] = HISTORY

    def __init__(self, *, model: str, stream: bool) -> None:
        self.model = model
        self.stream = stream
        self._ids: CallIds | None = None
        self._conversation: Conversation | None = None
        self._parsed = False  # whether the request asks for structured output google-genai parses
        self._whole_text = False  # whether the streamed answer's text came in one chunk

    def normalize_request(self, body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
        payload, self._conversation = request.normalize(body, ids, self.model)
        self._ids = ids
        self._parsed = request.parses_text(payload)
        return payload

    def normalize_response(self, body: Any, ids: CallIds) -> ModelOutput:
        return normalize_response(body, ids, self._conversation, whole_text=self._whole_text)

    def collect_stream(self, body: bytes) -> dict[str, Any]:
        """The stream's response; whether its text came whole matters only where google-genai parses
        it, so other streams record as they always did."""
        collected, whole = collect_chunks(body)
        self._whole_text = whole and self._parsed
        return collected

    def synthesize_response(self, output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
        """The response for a recorded output; ``where``'s model is unused (the path names it)."""
        self._bind_replayed(output)
        where["model"] = self.model
        return synthesize_response(output, **where)

    def synthesize_stream(self, output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
        self._bind_replayed(output)
        where["model"] = self.model
        return synthesize_stream(output, **where)

    def error_body(self, message: str) -> dict[str, Any]:
        return error_body(message)

    def is_stream_request(self, body: Any, *, path: str = "") -> bool:
        """Streaming is chosen by the path (``:streamGenerateContent``), never by the body."""
        return self.stream

    def _bind_replayed(self, output: Any) -> None:
        """Bind a replayed answer's calls and code execution to their place, as recording did, for
        id-less histories."""
        if self._ids is None or self._conversation is None:
            return
        recorded = read_output(output)
        bind_calls(self._ids, self._conversation, choice_outputs(output))
        if "codeExecutionId" not in recorded.omitted:
            return  # the replay sends the ids, which the history then carries
        code = CodeIds(self._ids, self._conversation, answer=True)
        for part in recorded.parts:
            if part.get("toolName") == CODE_TOOL and part["type"] == "server_tool_use":
                code.use(None, part["toolCallId"])
            elif part.get("toolName") == CODE_TOOL and part["type"] == "server_tool_result":
                code.result(None, part["toolCallId"])


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a generateContent body; refusals are raised before sending.

    The model comes from the URL ``path`` (the body does not name it); a call object from
    :func:`for_path` also keeps the conversation its answer's calls are bound to.
    """
    call = for_path(path)
    payload, _ = request.normalize(body, ids, call.model if call is not None else None)
    return payload


def is_stream_request(body: Any, *, path: str = "") -> bool:
    """Streaming is chosen by the path (``:streamGenerateContent``), never by the body."""
    call = for_path(path)
    return call is not None and call.stream
