"""The shared normalization vectors (``normalization-vectors.json``), plus the pieces they lean on.

Vectors sharing an ``idSession`` share one call-id map and run in file order, so each such vector
replays the earlier vectors of its session on a fresh map before its own check.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from pytest_blackbox import providers
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import (
    CallIds,
    Provider,
    anthropic,
    openai_chat,
    openai_responses,
    provider_for_path,
)
from tests import vector_json

PROVIDERS: dict[str, Provider] = {"anthropic": anthropic, "openai": openai_chat}
VECTORS: list[dict[str, Any]] = vector_json("normalization-vectors.json")["vectors"]
_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_REPLAY_ID = re.compile(r"blackbox-replay-(\d+)")
#: Vectors of the original Blackbox (arda-ulas/blackbox) that this project deliberately departs from:
#: it records and replays streams, so a streaming request normalizes like the same plain request.
STREAMING_NOW_SUPPORTED = frozenset({"anthropic-reject-stream", "openai-reject-stream"})
#: It records images as media parts (docs/cassette-format.md#media-parts) where the original refuses them.
MEDIA_NOW_SUPPORTED = frozenset({"openai-reject-image-part"})
#: It records provider-defined tools (``builtin`` with their ``settings``), so a server tool is recorded.
SERVER_TOOLS_NOW_SUPPORTED = frozenset({"anthropic-reject-server-tool"})
#: It records several choices per request (``params.choiceCount``, the others in ``choices``).
CHOICES_NOW_SUPPORTED = frozenset({"openai-reject-n-2"})


def _at(body: Any, path: str) -> Any:
    """The value at a dotted path such as ``choices[0].message.content``."""
    value = body
    for key, index in _PATH_TOKEN.findall(path):
        value = value[int(index)] if index else value[key]
    return value


def _earlier_in_session(vector: dict[str, Any]) -> list[dict[str, Any]]:
    session = vector.get("idSession")
    if session is None:
        return []
    position = VECTORS.index(vector)
    return [earlier for earlier in VECTORS[:position] if earlier.get("idSession") == session]


def _check(vector: dict[str, Any], ids: CallIds) -> None:
    provider = PROVIDERS[vector["provider"]]
    direction, given, expected = vector["direction"], vector["input"], vector["expected"]
    if direction == "response_to_model_output":
        assert provider.normalize_response(given, ids) == expected
    elif direction == "request_to_model_input":
        for provider_id, call_id in vector.get("idMap", {}).items():
            assert ids.get(provider_id) == call_id
        assert provider.normalize_request(given, ids) == expected
    elif direction == "model_output_round_trip":
        _check_round_trip(provider, given, expected)
    elif vector["name"] in STREAMING_NOW_SUPPORTED:
        assert given["stream"] is True
        plain = {key: value for key, value in given.items() if key != "stream"}
        assert provider.normalize_request(given, ids) == provider.normalize_request(plain, CallIds())
    elif vector["name"] in MEDIA_NOW_SUPPORTED:
        [message] = provider.normalize_request(given, ids)["messages"]
        assert message["content"] == [{"type": "media", "kind": "image", "url": "x"}]
    elif vector["name"] in SERVER_TOOLS_NOW_SUPPORTED:
        [tool] = provider.normalize_request(given, ids)["tools"]
        assert tool == {"name": "web_search", "description": "", "builtin": "web_search_20250305"}
    elif vector["name"] in CHOICES_NOW_SUPPORTED:
        assert provider.normalize_request(given, ids)["params"] == {"choiceCount": 2}
    else:
        assert direction == "request_rejected"
        with pytest.raises(BlackboxUnsupportedError) as caught:
            provider.normalize_request(given, ids)
        error = expected["error"]
        assert type(caught.value).__name__ == error.get("class", "BlackboxUnsupportedError")
        assert re.search(error.get("messageMatches", ""), str(caught.value))
        assert "\n" not in str(caught.value)


def _check_round_trip(provider: Provider, given: dict[str, Any], expected: dict[str, Any]) -> None:
    replay_id = _REPLAY_ID.fullmatch(given["responseId"])
    body = provider.synthesize_response(
        given["modelOutput"],
        output_index=int(replay_id.group(1)) if replay_id else 0,
        model=given["model"],
        timestamp=given.get("created", 0) * 1000,
    )
    if replay_id:
        assert body["id"] == given["responseId"]
    if "created" in given:
        assert body["created"] == given["created"]
    assert body["model"] == given["model"]
    for path, value in expected["synthesized"].items():
        assert _at(body, path) == value
    back = provider.normalize_response(body, CallIds())
    assert back == expected.get("normalizesBackTo", given["modelOutput"])


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["name"] for vector in VECTORS])
def test_normalization_vector(vector: dict[str, Any]) -> None:
    ids = CallIds()
    for earlier in _earlier_in_session(vector):
        _check(earlier, ids)
    _check(vector, ids)


def test_the_vectors_cover_every_direction_and_provider() -> None:
    assert {vector["direction"] for vector in VECTORS} == {
        "response_to_model_output",
        "request_to_model_input",
        "model_output_round_trip",
        "request_rejected",
    }
    assert {vector["provider"] for vector in VECTORS} == {"anthropic", "openai"}
    assert len(VECTORS) == 20


# -- the provider registry ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/messages", anthropic),
        ("/proxy/anthropic/v1/messages", anthropic),
        ("/v1/messages?beta=true", anthropic),
        ("/v1/chat/completions", openai_chat),
        ("/openai/deployments/gpt/chat/completions", openai_chat),
        ("/v1/responses", openai_responses),
        ("/openai/v1/responses?api-version=preview", openai_responses),
        ("/v1/responses/resp_123", None),
        ("/v1/responses/input_tokens", None),
        ("/v1/messages/count_tokens", None),
        ("/v1/models", None),
        ("/", None),
    ],
)
def test_provider_for_path_chooses_by_path_suffix(path: str, expected: Provider | None) -> None:
    assert provider_for_path(path) is expected


def test_provider_names() -> None:
    assert (anthropic.NAME, openai_chat.NAME, openai_responses.NAME) == (
        "anthropic",
        "openai_chat",
        "openai_responses",
    )


def test_every_route_is_answered_by_the_module_of_its_name() -> None:
    assert list(providers.PROVIDERS) == list(providers.ROUTES)
    assert all(name == module.NAME for name, module in providers.PROVIDERS.items())


#: Run in a fresh interpreter: which protocol modules answering an Anthropic path imports.
_FIRST_CALL = """
import sys
from pytest_blackbox import providers
assert providers.provider_for_path("/v1/messages").NAME == "anthropic"
print(" ".join(sorted(name for name in sys.modules if name.startswith("pytest_blackbox.providers."))))
"""


def test_a_protocol_module_is_imported_by_its_first_call_only() -> None:
    """A suite that replays Anthropic calls never loads the other protocols' code."""
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "pytest_blackbox.providers.anthropic" in loaded
    others = [name for name in providers.ROUTES if name != "anthropic"]
    assert [name for name in loaded if name.rpartition(".")[2] in others or ".gemini." in name] == []


def test_the_superseded_vectors_are_the_stream_refusals() -> None:
    names = {vector["name"] for vector in VECTORS if vector["direction"] == "request_rejected"}
    assert names >= STREAMING_NOW_SUPPORTED | MEDIA_NOW_SUPPORTED | SERVER_TOOLS_NOW_SUPPORTED


# -- CallIds -----------------------------------------------------------------------------------


def test_call_ids_are_assigned_in_first_seen_order_and_stay_stable() -> None:
    ids = CallIds()
    assert ids.neutral("toolu_B") == "call-0"
    assert ids.neutral("toolu_A") == "call-1"
    assert ids.neutral("toolu_B") == "call-0"
    assert ids.get("toolu_A") == "call-1"
    assert ids.get("toolu_C") is None
    assert ids.peek() == "call-2"


def test_resolve_gives_the_first_name_seen_or_unknown() -> None:
    ids = CallIds()
    ids.neutral("toolu_A", "weather")
    ids.neutral("toolu_A", "renamed")
    assert ids.resolve("toolu_A") == ("call-0", "weather")
    assert ids.resolve("toolu_never_called") == ("call-1", "unknown")


def test_register_identity_maps_replayed_ids_to_themselves_and_moves_the_counter() -> None:
    ids = CallIds()
    ids.register_identity(iter(["call-0", "call-3"]))
    assert ids.neutral("call-3") == "call-3"
    assert ids.neutral("call-0") == "call-0"
    assert ids.neutral("toolu_new") == "call-4"


def test_register_identity_never_moves_the_counter_back() -> None:
    ids = CallIds()
    for provider_id in ("a", "b", "c"):
        ids.neutral(provider_id)
    ids.register_identity(["call-1"])
    assert ids.peek() == "call-3"
    assert ids.neutral("call-1") == "call-1"


def test_fresh_hands_out_unused_ids_that_map_to_themselves() -> None:
    ids = CallIds()
    ids.neutral("toolu_A")
    assert ids.fresh() == "call-1"
    assert ids.neutral("call-1") == "call-1"
    assert ids.neutral("toolu_B") == "call-2"


def test_seed_past_moves_the_counter_without_mapping() -> None:
    ids = CallIds()
    ids.seed_past(["call-2", "call-10", "not-a-call-id", "call-x"])
    assert ids.peek() == "call-11"
    assert ids.get("call-2") is None
    assert ids.neutral("toolu_A") == "call-11"
