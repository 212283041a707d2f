"""The engine's match and redaction rules, set the pytest way: a ``blackbox_config`` fixture and markers.

Each scenario records an inner suite against the fake provider, then replays it in CI with no key,
changing what the rule is for (the date in the system prompt, the token limit, the model)
and, to prove the rule does the work, something it is not for. Every replay asserts that nothing
reached the provider; the redaction scenarios read every file the runs left behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET
from tests.machine import scaled

from .conftest import MARKER_USAGE, exact, summary

AGENT = '''
"""A one-tool Anthropic agent whose request carries a date, a token limit, a model and a contact."""

import os

TOOLS = [
    {
        "name": "lookup",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def lookup(city):
    return {"city": city, "tempC": 21, "contact": os.environ.get("CONTACT", "desk@example.org")}


def ask(client, blackbox):
    lookup_tool = blackbox.tool("lookup", lookup)
    system = f"Today is {os.environ.get('TODAY', '2026-01-01')}. Answer from the lookup tool only."
    city = os.environ.get("CITY", "Paris")
    contact = os.environ.get("CONTACT", "desk@example.org")
    messages = [{"role": "user", "content": f"Weather in {city}? Reply to {contact}."}]
    while True:
        response = client.messages.create(
            model=os.environ.get("MODEL", "claude-sonnet-5"),
            max_tokens=int(os.environ.get("MAX_TOKENS", "256")),
            system=system,
            messages=messages,
            tools=TOOLS,
        )
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": str(lookup_tool(**u.input))}
                    for u in uses
                ],
            }
        )
'''

CONFTEST = """
import os

import anthropic
import pytest


@pytest.fixture
def client():
    return anthropic.Anthropic(
        base_url=os.environ["FAKE_PROVIDER_URL"],
        default_headers={"x-gateway-key": os.environ.get("GATEWAY_KEY", "gw-none")},
    )
"""

TEST = """
import pytest

import agent
{config}

{marker}
def test_weather(client, blackbox):
    assert agent.ask(client, blackbox).startswith("21")
"""

DATE_RULE = """
@pytest.fixture(scope="module")
def blackbox_config():
    return {"normalize": [(r"\\d{4}-\\d{2}-\\d{2}", "<date>")]}
"""
EMAIL = r"[\w.+-]+@[\w-]+\.[\w.]+"
REDACT_RULE = f'''
@pytest.fixture(scope="session")
def blackbox_config():
    return {{"redact": [r"{EMAIL}"]}}
'''
MODEL_MATCHER = """
def same_family(recorded, live):
    family = recorded["model"].rsplit("-", 1)[0]
    return None if live["model"].startswith(family) else f"model {live['model']} is not a {family}"
"""


def answer(path: str, body: Any) -> tuple[int, Any]:
    """One lookup, then the answer: the fake provider's side of every scenario."""
    usage = {"input_tokens": 1, "output_tokens": 3}
    message = {"id": "msg_01Rules", "type": "message", "role": "assistant", "model": body["model"]}
    if len(body["messages"]) == 1:
        use = {"type": "tool_use", "id": "toolu_01Rules", "name": "lookup", "input": {"city": "Paris"}}
        return 200, {**message, "content": [use], "stop_reason": "tool_use", "usage": usage}
    text = {"type": "text", "text": "21 °C and clear in Paris."}
    return 200, {**message, "content": [text], "stop_reason": "end_turn", "usage": usage}


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The agent's suite, pointed at a fake provider that counts what reaches it."""
    for name in ("TODAY", "CITY", "CONTACT", "MODEL", "MAX_TOKENS", "GATEWAY_KEY", "ANTHROPIC_API_KEY"):
        clean_env.delenv(name, raising=False)
    bare_dir.makepyfile(agent=AGENT)
    bare_dir.makeconftest(CONFTEST)
    clean_env.delitem(sys.modules, "agent", raising=False)
    with FakeProvider(respond=answer) as provider:
        clean_env.setenv("FAKE_PROVIDER_URL", provider.anthropic_base_url)
        yield provider


def write(pytester: pytest.Pytester, *, config: str = "", marker: str = "@pytest.mark.blackbox") -> None:
    pytester.makepyfile(test_rules=TEST.format(config=config, marker=marker))


def record(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, **env: str) -> pytest.RunResult:
    with clean_env.context() as scoped:
        scoped.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-rules-test-key-0123456789abcdef")
        for name, value in env.items():
            scoped.setenv(name, value)
        result = pytester.runpytest(*QUIET, "--record-mode=once")
    result.stdout.fnmatch_lines([exact(summary(recorded=1))])
    return result


def replay(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider, *args: str, **env: str
) -> pytest.RunResult:
    """A CI replay with no key; nothing may reach the provider."""
    sent = len(fake.requests)
    with clean_env.context() as scoped:
        scoped.setenv("CI", "true")
        for name, value in env.items():
            scoped.setenv(name, value)
        result = pytester.runpytest(*QUIET, *args)
    assert len(fake.requests) == sent
    return result


def divergence(result: pytest.RunResult) -> list[str]:
    """The divergence block of a failed replay, from its first line to the match hint."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("blackbox: replay diverged"))
    return lines[start : start + 4]


def test_a_date_in_the_system_prompt_replays_across_days(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    write(bare_dir, config=DATE_RULE)
    record(bare_dir, clean_env, TODAY="2026-01-01")
    later = replay(bare_dir, clean_env, fake, TODAY="2026-12-01")
    later.assert_outcomes(passed=1)
    later.stdout.fnmatch_lines([exact(summary(replayed=1, relaxed=1))])

    elsewhere = replay(bare_dir, clean_env, fake, TODAY="2026-12-01", CITY="Oslo")
    elsewhere.assert_outcomes(failed=1)
    assert divergence(elsewhere) == [
        "blackbox: replay diverged at step 0, messages[0].content",
        '  recorded: "Weather in Paris? Reply to desk@example.org."',
        '  actual:   "Weather in Oslo? Reply to desk@example.org."',
        "  compared after the match rules: normalize '\\\\d{4}-\\\\d{2}-\\\\d{2}' → '<date>'",
    ]


def test_without_the_rule_the_date_diverges(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    write(bare_dir)
    record(bare_dir, clean_env, TODAY="2026-01-01")
    later = replay(bare_dir, clean_env, fake, TODAY="2026-12-01")
    later.assert_outcomes(failed=1)
    assert divergence(later)[0] == "blackbox: replay diverged at step 0, systemPrompt"


def test_an_ignored_field_on_the_marker_may_change_and_the_rest_may_not(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    write(bare_dir, marker='@pytest.mark.blackbox(ignore=["params.maxTokens"])')
    record(bare_dir, clean_env)
    longer = replay(bare_dir, clean_env, fake, MAX_TOKENS="1024")
    longer.assert_outcomes(passed=1)
    other_model = replay(bare_dir, clean_env, fake, MODEL="claude-haiku-5")
    other_model.assert_outcomes(failed=1)
    assert divergence(other_model)[:3] == [
        "blackbox: replay diverged at step 0, model",
        '  recorded: "claude-sonnet-5"',
        '  actual:   "claude-haiku-5"',
    ]


def test_a_matcher_on_the_marker_decides_what_strict_comparison_leaves_out(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    write(
        bare_dir,
        config=MODEL_MATCHER,
        marker='@pytest.mark.blackbox(ignore=["model"], match=same_family)',
    )
    record(bare_dir, clean_env)
    newer = replay(bare_dir, clean_env, fake, MODEL="claude-sonnet-6")
    newer.assert_outcomes(passed=1)
    other = replay(bare_dir, clean_env, fake, MODEL="gpt-5")
    other.assert_outcomes(failed=1)
    assert divergence(other)[:3] == [
        "blackbox: replay diverged at step 0, matcher",
        "  recorded: a request the matcher accepts",
        "  actual:   model gpt-5 is not a claude-sonnet",
    ]


def written_files(root: Path) -> list[Path]:
    """Every file the runs wrote: cassettes, anything left beside them, pages and reports."""
    sources = {"agent.py", "conftest.py", "test_rules.py", "tox.ini"}
    return [
        p for p in root.rglob("*") if p.is_file() and p.name not in sources and "__pycache__" not in p.parts
    ]


def test_a_redacted_address_is_in_no_file_and_the_run_replays(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    planted = "alice.planted+test@example.com"
    write(bare_dir, config=REDACT_RULE)
    record(bare_dir, clean_env, CONTACT=planted)
    cassette = bare_dir.path / "cassettes" / "test_rules" / "test_weather.json"
    view = bare_dir.path / "run.html"
    cli = Path(sys.executable).with_name("blackbox")
    shown = subprocess.run(
        [str(cli), "verify", str(cassette)], capture_output=True, text=True, check=False, timeout=scaled(60)
    )
    subprocess.run([str(cli), "view", str(cassette), "-o", str(view)], check=True, timeout=scaled(60))
    assert shown.returncode == 0, shown.stdout
    assert "[redacted]" in cassette.read_text(encoding="utf-8")
    files = written_files(bare_dir.path)
    assert cassette in files and view in files
    assert [f for f in files if planted.encode() in f.read_bytes()] == []
    assert planted not in shown.stdout

    again = replay(bare_dir, clean_env, fake, CONTACT=planted)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([exact(summary(replayed=1))])


SECRET_HEADER = """
@pytest.fixture
def blackbox_config():
    return {"secrets": {"headers": ["x-gateway-key"]}}
"""


def test_a_custom_auth_header_is_a_secret_no_cassette_may_hold(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    gateway_key = "gw-live-7f3a9c2e5b1d4e6f"
    write(bare_dir, config=SECRET_HEADER)
    with clean_env.context() as scoped:
        scoped.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-rules-test-key-0123456789abcdef")
        scoped.setenv("GATEWAY_KEY", gateway_key)
        scoped.setenv("CONTACT", gateway_key)  # the tool hands the key back: the cassette would hold it
        result = bare_dir.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            exact(
                "blackbox: refusing to write the cassette: it contains a secret (the value of the "
                "x-gateway-key request header) in step 0 (model_input) at messages[0].content; keep it out "
                "of what the agent sends and what its tools return"
            ),
            "cassette: cassettes/test_rules/test_weather.json (not written: the test failed)",
        ],
        consecutive=True,
    )
    assert gateway_key not in result.stdout.str() + result.stderr.str()
    assert [f for f in written_files(bare_dir.path) if gateway_key.encode() in f.read_bytes()] == []


def test_the_recipe_of_docs_pytest_prints_the_divergence_it_shows(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    """The recipe's ``blackbox_config``, verbatim: a replay on another day about another city fails with
    exactly the block the page shows, the address redacted."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "pytest.md").read_text(encoding="utf-8")
    recipes = page[page.index("### Match rules and redaction: recipes") :]
    config = re.search(r"```python\n# conftest.py\n(.*?)```", recipes, re.DOTALL)
    shown = re.search(r"```text\n(blackbox: replay diverged.*?)```", recipes, re.DOTALL)
    assert config is not None and shown is not None
    write(bare_dir, config=config.group(1))
    record(bare_dir, clean_env, TODAY="2026-01-01")
    later = replay(bare_dir, clean_env, fake, TODAY="2026-12-01", CITY="Oslo")
    later.assert_outcomes(failed=1)
    assert divergence(later) == shown.group(1).splitlines()


RAISING = """
def picky(recorded, live):
    raise KeyError("model")


def scrub(text):
    raise ValueError("no text for you")
"""


@pytest.mark.parametrize(
    ("marker", "when", "line"),
    [
        ("match=picky", "replay", "blackbox: the matcher picky raised KeyError: 'model'"),
        (
            "normalize=[scrub]",
            "replay",
            "blackbox: the normalize function scrub raised ValueError: no text for you",
        ),
        (
            "redact=[scrub]",
            "record",
            "blackbox: the redact function scrub raised ValueError: no text for you",
        ),
    ],
    ids=["matcher", "normalize", "redact"],
)
def test_a_user_function_that_raises_is_named_in_one_line(
    bare_dir: pytest.Pytester,
    clean_env: pytest.MonkeyPatch,
    fake: FakeProvider,
    marker: str,
    when: str,
    line: str,
) -> None:
    """Not respx's ``PassThrough`` or ``SideEffectError``, nor a connection error: the function, its error."""
    write(bare_dir, config=RAISING, marker=f"@pytest.mark.blackbox({marker})")
    if when == "record":
        with clean_env.context() as scoped:
            scoped.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-rules-test-key-0123456789abcdef")
            result = bare_dir.runpytest(*QUIET, "--record-mode=once")
        expected = [
            exact(line),
            "cassette: cassettes/test_rules/test_weather.json (not written: the test failed)",
        ]
    else:
        record(bare_dir, clean_env)
        result = replay(bare_dir, clean_env, fake)
        expected = [exact(line)]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*_ test_weather _*", *expected], consecutive=True)
    shown = result.stdout.str()
    assert "PassThrough" not in shown and "SideEffectError" not in shown and "APIConnectionError" not in shown


@pytest.mark.parametrize(
    ("marker", "pattern"),
    [('redact=[""]', "''"), ('redact=["x*"]', "'x*'"), ('normalize=[("a|", "b")]', "'a|'")],
    ids=["empty", "star", "alternative"],
)
def test_a_pattern_matching_the_empty_text_is_refused_before_any_call(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider, marker: str, pattern: str
) -> None:
    write(bare_dir, marker=f"@pytest.mark.blackbox({marker})")
    with clean_env.context() as scoped:
        scoped.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-rules-test-key-0123456789abcdef")
        result = bare_dir.runpytest(*QUIET, "--record-mode=once")
    option = marker.split("=", 1)[0]
    result.assert_outcomes()
    assert result.stderr.lines[0] == (
        f"ERROR: test_rules.py::test_weather: bad @pytest.mark.blackbox: {option}: the pattern {pattern} "
        "matches the empty text, so it would apply between every two characters; give a pattern that "
        f"matches at least one character; usage: {MARKER_USAGE}"
    )
    assert fake.requests == []


RELAXED = r"""
import os

import pytest

import agent

DATE = (r"\d{4}-\d{2}-\d{2}", "<date>")


def same_family(recorded, live):
    family = recorded["model"].rsplit("-", 1)[0]
    return None if live["model"].startswith(family) else f"model {live['model']} is not a {family}"


@pytest.fixture
def later(monkeypatch, request):
    # replaying later (LATER names this module): each test changes the one thing its rule is for
    def change(name, value):
        if request.module.__name__ == os.environ.get("LATER"):
            monkeypatch.setenv(name, value)

    return change


@pytest.mark.blackbox(normalize=[DATE])
def test_date(client, blackbox, later):
    later("TODAY", "2026-12-01")
    assert agent.ask(client, blackbox).startswith("21")


@pytest.mark.blackbox(ignore=["params.maxTokens"])
def test_tokens(client, blackbox, later):
    later("MAX_TOKENS", "1024")
    assert agent.ask(client, blackbox).startswith("21")


@pytest.mark.blackbox(ignore=["model"], match=same_family)
def test_model(client, blackbox, later):
    later("MODEL", "claude-sonnet-6")
    assert agent.ask(client, blackbox).startswith("21")


@pytest.mark.blackbox(match="sequence")
def test_sequence(client, blackbox, later):
    later("CITY", "Oslo")
    assert agent.ask(client, blackbox).startswith("21")


@pytest.mark.blackbox(normalize=[DATE], ignore=["params.maxTokens"])
def test_untouched(client, blackbox, later):
    assert agent.ask(client, blackbox).startswith("21")
"""
#: Test → what relaxed which field (the first one that differs as sent), at step 0.
RELAXED_BY = {
    "test_date": ("the normalize rule '\\\\d{4}-\\\\d{2}-\\\\d{2}' → '<date>'", "systemPrompt"),
    "test_tokens": ("the ignore rule params.maxTokens", "params.maxTokens"),
    "test_model": ("the ignore rule model and the matcher same_family", "model"),
    "test_sequence": ("the sequence match mode", "messages[0].content"),
}


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_summary_counts_the_replays_that_passed_only_through_a_match_rule(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider, workers: tuple[str, ...]
) -> None:
    """Each rule relaxes its field in its own test; a rule that changed nothing counts for nothing.

    Two copies of the tests in one replay (one run under ``-n 2`` costs two worker start-ups):
    ``test_rules.py`` replays later (each test changes its field), ``test_same.py`` as it recorded.
    """
    bare_dir.makepyfile(test_rules=RELAXED, test_same=RELAXED)
    with clean_env.context() as scoped:
        scoped.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-rules-test-key-0123456789abcdef")
        bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=10)
    later = replay(bare_dir, clean_env, fake, *workers, LATER="test_rules")
    later.assert_outcomes(passed=10, warnings=len(RELAXED_BY))
    for test, (rules, path) in RELAXED_BY.items():
        text = (
            f"blackbox: test_rules.py::{test} passed because {rules} relaxed {path} at step 0; compared "
            "as sent, the replay would diverge there"
        )
        later.stdout.fnmatch_lines([f"test_rules.py::{test}", "  *: RelaxedMatchWarning: " + exact(text)])
    later.stdout.fnmatch_lines([exact(summary(replayed=10, relaxed=len(RELAXED_BY)))])
    assert "test_rules.py::test_untouched" not in later.stdout.str()
    assert "test_same.py::" not in later.stdout.str()  # no RelaxedMatchWarning where nothing changed
