"""A Gemini agent under the plugin: recorded once against the fake provider, replayed with no key set."""

from __future__ import annotations

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from tests import QUIET

from .conftest import exact, summary

#: Imported once here, so in-process inner runs do not import it again; the legacy SDK run has no httpx2,
#: so no google-genai either.
pytest.importorskip("google.genai", reason="google-genai is not installed (pip install google-genai)")

CONFTEST = """
import socket

import pytest

from pytest_blackbox.testing import FakeProvider


@pytest.fixture
def gemini_base_url(blackbox):
    if blackbox.mode == "replay":  # a closed port: a replay that tried the network would fail at once
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        yield f"http://127.0.0.1:{port}"
        return
    with FakeProvider() as fake:
        fake.queue_gemini_tool_calls([("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})])
        fake.queue_gemini_text("It is 21 °C in Paris and 4 °C in Oslo.")
        yield fake.gemini_base_url
"""

TEST = """
import pytest
IMPORTS


def get_weather(city: str) -> dict:
    \"\"\"Current weather for a city.\"\"\"
    return {"city": city, "tempC": {"Paris": 21, "Oslo": 4}[city]}


@pytest.mark.blackbox
DEF test_weather(blackbox, gemini_base_url):
    LATE_IMPORTS
    client = genai.Client(http_options=types.HttpOptions(base_url=gemini_base_url))
    config = types.GenerateContentConfig(tools=list(blackbox.tools({"get_weather": get_weather}).values()))
    chat = CLIENT.chats.create(model="gemini-2.5-flash", config=config)
    answer = AWAIT chat.send_message("Weather in Paris and Oslo?")
    assert answer.text == "It is 21 °C in Paris and 4 °C in Oslo."
"""


IMPORTS = "from google import genai\nfrom google.genai import types"


@pytest.mark.parametrize("flavor", ["sync", "async", "async-imported-late"])
def test_a_gemini_agent_records_once_then_replays_without_a_key(
    bare_dir: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flavor: str
) -> None:
    """Recording sends the key it finds; a replay runs with none (the plugin sets a placeholder).

    ``client.aio`` sends through aiohttp; imported inside the test, in a process of its own, google-genai
    is first imported long after the session started, and its calls are recorded and replayed all the same.
    """
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    bare_dir.makeconftest(CONFTEST)
    async_ = flavor.startswith("async")
    late = flavor.endswith("late")
    source = (
        TEST.replace("LATE_IMPORTS", IMPORTS.replace("\n", "\n    ") if late else "")
        .replace("IMPORTS", "" if late else IMPORTS)
        .replace("DEF ", "async def " if async_ else "def ")
        .replace("AWAIT ", "await " if async_ else "")
        .replace("CLIENT.", "client.aio." if async_ else "client.")
    )
    bare_dir.makepyfile(test_gemini_agent=source)

    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyPluginTestKey0123456789abcdefghi")
    run = bare_dir.runpytest_subprocess if late else bare_dir.runpytest
    first = run(*QUIET, "--record-mode=once")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines([exact(summary(recorded=1))])
    cassette = bare_dir.path / "cassettes" / "test_gemini_agent" / "test_weather.json"
    assert verify_trace(cassette).ok
    assert "AIzaSyPluginTestKey" not in cassette.read_text(encoding="utf-8")
    recorded = cassette.read_bytes()

    monkeypatch.delenv("GEMINI_API_KEY")
    second = run(*QUIET)
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert cassette.read_bytes() == recorded
