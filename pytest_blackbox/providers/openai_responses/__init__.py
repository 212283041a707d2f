"""OpenAI Responses API (``POST …/responses``) ↔ neutral step payloads.

A request becomes a ``model_input`` as a Chat Completions request does: ``instructions`` and the
leading ``system`` / ``developer`` input items the system prompt; ``message`` items the messages; an
assistant message with the ``function_call`` items after it one assistant turn of tool calls;
consecutive ``function_call_output`` items one user turn of tool results; function tools neutral
tool definitions; the behaviour controls ``params``. Reasoning items are dropped, as thinking blocks
are: a replay cannot return them, so the history an agent sends back must normalize the same.

Conversation state kept by the provider (``previous_response_id``, ``conversation``) is compared as
the neutral ids it maps to (``providers.state``); item references, stored prompts and background
responses are refused: the cassette could not hold what they stand for. Provider-run built-in
tools' items become ``server_tool_use`` parts and ``output_text`` annotations citations
(``responses_content``).

This package is the protocol's one face (its name and the verbs every provider module has);
the work is split by role: ``request`` (requests → ``model_input``), ``response`` (responses →
``model_output``), ``synthesis`` (the response a replay returns) and ``stream`` (event streams, both
collected while recording and served by a replay).

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Final

from ..common import is_stream_request as is_stream_request
from ..openai_chat import error_body as error_body
from .request import normalize_request as normalize_request
from .response import normalize_response as normalize_response
from .stream import collect_stream as collect_stream
from .stream import synthesize_stream as synthesize_stream
from .synthesis import synthesize_response as synthesize_response

NAME: Final = "openai_responses"
#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "input"
