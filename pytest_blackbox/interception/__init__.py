"""Route the SDKs' model calls to a handler at the HTTP-client level: a respx mocker patches the clients,
and the innermost interceptor decides on each request itself (respx routes a copy only behind a router
registered after it).

This package knows nothing about cassettes or providers: the caller names the model routes, hands
each model request to ``on_model`` and either answers with a :class:`Reply` or forwards the original
request upstream (:class:`Forward`). Modules: ``handler`` (what the handler sees and returns),
``router`` (the :class:`Interceptor`), ``mocker`` (the respx mocker), ``transport`` and ``tee`` (how
requests pass and streams are copied), ``decoding`` (content-encodings), ``aiohttp_adapter`` (the
same routes for what an ``aiohttp.ClientSession`` sends), ``botocore_adapter`` (the same for what
boto3 sends, through botocore's ``before-send`` event), ``lm15_adapter`` (the same for what DSPy's
native engine sends over its own transports). See docs/engine.md#model-calls.
"""

from __future__ import annotations

from .decoding import decode_body
from .handler import (
    Forward,
    ModelHandler,
    ModelRequest,
    OtherHandler,
    OtherRequest,
    Reply,
    UpstreamResponse,
)
from .mocker import InterceptorMocker
from .router import Interceptor

__all__ = [
    "Forward",
    "Interceptor",
    "InterceptorMocker",
    "ModelHandler",
    "ModelRequest",
    "OtherHandler",
    "OtherRequest",
    "Reply",
    "UpstreamResponse",
    "decode_body",
]
