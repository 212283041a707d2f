"""Anthropic on Amazon Bedrock (``POST …/model/{id}/invoke`` and ``…/invoke-with-response-stream``).

A road of the Anthropic Messages protocol: the body is a Messages body without ``model`` and
``stream`` (the model is in the path, and so is whether to stream) and with ``anthropic_version``.
The model is read from the path and everything else is normalized by ``anthropic``, so a call
through ``AnthropicBedrock`` and one through boto3's ``invoke_model`` with the same body record the
same ``model_input``. ``anthropic_version`` and ``anthropic_beta`` are not compared, like the
``anthropic-version`` and ``anthropic-beta`` headers of the Messages API.

A streamed answer comes in the AWS event stream (``eventstream``): each ``chunk`` event carries one
Messages stream event, base64-encoded, in ``{"bytes": …}``. Only Anthropic bodies are recorded: a
body of another model family (Titan, Llama, Mistral, …) is refused naming the family, before
anything is sent. See docs/providers.md#anthropic-on-amazon-bedrock.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

from ..trace.canonical import js_stringify
from ..trace.model import ModelInput
from . import anthropic
from .common import CallIds, ReplayArgs, label, require_object, unsupported
from .eventstream import EVENT_STREAM_HEADERS, encode_message, read_events
from .sse import stream_problem

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME: Final = "bedrock"
HISTORY: Final = anthropic.HISTORY
#: How a replayed stream is served: the AWS event stream, not SSE.
STREAM_HEADERS: Final = EVENT_STREAM_HEADERS

_PATH: Final = re.compile(r"/model/(.+)/(?:invoke|invoke-with-response-stream|converse|converse-stream)$")
#: Request fields of the Bedrock envelope that are not compared (see the module docstring).
_ENVELOPE: Final = ("anthropic_version", "anthropic_beta")
#: Geographic prefixes of cross-region inference profiles (``us.anthropic.claude-…``).
_GEOGRAPHIES: Final = frozenset({"us", "eu", "apac", "jp", "au", "ca", "us-gov", "global"})


def model_of_path(path: str) -> str:
    """The model id a Bedrock path names, percent-decoding undone (``anthropic.claude-…-v1:0``)."""
    match = _PATH.search(path)
    return unquote(match.group(1)) if match is not None else "unknown"


def _family(model: str) -> str:
    """The model family of a Bedrock model id or ARN: ``anthropic``, ``amazon``, ``meta``, …"""
    name = model.rsplit("/", 1)[-1]
    parts = name.split(".")
    if len(parts) > 2 and parts[0] in _GEOGRAPHIES:
        parts = parts[1:]
    return parts[0] if len(parts) > 1 else name


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` of an InvokeModel body: an Anthropic Messages body, the model from the path.

    A body without ``anthropic_version`` is not Anthropic's: refused naming the model's family.
    """
    model = model_of_path(path)
    request = require_object(body, "the request body")
    if "anthropic_version" not in request:
        unsupported(
            f"an InvokeModel body for the {label(_family(model))} model family ({model})",
            "only Anthropic (Claude) bodies, with anthropic_version, can be recorded through InvokeModel; "
            "use the Converse API (converse / converse_stream) for other families",
        )
    messages = {key: value for key, value in request.items() if key not in _ENVELOPE}
    return anthropic.normalize_request({**messages, "model": model}, ids)


normalize_response = anthropic.normalize_response
synthesize_response = anthropic.synthesize_response


def is_stream_request(body: Any, *, path: str = "") -> bool:
    """Whether the path is the streaming twin: Bedrock asks for a stream by path, not in the body."""
    return path.endswith("/invoke-with-response-stream")


def collect_stream(body: bytes) -> dict[str, Any]:
    """The Messages response a complete Bedrock event stream adds up to.

    An exception message, or a stream that ends before ``message_stop``, is refused.
    """
    return anthropic.collect_events(
        (position, _chunk(payload, position))
        for position, (kind, payload) in enumerate(read_events(body))
        if kind == "chunk"
    )


def _chunk(payload: dict[str, Any], position: int) -> dict[str, Any]:
    """The Messages stream event a ``chunk`` carries in ``{"bytes": base64(JSON)}``."""
    try:
        event = json.loads(base64.b64decode(str(payload.get("bytes", "")), validate=True))
    except (binascii.Error, ValueError):
        stream_problem(f"has a chunk whose bytes are not base64-encoded JSON (message {position})")
    if not isinstance(event, dict):
        stream_problem(f"has a chunk that is not a JSON object (message {position})")
    return event


def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The Bedrock event stream a replay serves: the Messages stream events, each a ``chunk``."""
    events = anthropic.stream_events(output, **where)
    return [
        encode_message("chunk", {"bytes": base64.b64encode(js_stringify(event).encode("utf-8")).decode()})
        for event in events
    ]


def error_body(message: str) -> dict[str, Any]:
    """Bedrock's error shape (``ValidationException``), which both SDKs raise without retrying."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"message": text, "__type": "ValidationException"}
