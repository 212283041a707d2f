"""One intercepted model call as the engine handles it: its provider, URL path and parsed JSON body.

It is the one place the engine turns wire bytes into what a provider reads, and a provider's answers
(recorded outputs, refusals) back into wire replies. See docs/providers.md.
"""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from .. import providers
from ..errors import BlackboxUnsupportedError, BlackboxUsageError, OfflineRequestError, UnreplayableWarning
from ..interception import ModelRequest, OtherRequest, Reply, UpstreamResponse
from ..providers.fields import TABLES, unknown_in_request, unknown_in_response, unknown_in_stream
from ..providers.sse import StreamCutShort
from ..trace.media import without_bytes
from ..trace.model import ModelInput, TraceStep
from ..vocabulary import Media
from .bodies import BodyParser
from .fields import FieldPolicy
from .hosts import host_allowed, is_local
from .keys import (
    AWS_CREDENTIAL_VARIABLES,
    HEADER_KEY_VARIABLES,
    OFFLINE_PLACEHOLDER_KEY,
    PROVIDER_KEY_VARIABLES,
    KnownKeys,
)

__all__ = [
    "WireCall",
    "offline_error",
    "parse_json_body",
    "refusal",
    "refuse_placeholder",
    "unseen_call_error",
    "warn_unreplayable",
]


def parse_json_body(
    raw: bytes, what: str, parser: BodyParser | None = None, history: str | None = None
) -> Any:
    """A request or response body as JSON; anything else cannot be recorded.

    ``parser`` (a session's) parses a request's ``history`` field in proportion to what is new.
    """
    try:
        text = raw.decode("utf-8")
        return json.loads(text) if parser is None else parser.parse(text, history)
    except (UnicodeDecodeError, ValueError):
        raise BlackboxUnsupportedError(
            f"{what} is not JSON; only JSON model calls and event streams can be recorded"
        ) from None


#: Plain replies by what builds them (the recorded output, kept alive with them, by identity).
_PLAIN_BODIES: OrderedDict[tuple[str, int, int, int | float, str | None], tuple[Any, bytes]] = OrderedDict()
_PLAIN_BODIES_MAX: Final = 4096


@dataclass(frozen=True)
class WireCall:
    """A model call: the provider its route names, the URL path (no query) and the request body."""

    provider: providers.Provider
    path: str
    body: Any

    @staticmethod
    def provider_of(request: ModelRequest) -> providers.Provider:
        """The provider answering this call, on the route the interception layer matched."""
        return providers.provider_for_call(request.route, urlsplit(request.url).path)

    @classmethod
    def of(cls, request: ModelRequest, parser: BodyParser | None = None) -> WireCall:
        """The call, its body parsed (a body that is not JSON is refused), by the session's ``parser``
        if given: a conversation's history items repeated from a recent request are not parsed again."""
        path = urlsplit(request.url).path
        provider = providers.provider_for_call(request.route, path)
        body = parse_json_body(request.body, "the request body", parser, provider.HISTORY)
        return cls(provider, path, body)

    def normalize(
        self, ids: providers.CallIds, fields: FieldPolicy, media: Media = "digest", *, recording: bool = True
    ) -> ModelInput:
        """The ``model_input`` payload of this request; with ``media="digest"`` its media parts keep
        their digest and not their bytes (what a digest cassette holds and every replay compares).

        A top-level field its protocol neither compares nor drops on purpose is refused after the
        protocol's own refusals (which say more), unless ``fields`` accepts losing it.
        """
        model_input = self.provider.normalize_request(self.body, ids, path=self.path)
        table = self._table()
        fields.check(unknown_in_request(table, self.body) if table else [], "request", recording=recording)
        return model_input if media == "inline" else without_bytes(model_input)

    def reply(self, model_input: ModelInput, output: TraceStep) -> Reply:
        """The answer from a recorded or scripted model output, plain or streamed as the request asks.

        The model name is the one the request named, as normalized (wherever the protocol carries it).
        """
        where: dict[str, Any] = {
            "output_index": output["index"],
            "model": model_input.get("model"),
            "timestamp": output["timestamp"],
        }
        if self.provider.is_stream_request(self.body, path=self.path):
            events = self.provider.synthesize_stream(output["payload"], request_body=self.body, **where)
            return Reply(
                status=200, body=b"".join(events), headers=list(providers.stream_headers(self.provider))
            )
        return Reply(status=200, body=self._plain_body(output["payload"], where))

    def _plain_body(self, payload: Any, where: dict[str, Any]) -> bytes:
        """The bytes of a plain reply, built once per recorded output: a protocol's response is a
        function of the output and ``where`` alone (``providers.ReplayArgs``), and a cassette's
        trace is shared by the runs that replay it and never edited, so every run gets the same
        bytes."""
        model = where["model"]
        key = (self.provider.NAME, id(payload), where["output_index"], where["timestamp"], model)
        known = _PLAIN_BODIES.get(key) if model is None or isinstance(model, str) else None
        if known is not None and known[0] is payload:
            return known[1]
        synthesized = self.provider.synthesize_response(payload, **where)
        body = json.dumps(synthesized, ensure_ascii=False).encode("utf-8")
        if model is None or isinstance(model, str):
            _PLAIN_BODIES[key] = (payload, body)
            if len(_PLAIN_BODIES) > _PLAIN_BODIES_MAX:
                _PLAIN_BODIES.popitem(last=False)
        return body

    def whole_answer(self, response: UpstreamResponse) -> Any:
        """The response body to normalize, or ``None`` for a call that did not succeed as a whole.

        Failed calls are not recorded (the agent got the provider's error): an error status, and an
        event stream that reported an error or was cut short. A streamed answer is added up into the
        body the provider would have sent without streaming. A stream the agent closed before its
        end raises ``StreamCutShort``: the agent read part of an answer no replay can give it, unless
        only the stream's closing marker was left unread (then the answer it read is whole).
        """
        if not 200 <= response.status < 300:
            return None
        if not _streamed(response):
            return parse_json_body(response.body, "the response body") if response.complete else None
        try:
            return self.provider.collect_stream(response.body)
        except StreamCutShort as cut:
            if response.complete:
                return None  # the upstream cut it: a failed call, which the SDK or the agent may retry
            if cut.whole is not None:
                return cut.whole
            raise
        except BlackboxUnsupportedError:
            return None

    def unknown_fields(self, response: UpstreamResponse, answer: Any) -> list[str]:
        """The paths of the fields of a whole answer (:meth:`whole_answer`) its protocol does not know:
        of the JSON body, or of every event of a stream."""
        table = self._table()
        if table is None:
            return []
        if _streamed(response) and not _event_stream(response):
            return unknown_in_stream(table, response.body, answer)
        return unknown_in_response(table, answer)

    def _table(self) -> str | None:
        """The field table of this call's protocol; ``None`` for Converse, whose module refuses, by
        name, the request and response fields it does not record."""
        table = _FIELD_TABLES.get(self.provider.NAME, self.provider.NAME)
        return table if table in TABLES else None


#: Roads of a protocol whose fields are that protocol's: InvokeModel's Anthropic bodies. An AWS event
#: stream is checked through the answer it adds up to (its frames are not SSE).
_FIELD_TABLES: Final = {"bedrock": "anthropic"}


def _event_stream(response: UpstreamResponse) -> bool:
    content_type = next((value for name, value in response.headers if name == "content-type"), "")
    return content_type.strip().lower().startswith("application/vnd.amazon.eventstream")


def _streamed(response: UpstreamResponse) -> bool:
    content_type = next((value for name, value in response.headers if name == "content-type"), "")
    return providers.is_stream_type(content_type)


def _shown(request: OtherRequest, mask: Callable[[str], str]) -> str:
    """``METHOD scheme://host:port/path``: no credentials, no query string, keys masked."""
    url = urlsplit(request.url)
    port = f":{url.port}" if url.port else ""
    host = url.hostname or ""
    return f"{request.method} {mask(f'{url.scheme}://{host}{port}{url.path}')}"


def reaches_allowed_host(request: OtherRequest, allowed: tuple[str, ...]) -> bool:
    """Whether a request goes to loopback or to a host the run allows (a replay lets it through)."""
    host = urlsplit(request.url).hostname or ""
    return is_local(host) or host_allowed(allowed, host)


def offline_error(mode: str, request: OtherRequest, mask: Callable[[str], str]) -> OfflineRequestError:
    """The refusal of a request that is not a model call, in a run that must not reach the network."""
    return OfflineRequestError(
        f"{mode} mode answers only model calls (messages.create / chat.completions.create); "
        f"a request to {_shown(request, mask)} would need the network. Make it inside a wrapped tool "
        "(a replay returns its recorded result), or allow the host (allowed_hosts)"
    )


def side_call_error(
    mode: str, request: OtherRequest, mask: Callable[[str], str]
) -> BlackboxUnsupportedError | None:
    """The refusal of an SDK side call (``messages.count_tokens``), or ``None`` when it is not one.

    A side call reaches the provider's API but is not a model call, so a cassette cannot hold it: a
    recording refuses it rather than send it unrecorded, and a replay refuses it rather than reach a
    server (even on loopback). Inside a wrapped tool it is the tool's business: recorded as its result.
    """
    method = providers.side_call_of(urlsplit(request.url).path)
    if method is None:
        return None
    return BlackboxUnsupportedError(
        f"{mode} mode: {_shown(request, mask)} is the SDK side call {method}, not a model call: a cassette "
        "cannot hold it, so it is never sent unrecorded nor answered in a replay. Make it inside a "
        "wrapped tool (blackbox.tool): the recording keeps its result and a replay returns it without "
        "calling the provider"
    )


def unseen_call_error(
    mode: str, request: OtherRequest, mask: Callable[[str], str]
) -> BlackboxUnsupportedError | None:
    """The refusal of a request to a model API that no protocol records, or ``None`` when it is not one.

    Sent unrecorded, the model call would be missing from a cassette that still looks complete (and a
    replay pointed at loopback could send it), so it is refused in every mode; a wrapped tool may make it.
    """
    api = providers.model_api_of(request.method, request.url)
    if api is None:
        return None
    return BlackboxUnsupportedError(
        f"{mode} mode: {_shown(request, mask)} is a call to {api}, which Blackbox does not record, so "
        "it was not sent (a cassette without it would look complete). Send the model call through a "
        "client Blackbox records (docs/providers.md), or make it inside a wrapped tool (blackbox.tool)"
    )


def warn_unreplayable(request: OtherRequest, mask: Callable[[str], str]) -> None:
    """A request that is not a model call, sent while recording outside every wrapped tool: a replay
    will refuse it, so say so now (once per request line; a warnings filter silences it)."""
    warnings.warn(
        f"record mode: {_shown(request, mask)} is not a model call, so a replay cannot answer it (it "
        "would need the network, and is refused there). Make it inside a wrapped tool (a replay returns "
        "the tool's recorded result without running it), or skip it when the session replays.",
        UnreplayableWarning,
        stacklevel=2,
    )


def refuse_placeholder(request: ModelRequest, provider: str, keys: KnownKeys) -> None:
    """A call about to be sent with the offline placeholder key is refused before it goes out.

    The placeholder is set when no key is, so SDK clients can start for a replay; a recording needs
    the real key, and the provider would only answer 401. A bearer token to Vertex AI comes from
    Google's credentials (the placeholder credentials file of an offline run), so those are asked for.
    """
    found = keys.placeholder_in(request.headers, request.url)
    if found is None:
        return
    where, carrier = found
    if carrier == "authorization" and providers.is_vertex_path(urlsplit(request.url).path):
        wanted = f"provide {providers.VERTEX_CREDENTIALS_ADVICE}"
    else:
        variable = HEADER_KEY_VARIABLES.get(carrier) or PROVIDER_KEY_VARIABLES.get(
            provider, "the provider's API key variable"
        )
        if variable in AWS_CREDENTIAL_VARIABLES:
            raise BlackboxUsageError(
                "recording needs real AWS credentials: this request is signed with the offline placeholder "
                f"credentials ({OFFLINE_PLACEHOLDER_KEY}), so it was not sent; set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) to record (the placeholders only let SDK clients "
                "start for a replay)"
            )
        wanted = f"set {variable} to your API key"
    raise BlackboxUsageError(
        f"recording needs a real key: this request carries the offline placeholder key "
        f"({OFFLINE_PLACEHOLDER_KEY}) in {where}, so it was not sent; {wanted} to record (the "
        "placeholder only lets SDK clients start for a replay)"
    )


def refusal(provider: providers.Provider, text: str) -> Reply:
    """A ``[blackbox]`` error in the provider's own shape, with a status the SDKs do not retry."""
    body = provider.error_body(text)
    return Reply(
        status=400,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
        headers=[("content-type", "application/json"), ("x-should-retry", "false")],
    )
