"""Images in requests, on every protocol: recorded as media parts, replayed offline, compared by digest.

The screen-reading agent of ``tests/agents/screenshot.py`` sends an image with its prompt and a
screenshot in its answer to a tool call, through the real SDKs (docs/cassette-format.md#media-parts).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google.genai import errors as genai_errors

from pytest_blackbox import BlackboxUsageError, ReplayDivergenceError, blackbox, verify_trace
from pytest_blackbox.testing import FakeProvider
from tests.agents.screenshot import ANSWER, PROTOCOLS, ScreenshotAgent, script

SDK_ERRORS = (anthropic.APIError, openai.APIError, genai_errors.APIError)
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
SCREEN = b"\x89PNG\r\n\x1a\n" + bytes(range(255, -1, -1)) * 8


@pytest.fixture(autouse=True)
def _gemini_key(provider_keys: pytest.MonkeyPatch) -> None:
    provider_keys.setenv("GEMINI_API_KEY", "gemini-suite-test-key-0123456789")


def _run(base_url: str, protocol: str, is_async: bool, session: Any, screen: bytes | None = SCREEN) -> str:
    agent = ScreenshotAgent(base_url, protocol, is_async, LOGO, screen)
    try:
        return asyncio.run(agent.run())
    finally:
        if session.mode == "record":
            session.finish(result=ANSWER)


def _record(
    fake: FakeProvider, protocol: str, path: Path, screen: bytes | None = SCREEN, **options: Any
) -> str:
    script(fake, protocol)
    return _run(fake.base_url, protocol, False, blackbox(mode="record", out=path, **options), screen)


def _media(path: Path) -> list[dict[str, Any]]:
    """The media parts of a cassette's requests, in order (tool results' content included)."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "media":
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for step in json.loads(path.read_text(encoding="utf-8"))["steps"]:
        if step["type"] == "model_input":
            walk(step["payload"]["messages"])
    return found


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_images_record_as_digests_and_replay_offline(
    protocol: str,
    is_async: bool,
    fake_provider: FakeProvider,
    offline: Callable[[], list[str]],
    tmp_path: Path,
) -> None:
    path = tmp_path / "screen.json"
    script(fake_provider, protocol)
    recording = blackbox(mode="record", out=path)
    assert _run(fake_provider.base_url, protocol, is_async, recording) == ANSWER

    parts = _media(path)
    # The second request repeats the first one's image in its history.
    assert [part["sha256"] for part in parts] == [_digest(LOGO), _digest(LOGO), _digest(SCREEN)]
    assert {part["kind"] for part in parts} == {"image"}
    assert all("data" not in part and part["byteLength"] in (len(LOGO), len(SCREEN)) for part in parts)
    assert verify_trace(path).ok

    sent = len(fake_provider.requests)
    attempts = offline()
    replay = blackbox(mode="replay", cassette=path)
    assert _run(fake_provider.base_url, protocol, is_async, replay) == ANSWER
    replay.finish(result=ANSWER)
    assert attempts == [] and len(fake_provider.requests) == sent


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_screenshot_one_byte_different_diverges_naming_the_part_and_both_digests(
    protocol: str, fake_provider: FakeProvider, offline: Callable[[], list[str]], tmp_path: Path
) -> None:
    path = tmp_path / "screen.json"
    _record(fake_provider, protocol, path)
    changed = SCREEN[:-1] + bytes([SCREEN[-1] ^ 1])
    offline()
    replay = blackbox(mode="replay", cassette=path)
    with pytest.raises(SDK_ERRORS):  # the refused call
        _run(fake_provider.base_url, protocol, False, replay, changed)
    with pytest.raises(ReplayDivergenceError) as divergence:
        replay.finish(result=ANSWER)
    error = divergence.value
    assert error.path.endswith("].sha256") and error.path.startswith("messages[")
    assert _digest(SCREEN) in error.expected and _digest(changed) in error.actual


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_inline_mode_keeps_the_bytes_and_replays_by_digest(
    protocol: str, fake_provider: FakeProvider, offline: Callable[[], list[str]], tmp_path: Path
) -> None:
    path = tmp_path / "inline.json"
    _record(fake_provider, protocol, path, media="inline")
    parts = _media(path)
    assert [hashlib.sha256(_decoded(part["data"])).hexdigest() for part in parts] == [
        part["sha256"] for part in parts
    ]
    assert verify_trace(path).ok
    offline()
    replay = blackbox(mode="replay", cassette=path)
    assert _run(fake_provider.base_url, protocol, False, replay) == ANSWER
    replay.finish(result=ANSWER)


def test_an_inline_cassette_spelling_media_with_escapes_still_replays_by_digest(
    fake_provider: FakeProvider, offline: Callable[[], list[str]], tmp_path: Path
) -> None:
    """A cassette whose text shows no ``"media"`` is replayed without looking for bytes to leave out;
    one that spells it with a ``\\u`` escape (the same JSON value) is still looked through."""
    path = tmp_path / "inline.json"
    _record(fake_provider, PROTOCOLS[0], path, media="inline")
    text = path.read_text(encoding="utf-8")
    assert '"media"' in text
    path.write_text(text.replace('"media"', '"\\u006dedia"'), encoding="utf-8")
    assert verify_trace(path).ok  # the same values, so the same hashes
    offline()
    replay = blackbox(mode="replay", cassette=path)
    assert _run(fake_provider.base_url, PROTOCOLS[0], False, replay) == ANSWER
    replay.finish(result=ANSWER)


def _decoded(data: str) -> bytes:
    """Inline data is standard base64 (google-genai's URL-safe alphabet is translated)."""
    return base64.b64decode(data, validate=True)


def test_a_5_mb_screenshot_adds_at_most_4_kb_to_a_digest_cassette(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    screen = bytes(range(256)) * (5 * 1024 * 1024 // 256)
    with_screen, without = tmp_path / "with.json", tmp_path / "without.json"
    _record(fake_provider, "anthropic", with_screen, screen)
    _record(fake_provider, "anthropic", without, None)
    assert with_screen.stat().st_size - without.stat().st_size <= 4096


def test_a_bad_media_setting_is_refused_naming_the_values(tmp_path: Path) -> None:
    with pytest.raises(BlackboxUsageError, match='media must be "digest" or "inline"; got \'raw\''):
        blackbox(mode="record", out=tmp_path / "x.json", media="raw")
