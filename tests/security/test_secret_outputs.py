"""The key never reaches any output of a pytest run, wherever the agent puts it — a dict key included.

One inner suite plants the environment's key (a literal key, recognised only because it is the
value of ``ANTHROPIC_API_KEY``) in one position per run: a tool result's value or key, a tool's
input, a tool's exception text, the client's URL query, a request header, a streamed answer, or an
object key inside a request. Each run is checked output by output: the terminal (failure block and
summary included), the ``--junitxml`` file, every file the run left (cassettes, reports), and for a
written cassette the CLI (``verify``, ``inspect``) and the ``view`` page. A path naming a secret key
shows it as ``[<secret>]`` (docs/security.md#secrets).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import anthropic  # noqa: F401  (imported once here: in-process inner pytest runs would import it again)
import pytest

import pytest_blackbox.plugin.testrun  # noqa: F401  (the same, for the session, respx and the providers)
from pytest_blackbox.analysis.jsondiff import first_difference, format_path
from tests import QUIET
from tests.conftest import cli_outputs

from .conftest import ANTHROPIC_KEY, LITERAL_KEY, OPENAI_KEY

INNER = """
import os

import anthropic
import pytest

from pytest_blackbox.testing.fake_provider import FakeProvider

KEY = os.environ["PLANTED_KEY"]
WHERE = os.environ.get("PLANTED_WHERE", "")


@pytest.fixture
def provider():
    with FakeProvider() as fake:
        yield fake


def lookup(query):
    if WHERE == "exception":
        raise PermissionError("upstream refused the key " + KEY)
    if WHERE == "value":
        return {"city": query["city"], "debug": "signed with " + KEY}
    if WHERE == "key":
        return {"city": query["city"], KEY: "signature"}
    return {"city": query["city"]}


@pytest.mark.blackbox
def test_agent(blackbox, provider):
    root = provider.base_url
    if blackbox.mode == "replay":
        provider.stop()
    query = {"city": "Paris"}
    if WHERE == "tool-input":
        query[KEY] = "x"
    try:
        blackbox.tool("lookup", lookup)(query)
    except PermissionError:
        pass
    provider.queue_anthropic_text("Sunny. " + KEY if WHERE == "streamed" else "Sunny.")
    client = anthropic.Anthropic(
        base_url=root,
        max_retries=0,
        default_headers={"X-Team-Token": KEY} if WHERE == "header" else None,
        default_query={"api_key": KEY} if WHERE == "url" else None,
    )
    field = KEY if WHERE == "schema-key" else "zone"
    schema = {"type": "object", "properties": {field: {"type": "string"}}}
    with client.messages.stream(
        model="claude-haiku-4-5",
        max_tokens=64,
        system="Be brief.",
        tools=[{"name": "lookup", "description": "Look up a city.", "input_schema": schema}],
        messages=[{"role": "user", "content": "Weather?"}],
    ) as stream:
        assert stream.get_final_text().startswith("Sunny.")
"""

KEY = LITERAL_KEY
LEAK = "blackbox: refusing to write the cassette: it contains your API key (the value of ANTHROPIC_API_KEY)"
KEEP = "; keep it out of what the agent sends and what its tools return"

#: Recording with the key in a position: the refusal line the terminal shows, or None (written without it).
RECORDED = {
    "value": f"{LEAK} in step 1 (tool_result) at result.debug{KEEP}",
    "key": f"{LEAK} in step 1 (tool_result) at result[<secret>]{KEEP}",
    "tool-input": f"{LEAK} in step 0 (tool_call) at toolInput[<secret>]{KEEP}",
    "streamed": f"{LEAK} in step 3 (model_output) at text{KEEP}",
    "exception": None,
    "url": None,
    "header": None,
}

#: Replaying a clean cassette with the key in a position: a line of the divergence the terminal shows.
REPLAYED = {
    "tool-input": '  actual:   {"city":"Paris","[redacted]":"x"}',
    "schema-key": "blackbox: replay diverged at step 2, tools[0].inputSchema.properties[<secret>]",
}


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_agent=INNER)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("PLANTED_KEY", KEY)
    return pytester


def run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, *args: str
) -> pytest.RunResult:
    monkeypatch.setenv("PLANTED_WHERE", where)
    return pytester.runpytest(*QUIET, "--junitxml=junit.xml", *args)


def leaks(text: str) -> bool:
    """The key, or its first twelve characters (a cut-off key is still a leak)."""
    return KEY in text or KEY[:12] in text


def leaking_files(root: Path) -> list[str]:
    """Every file the run left (hidden ones too) that holds the key, as relative paths."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and leaks(p.read_text(encoding="utf-8", errors="replace"))
    )


@pytest.mark.parametrize("where", list(RECORDED))
def test_recording_with_the_key_in_any_position_shows_it_in_no_output(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    result = run(inner, monkeypatch, where, "--record-mode=once")
    terminal = result.stdout.lines + result.stderr.lines
    cassette = inner.path / "cassettes" / "test_agent" / "test_agent.json"
    refusal = RECORDED[where]
    if refusal is not None:
        result.assert_outcomes(failed=1)
        assert refusal in terminal  # the failure block
        assert "cassette: cassettes/test_agent/test_agent.json (not written: the test failed)" in terminal
        assert not cassette.exists()
    else:
        result.assert_outcomes(passed=1)
        assert cassette.exists()
    recorded, unwritten = (0, 1) if refusal else (1, 0)
    counts = f"0 replayed, {recorded} recorded, 0 diverged, 0 unsupported, {unwritten} not written"
    assert f"blackbox: {counts} (test failed), 0 unused cassettes" in terminal
    assert [line for line in terminal if leaks(line)] == []
    junit = (inner.path / "junit.xml").read_text(encoding="utf-8")
    assert not leaks(junit)
    if refusal is not None:
        assert escape(refusal, {'"': "&quot;"}) in junit
    else:
        assert [text for text in cli_outputs(cassette, capsys) if leaks(text)] == []
    assert leaking_files(inner.path) == []


@pytest.mark.parametrize("where", list(REPLAYED))
def test_a_divergence_with_the_key_in_any_position_shows_it_in_no_output(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    run(inner, monkeypatch, "", "--record-mode=once").assert_outcomes(passed=1)
    result = run(inner, monkeypatch, where)
    result.assert_outcomes(failed=1)
    terminal = result.stdout.lines + result.stderr.lines
    assert REPLAYED[where] in terminal
    counts = "0 replayed, 0 recorded, 1 diverged, 0 unsupported, 0 not written"
    assert f"blackbox: {counts} (test failed), 0 unused cassettes" in terminal
    assert [line for line in terminal if leaks(line)] == []
    assert leaking_files(inner.path) == []


@pytest.mark.parametrize("key", [LITERAL_KEY, ANTHROPIC_KEY, OPENAI_KEY, f"x-{ANTHROPIC_KEY}-y"])
def test_a_path_shows_a_key_holding_a_secret_masked(key: str) -> None:
    """A known value or a realistic credential, alone or inside a longer key, anywhere in the path."""
    assert format_path(["result", "a key", key, 0], [LITERAL_KEY]) == 'result["a key"][<secret>][0]'
    diff = first_difference({"result": {key: 1}}, {"result": {}}, [LITERAL_KEY])
    assert diff is not None and diff.path == "result[<secret>]"


def test_a_known_value_is_masked_only_when_given() -> None:
    """A literal key is no pattern: unknown, it is an ordinary key (realistic ones are masked anyway)."""
    assert format_path(["result", LITERAL_KEY]) == f'result["{LITERAL_KEY}"]'
    assert format_path(["result", ANTHROPIC_KEY]) == "result[<secret>]"
