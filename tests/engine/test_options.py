"""Session options and ``BLACKBOX_*`` variables: every bad value gets the reference's exact message."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_blackbox import Secrets
from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY
from pytest_blackbox.engine.options import SessionOptions, resolve_options
from pytest_blackbox.engine.rules import RULE_VALIDATORS
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.errors import BlackboxUsageError, CassetteError

BAD_VALUES = [
    ("BLACKBOX_MODE", "recrod", 'BLACKBOX_MODE must be one of off, record, replay, fork; got "recrod"'),
    ("BLACKBOX_FORK_AT", "x", 'BLACKBOX_FORK_AT must be a step index; got "x"'),
    ("BLACKBOX_FORK_AT", "07", 'BLACKBOX_FORK_AT must be a step index; got "07"'),
    ("BLACKBOX_FORK_AT", "-1", 'BLACKBOX_FORK_AT must be a step index; got "-1"'),
    ("BLACKBOX_FORK_AT", "1.5", 'BLACKBOX_FORK_AT must be a step index; got "1.5"'),
    ("BLACKBOX_FORK_SET", "{oops", "BLACKBOX_FORK_SET must be JSON (the replacement tool result)"),
    ("BLACKBOX_FORK_SET", "NaN", "BLACKBOX_FORK_SET must be JSON (the replacement tool result)"),
    ("BLACKBOX_CONTINUE", "later", 'BLACKBOX_CONTINUE must be "live" or "script"; got "later"'),
    ("BLACKBOX_MATCH", "fuzzy", 'BLACKBOX_MATCH must be "strict" or "sequence"; got "fuzzy"'),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES)
def test_a_bad_variable_gives_the_exact_message(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(BlackboxUsageError) as caught:
        blackbox()
    assert str(caught.value) == message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_variables_are_read_and_options_win(tmp_path: Path) -> None:
    env = {
        "BLACKBOX_MODE": "record",
        "BLACKBOX_OUT": str(tmp_path / "env.json"),
        "BLACKBOX_TRACE_ID": "from-env",
        "BLACKBOX_MATCH": "sequence",
        "BLACKBOX_FORK_AT": "3",
        "BLACKBOX_FORK_SET": '{"temp": 1.0}',
        "BLACKBOX_CONTINUE": "script",
        "BLACKBOX_SCRIPT": "s.json",
        "BLACKBOX_REPORT": str(tmp_path / "report.json"),
    }
    options = resolve_options(env=env)
    assert options == SessionOptions(
        mode="record",
        out=tmp_path / "env.json",
        trace_id="from-env",
        match="sequence",
        fork_at=3,
        fork_set={"temp": 1},
        continue_with="script",
        script=Path("s.json"),
        report_path=tmp_path / "report.json",
    )
    explicit = resolve_options(mode="replay", cassette="c.json", match="strict", fork_set=None, env=env)
    assert (explicit.mode, explicit.cassette, explicit.match, explicit.fork_set) == (
        "replay",
        Path("c.json"),
        "strict",
        None,
    )


def test_empty_variables_count_as_unset() -> None:
    options = resolve_options(env={"BLACKBOX_MODE": "", "BLACKBOX_MATCH": ""})
    assert (options.mode, options.match, options.has_fork_set) == ("off", "strict", False)


@pytest.mark.parametrize(
    ("out", "trace_id", "expected"),
    [("runs/trip.json", None, "trip"), ("runs/trip", None, "trip"), ("runs/trip.json", "mine", "mine")],
)
def test_the_trace_id_defaults_to_the_out_files_base_name(
    out: str, trace_id: str | None, expected: str
) -> None:
    assert resolve_options(mode="record", out=out, trace_id=trace_id, env={}).resolved_trace_id == expected
    assert resolve_options(env={}).resolved_trace_id == "run"


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(
        BlackboxUsageError, match=r"^record mode needs an output path \(out / BLACKBOX_OUT\)$"
    ):
        blackbox(mode="record")
    with pytest.raises(
        BlackboxUsageError, match=r"^replay mode needs a cassette \(cassette / BLACKBOX_CASSETTE\)$"
    ):
        blackbox(mode="replay")
    with pytest.raises(CassetteError) as caught:
        blackbox(mode="replay", cassette=tmp_path / "missing.json")
    assert "missing.json" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_report_path_equal_to_the_cassette_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BlackboxUsageError) as caught:
        resolve_options(mode="record", out=tmp_path / "c.json", report_path=tmp_path / "c.json", env={})
    assert (
        str(caught.value)
        == "BLACKBOX_REPORT names the cassette itself; the status report needs a file of its own"
    )


def test_off_mode_passes_tools_through_untouched() -> None:
    """Off (live) mode runs the tool itself and hands back its very value (a tuple stays a tuple, no
    JSON round trip); the call is only observed, for ``session.run``."""
    session = blackbox()
    value = (1, 2)

    def tool(city: str) -> tuple[int, ...]:
        return value

    assert session.mode == "off"
    assert session.tool("t", tool)("x") is value
    assert [(call.name, call.input) for call in session.run.tool_calls] == [("t", {"city": "x"})]


def test_the_offline_placeholder_key_is_never_a_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A replay under the launcher gets placeholder keys; the session must not treat them as secrets."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", OFFLINE_PLACEHOLDER_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "real-team-key-123")
    session = Session(SessionOptions(mode="record", out=tmp_path / "x.json"), exit_net=False)
    assert session._secrets == {"real-team-key-123"}


# -- the rule options ------------------------------------------------------------------------------

BAD_RULES = [
    (
        "ignore",
        3,
        'ignore must be a list of request field paths such as "systemPrompt" or '
        '"messages[*].content[0].text"; got int',
    ),
    (
        "ignore",
        ["messages[x]"],
        'ignore: "messages[x]" is not a request field path; write it as a divergence '
        'message prints it, e.g. "messages[2].content[0].result", with [*] for any index',
    ),
    ("ignore", [""], 'ignore: an empty path; name a request field, e.g. "systemPrompt"'),
    (
        "normalize",
        ("a", "b"),
        "normalize must be a list of (pattern, replacement) pairs and/or functions str -> str; got an item "
        "of type str (a single pair goes in a list: normalize=[(pattern, replacement)])",
    ),
    (
        "normalize",
        [("(", "x")],
        "normalize: '(' is not a valid regular expression (missing ), unterminated subpattern at position 0)",
    ),
    (
        "matcher",
        "strict",
        "matcher must be a function (recorded_model_input, live_model_input) -> None or a "
        "reason string; got str",
    ),
    (
        "redact",
        [3],
        "redact must be a list of regular expressions and/or functions str -> str; got an item of type int",
    ),
    (
        "redact",
        {"a": 1},
        "redact must be a list of regular expressions and/or functions str -> str; got dict",
    ),
    (
        "secrets",
        ["x"],
        'secrets must be a mapping such as {"env": [...], "values": [...], "headers": [...], '
        '"query": [...]} or pytest_blackbox.Secrets; got list',
    ),
    ("secrets", {"header": ["x"]}, 'secrets has no key "header"; its keys are env, values, headers, query'),
    ("secrets", {"env": [3]}, "secrets['env'] must be a list of strings"),
]


@pytest.mark.parametrize(("option", "value", "message"), BAD_RULES)
def test_a_bad_rule_gives_one_line_naming_the_option(option: str, value: object, message: str) -> None:
    with pytest.raises(BlackboxUsageError) as caught:
        blackbox(mode="replay", cassette="missing.json", **{option: value})
    assert str(caught.value) == message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_the_rule_validators_give_the_stored_shapes() -> None:
    """What the pytest plugin calls on a marker's or a fixture's values: the same validators."""
    assert RULE_VALIDATORS["ignore"]("systemPrompt") == ("systemPrompt",)
    (pattern, replacement), strip = RULE_VALIDATORS["normalize"]([(r"\d+", "N"), str.strip])
    assert (pattern.pattern, replacement, strip) == (r"\d+", "N", str.strip)
    assert [rule.pattern for rule in RULE_VALIDATORS["redact"](r"\S+@\S+")] == [r"\S+@\S+"]
    assert RULE_VALIDATORS["matcher"](None) is None
    secrets = RULE_VALIDATORS["secrets"]({"headers": ["X-Gateway-Key"], "query": "token", "env": ["TOKEN"]})
    assert secrets == Secrets(env=("TOKEN",), headers=("x-gateway-key",), query=("token",))
    options = resolve_options(ignore=["systemPrompt"], secrets=secrets)
    assert (options.ignore, options.secrets, options.normalize, options.matcher) == (
        ("systemPrompt",),
        secrets,
        (),
        None,
    )
