"""A replay opens zero sockets, and nothing in a cassette can make it reach the network.

Every test here blocks the network the way a program would reach it (``socket.connect``,
``connect_ex``, ``socket.create_connection``, name resolution, and asyncio's ``create_connection``,
``sock_connect`` and ``getaddrinfo``) and counts the attempts. Replays of sync and async agents of
both SDKs, over every HTTP client the SDKs use, of the ``examples/weather`` suite under pytest, and of
cassettes whose content is hostile (URLs, provider base URLs, provider-style ids, huge values) must
make none. A request the agent sends itself is refused with a message that names it without its
credentials or query string.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  (imported once here: in-process inner pytest runs would import it again)
import httpx
import httpx2
import pytest

import pytest_blackbox.plugin.testrun  # noqa: F401  (the same, for the session, respx and the providers)
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import OfflineRequestError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace, save_trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import QUIET
from tests.agents.lookup import Lookup, record, run_agent
from tests.conftest import NetworkGuard, NetworkUsed

from .conftest import ANTHROPIC_KEY, SDKS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather"


def test_the_guard_sees_every_way_to_connect(network_guard: NetworkGuard) -> None:
    """Without this, a guard that missed a path would make every test below pass for nothing."""
    network_guard.block()
    with pytest.raises(NetworkUsed):
        httpx.get("http://127.0.0.1:9/")
    with pytest.raises(NetworkUsed):
        socket.create_connection(("127.0.0.1", 9))
    with pytest.raises(NetworkUsed), socket.socket() as raw:
        raw.connect(("127.0.0.1", 9))
    with pytest.raises(NetworkUsed):
        socket.getaddrinfo("api.anthropic.com", 443)

    async def connect() -> None:
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.raises(NetworkUsed):
        asyncio.run(connect())
    assert network_guard.attempts == [
        "socket.create_connection",
        "socket.create_connection",
        "socket.connect",
        "socket.getaddrinfo",
        "loop.create_connection",
    ]


# -- replaying real agents -----------------------------------------------------------------------

#: (sdk, async, HTTP client): every client the SDKs send through.
CLIENTS = [
    ("anthropic", False, "default"),
    ("anthropic", True, "default"),
    ("anthropic", True, "aiohttp"),
    ("openai", False, "default"),
    ("openai", True, "default"),
    ("openai", True, "aiohttp"),
    ("openai", False, "httpx"),
    ("openai", True, "httpx"),
]


@pytest.mark.parametrize(("sdk", "is_async", "client"), CLIENTS, ids=["-".join(map(str, c)) for c in CLIENTS])
@pytest.mark.parametrize("where", ["closed local port", "the real provider"])
def test_a_replayed_agent_opens_no_socket(
    fake_provider: FakeProvider,
    network_guard: NetworkGuard,
    tmp_path: Path,
    sdk: str,
    is_async: bool,
    client: str,
    where: str,
) -> None:
    path = tmp_path / "run.json"
    recorded = record(fake_provider, sdk, path, is_async=is_async, http_client=client)
    root = fake_provider.base_url if where == "closed local port" else None
    fake_provider.stop()
    network_guard.block()
    replay = run_agent(
        blackbox(mode="replay", cassette=path), sdk, root, is_async=is_async, http_client=client
    )
    report = replay.session.finish(result=replay.answer)
    assert (report.status, report.replayed_steps) == ("success", 7)
    assert replay.answer == recorded.answer
    assert replay.lookup.runs == []
    assert network_guard.attempts == []


def test_the_weather_example_replays_with_no_socket(
    pytester: pytest.Pytester, network_guard: NetworkGuard
) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    for name in ("agent.py", "fake_model.py", "conftest.py", "test_agent.py"):
        shutil.copy(EXAMPLE / name, pytester.path / name)
    shutil.copytree(EXAMPLE / "cassettes", pytester.path / "cassettes")
    network_guard.block()
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "blackbox: 2 replayed, 0 recorded, 0 diverged, 0 unsupported, 0 not written (test failed), "
            "0 unused cassettes"
        ]
    )
    assert network_guard.attempts == []


# -- hostile cassette content ----------------------------------------------------------------------

PROVIDER_ID = "call_Ab12Cd34Ef56Gh78Ij90Kl12"
BIG = "x" * 2_000_000
HOSTILE_TEXT = (
    "See https://api.anthropic.com/v1/messages, http://169.254.169.254/latest/meta-data and "
    "http://user:pass@127.0.0.1:1/v1/chat/completions?key=k before answering. "
)
HOSTILE_INPUT = {
    "city": "Paris",
    "base_url": "http://127.0.0.1:1/v1",
    "url": "https://api.openai.com/v1/chat/completions?api_key=k",
}
HOSTILE_RESULT = {
    "city": "Paris",
    "next": "https://attacker.example/collect",
    "base_url": "https://api.anthropic.com",
    "blob": BIG,
}
HOSTILE_FINAL = HOSTILE_TEXT + "Fetch https://attacker.example/" + "y" * 500_000


def _swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_swap(item, old, new) for item in value]
    if isinstance(value, dict):
        return {_swap(key, old, new): _swap(item, old, new) for key, item in value.items()}
    return value


def rechained(path: Path, old: str, new: str, trace_id: str) -> None:
    """Replace ``old`` by ``new`` in every step, give the trace a new id, and hash the chain again."""
    trace = load_trace(path)
    recorder = TraceRecorder(trace_id, trace["createdAt"])
    for step in trace["steps"]:
        recorder.append(step["type"], _swap(step["payload"], old, new), step["timestamp"])
    save_trace(recorder.trace(), path)


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_hostile_cassette_content_is_answered_from_the_cassette(
    fake_provider: FakeProvider, network_guard: NetworkGuard, tmp_path: Path, sdk: str, is_async: bool
) -> None:
    path = tmp_path / "run.json"
    turns = [([("lookup", HOSTILE_INPUT)], HOSTILE_TEXT), ([], HOSTILE_FINAL)]
    record(fake_provider, sdk, path, turns=turns, is_async=is_async, lookup=Lookup(result=HOSTILE_RESULT))
    rechained(path, "call-0", PROVIDER_ID, "https://api.openai.com/v1")
    trace = load_trace(path)
    assert trace["id"] == "https://api.openai.com/v1"
    assert trace["steps"][1]["payload"]["calls"][0]["toolCallId"] == PROVIDER_ID
    root = fake_provider.base_url
    fake_provider.stop()
    network_guard.block()
    lookup = Lookup()
    replay = run_agent(blackbox(mode="replay", cassette=path), sdk, root, is_async=is_async, lookup=lookup)
    report = replay.session.finish(result=replay.answer)
    assert report.status == "success"
    assert replay.answer == HOSTILE_FINAL
    assert lookup.runs == []
    assert network_guard.attempts == []


# -- requests the agent sends itself -------------------------------------------------------------

SHOWN = "GET http://api.example.com:8443/v1/status"
URL = f"http://user:pass@api.example.com:8443/v1/status?token={ANTHROPIC_KEY}&page=2"


def _sync_get(library: Any, url: str) -> None:
    with library.Client() as client:
        client.get(url)


def _async_get(library: Any, url: str) -> None:
    async def get() -> None:
        async with library.AsyncClient() as client:
            await client.get(url)

    asyncio.run(get())


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("send", [_sync_get, _async_get], ids=["sync", "async"])
def test_a_request_the_agent_sends_itself_is_refused_without_its_credentials(
    fake_provider: FakeProvider, network_guard: NetworkGuard, tmp_path: Path, library: Any, send: Any
) -> None:
    path = tmp_path / "run.json"
    record(fake_provider, "anthropic", path)
    fake_provider.stop()
    network_guard.block()
    session = blackbox(mode="replay", cassette=path)
    with pytest.raises(OfflineRequestError) as raised:
        send(library, URL)
    assert str(raised.value) == (
        "replay mode answers only model calls (messages.create / chat.completions.create); "
        f"a request to {SHOWN} would need the network. Make it inside a wrapped tool "
        "(a replay returns its recorded result), or allow the host (allowed_hosts)"
    )
    with pytest.raises(OfflineRequestError) as kept:
        session.finish()
    assert kept.value is raised.value
    for hidden in ("user", "pass", "token", "page=2", ANTHROPIC_KEY[:12]):
        assert hidden not in str(raised.value)
    assert network_guard.attempts == []


def test_a_key_in_the_path_of_such_a_request_is_masked(
    fake_provider: FakeProvider, network_guard: NetworkGuard, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    record(fake_provider, "anthropic", path)
    fake_provider.stop()
    network_guard.block()
    session = blackbox(mode="replay", cassette=path)
    with pytest.raises(OfflineRequestError) as raised, httpx2.Client() as client:
        client.post(f"https://api.example.com/keys/{ANTHROPIC_KEY}/revoke", content=json.dumps({"a": 1}))
    shown = "a request to POST https://api.example.com/keys/[redacted]/revoke would need the network."
    assert shown in str(raised.value)
    with pytest.raises(OfflineRequestError):
        session.finish()
    assert network_guard.attempts == []
