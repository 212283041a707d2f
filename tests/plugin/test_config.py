"""Configuration the pytest way: the ``blackbox_config`` and ``blackbox_cassette_dir`` fixtures at any
scope, the same keys on the marker, one precedence (command line > marker > fixture > ini > default),
and every bad key or value refused with one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import Secrets
from pytest_blackbox.plugin.config import Settings, resolve_settings
from pytest_blackbox.plugin.decision import Decision
from pytest_blackbox.plugin.testrun import _session_options
from tests import OTHER_PLUGINS_OFF, QUIET

from .conftest import INNER_INI, MARKER_USAGE, Counted, exact, summary

MISSING = (
    'blackbox: no cassette at cassettes/test_weather/test_weather.json, and record mode "none" only replays'
)
CONFIGURED = """
@pytest.mark.blackbox(MARKER)
DEF test_weather(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, city())
"""


def _configured(counted: Counted, *, marker: str = "", module: str = "", conftest: str = "") -> None:
    body = CONFIGURED.replace("MARKER", marker)
    if module:
        body = f"\n@pytest.fixture(scope='module')\ndef blackbox_config():\n    return {module}\n" + body
    counted.write(body=body)
    if conftest:
        source = (counted.pytester.path / "conftest.py").read_text(encoding="utf-8")
        scoped = f"\n\n@pytest.fixture(scope='session')\ndef blackbox_config():\n    return {conftest}\n"
        (counted.pytester.path / "conftest.py").write_text(source + scoped, encoding="utf-8")


@pytest.mark.parametrize(
    ("ini", "conftest", "module", "marker", "option", "expected"),
    [
        ("", "", "", "", "", "missing"),
        ("once", "", "", "", "", "recorded"),
        ("once", "{'record_mode': 'none'}", "", "", "", "missing"),
        ("", "{'record_mode': 'once'}", "", "", "", "recorded"),
        ("", "{'record_mode': 'none'}", "{'record_mode': 'once'}", "", "", "recorded"),
        ("", "{'record_mode': 'once'}", "{'record_mode': 'once'}", "record_mode='none'", "", "missing"),
        ("", "", "", "record_mode='none'", "--record-mode=once", "recorded"),
    ],
    ids=[
        "default",
        "ini",
        "session-fixture",
        "session-fixture-over-default",
        "module-fixture",
        "marker",
        "cli",
    ],
)
def test_record_mode_precedence(
    counted_sync: Counted, ini: str, conftest: str, module: str, marker: str, option: str, expected: str
) -> None:
    if ini:
        counted_sync.pytester.makeini(f"{INNER_INI}blackbox_record_mode = {ini}\n")
    _configured(counted_sync, marker=marker, module=module, conftest=conftest)
    result = counted_sync.run(*([option] if option else []))
    if expected == "missing":
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([exact(MISSING), exact(summary(missing=1))])
        assert counted_sync.sent == 0
    else:
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([exact(summary(recorded=1))])


@pytest.mark.parametrize(
    ("dir_fixture", "config_fixture", "marker", "folder"),
    [
        ("'from-dir-fixture'", "", "", "from-dir-fixture"),
        ("'from-dir-fixture'", "{'cassette_dir': 'from-config'}", "", "from-config"),
        (
            "'from-dir-fixture'",
            "{'cassette_dir': 'from-config'}",
            "cassette_dir='from-marker'",
            "from-marker",
        ),
        ("None", "{}", "", "cassettes/test_weather"),
    ],
    ids=["dir-fixture", "config-over-dir-fixture", "marker-over-both", "defaults"],
)
def test_cassette_dir_precedence(
    counted: Counted, dir_fixture: str, config_fixture: str, marker: str, folder: str
) -> None:
    _configured(counted, marker=marker, module=config_fixture)
    source = (counted.pytester.path / "test_weather.py").read_text(encoding="utf-8")
    dir_source = f"\n\n@pytest.fixture\ndef blackbox_cassette_dir():\n    return {dir_fixture}\n"
    (counted.pytester.path / "test_weather.py").write_text(source + dir_source, encoding="utf-8")
    counted.run("--record-mode=once").assert_outcomes(passed=1)
    assert (counted.pytester.path / folder / "test_weather.json").is_file()
    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert counted.sent == 3


def test_a_session_wide_cassette_dir_never_lets_two_tests_share_a_file(counted_sync: Counted) -> None:
    _configured(counted_sync, conftest="{'cassette_dir': 'all-cassettes'}")
    counted_sync.pytester.makepyfile(
        test_again=(counted_sync.pytester.path / "test_weather.py").read_text(encoding="utf-8")
    )
    result = counted_sync.run("--record-mode=once")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_weather _*",
            exact(
                "blackbox: test_weather.py::test_weather would use the cassette of "
                "test_again.py::test_weather: all-cassettes/test_weather.json"
            ),
            exact(
                "each test needs a cassette of its own: give this test another cassette_dir, or name its "
                "cassette with cassette= (tests may share a cassette only when they name it)"
            ),
            exact(summary(recorded=1, invalid=1)),
        ],
        consecutive=True,
    )
    assert counted_sync.sent == 3


def test_two_xdist_workers_sharing_a_derived_cassette_fail_the_run(counted_sync: Counted) -> None:
    """Each worker sees only its own tests; the controller sees both claims and fails the run."""
    _configured(counted_sync, conftest="{'cassette_dir': 'all-cassettes'}")
    counted_sync.pytester.makepyfile(
        test_again=(counted_sync.pytester.path / "test_weather.py").read_text(encoding="utf-8")
    )
    both = (
        "blackbox: test_again.py::test_weather and test_weather.py::test_weather each used the "
        "cassette all-cassettes/test_weather.json"
    )
    shared = [
        exact(both),
        exact(
            "each test needs a cassette of its own: give all but one of them another cassette_dir, or "
            "name its cassette with cassette= (tests may share a cassette only when they name it)"
        ),
    ]
    # --dist loadfile: one test file per worker, so the two tests never meet on one worker. They race
    # for the one file: the second records it again, finds it unchanged, or replays it.
    recorded = counted_sync.run("-n", "2", "--dist", "loadfile", "--record-mode=once")
    recorded.assert_outcomes(passed=2)
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED
    recorded.stdout.fnmatch_lines(["blackbox: * replayed, * recorded, *", *shared], consecutive=True)
    recorded_calls = counted_sync.sent
    assert recorded_calls in (3, 6)

    counted_sync.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted_sync.run("-n", "2", "--dist", "loadfile")
    replayed.assert_outcomes(passed=2)
    assert replayed.ret == pytest.ExitCode.TESTS_FAILED
    replayed.stdout.fnmatch_lines([exact(summary(replayed=2)), *shared], consecutive=True)
    assert counted_sync.sent == recorded_calls

    serial = counted_sync.run()  # one process: the second test fails at set-up, the summary adds nothing
    serial.assert_outcomes(passed=1, failed=1)
    assert both not in serial.stdout.str()


def test_match_and_allowed_hosts_from_the_fixture(counted_sync: Counted) -> None:
    counted_sync.write(body=CONFIGURED.replace("MARKER", ""))
    counted_sync.run("--record-mode=once").assert_outcomes(passed=1)
    monkeypatch = counted_sync.pytester._monkeypatch
    monkeypatch.setenv("WEATHER_CITY", "Oslo")
    monkeypatch.setenv("CI", "1")
    counted_sync.run().assert_outcomes(failed=1)  # strict: the question changed
    _configured(counted_sync, conftest="{'match': 'sequence', 'allowed_hosts': ['192.0.2.1']}")
    replayed = counted_sync.run()
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1, relaxed=1))])
    assert counted_sync.sent == 3


EXPOSED = """
import pytest


@pytest.mark.blackbox(record_mode="once")
def test_exposed(blackbox):
    print("cassette:", blackbox.cassette_path.relative_to(blackbox.cassette_path.parents[2]).as_posix())
    print("record mode:", blackbox.record_mode, "mode:", blackbox.mode)
    blackbox.finish(result="ok")
"""


def test_the_fixture_exposes_the_cassette_path_and_modes(bare_dir: pytest.Pytester) -> None:
    bare_dir.makepyfile(test_exposed=EXPOSED)
    first = bare_dir.runpytest(*QUIET, "-s")
    first.stdout.fnmatch_lines(
        ["*cassette: cassettes/test_exposed/test_exposed.json", "record mode: once mode: record*"]
    )
    second = bare_dir.runpytest(*QUIET, "-s")
    second.stdout.fnmatch_lines(["*record mode: once mode: replay*"])


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        (
            "ignore=3",
            'ignore must be a list of request field paths such as "systemPrompt" or '
            '"messages[*].content[0].text"; got int',
        ),
        ("ignore=['']", 'ignore: an empty path; name a request field, e.g. "systemPrompt"'),
        (
            "normalize=[('(', 'x')]",
            "normalize: '(' is not a valid regular expression "
            "(missing ), unterminated subpattern at position 0)",
        ),
        (
            "normalize=['a']",
            "normalize must be a list of (pattern, replacement) pairs and/or functions str -> str; got an "
            "item of type str (a single pair goes in a list: normalize=[(pattern, replacement)])",
        ),
        (
            "redact=[3]",
            "redact must be a list of regular expressions and/or functions str -> str; "
            "got an item of type int",
        ),
        (
            "redact={'a': 1}",
            "redact must be a list of regular expressions and/or functions str -> str; got dict",
        ),
        (
            "secrets=[1]",
            'secrets must be a mapping such as {"env": [...], "values": [...], "headers": [...], '
            '"query": [...]} or pytest_blackbox.Secrets; got list',
        ),
        (
            "allowed_hosts=['https://api.example.com/v1']",
            "allowed_hosts: 'https://api.example.com/v1' is not a host name or IP address "
            '(write the host only, such as "api.example.com" or "*.internal": no scheme, port or path)',
        ),
        ("cassette_dir=''", "cassette_dir='' must be a non-empty path"),
        (r"cassette='a\x00b'", r"cassette='a\x00b' must be a path without a NUL character (\x00)"),
        (
            "redact=['']",
            "redact: the pattern '' matches the empty text, so it would apply between every two characters; "
            "give a pattern that matches at least one character",
        ),
        (
            "match=3",
            'match=3 must be one of "strict", "sequence", or a function (recorded_model_input, '
            "live_model_input) -> None | str",
        ),
        ("media='bytes'", 'media=\'bytes\' must be one of "digest", "inline"'),
        (
            "drop_fields=[3]",
            "drop_fields=[3] must be a list of field paths such as choices[].message.foo (a response's) "
            "or request.foo (a request's)",
        ),
    ],
    ids=lambda value: value.split("=")[0] if "=" in value and len(value) < 60 else "",
)
def test_bad_marker_values_are_a_usage_error(bare_dir: pytest.Pytester, marker: str, problem: str) -> None:
    bare_dir.makepyfile(
        test_markers=f"import pytest\n\n@pytest.mark.blackbox({marker})\ndef test_x():\n    pass\n"
    )
    result = bare_dir.runpytest(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            exact(
                f"ERROR: test_markers.py::test_x: bad @pytest.mark.blackbox: {problem}; usage: {MARKER_USAGE}"
            )
        ]
    )


FIXTURE_USAGE = (
    "usage: blackbox_config returns a dict with any of the keys cassette_dir, record_mode, match, ignore, "
    "normalize, redact, secrets, allowed_hosts, media, drop_fields"
)


@pytest.mark.parametrize("scope", ["function", "module", "session"])
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{'record': 'once'}", "unknown key(s) record"),
        ("['once']", "it returned list, not a dict"),
        ("{'cassette': 'x'}", "cassette is set per test: give it on the test's @pytest.mark.blackbox"),
        (
            "{'record_mode': 'sometimes'}",
            'record_mode=\'sometimes\' must be one of "none", "once", "new_episodes", "all", "rewrite"',
        ),
        (
            "{'redact': ['[']}",
            "redact: '[' is not a valid regular expression (unterminated character set at position 0)",
        ),
    ],
)
def test_a_bad_fixture_value_errors_the_test_at_set_up(
    bare_dir: pytest.Pytester, scope: str, value: str, problem: str
) -> None:
    bare_dir.makeconftest(
        f"import pytest\n\n@pytest.fixture(scope={scope!r})\ndef blackbox_config():\n    return {value}\n"
    )
    bare_dir.makepyfile(test_x="import pytest\n\n@pytest.mark.blackbox\ndef test_x():\n    pass\n")
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_x*",
            exact(f"test_x.py::test_x: bad blackbox_config: {problem}; {FIXTURE_USAGE}"),
        ],
        consecutive=True,
    )


def test_a_bad_cassette_dir_fixture_errors_the_test_at_set_up(bare_dir: pytest.Pytester) -> None:
    bare_dir.makeconftest("import pytest\n\n@pytest.fixture\ndef blackbox_cassette_dir():\n    return 42\n")
    bare_dir.makepyfile(test_x="def test_x(blackbox):\n    pass\n")
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            exact(
                "test_x.py::test_x: bad blackbox_cassette_dir: cassette_dir=42 must be a non-empty path; "
                "usage: it returns the folder of the cassettes, or None"
            )
        ]
    )


def test_help_shows_the_options_and_the_precedence(bare_dir: pytest.Pytester) -> None:
    result = bare_dir.runpytest(*QUIET, "--help")
    text = re.sub(r"\s+", " ", result.stdout.str())
    assert (
        "record and replay agent runs (pytest-blackbox); settings: command line > marker (test > class > "
        "module) > blackbox_config fixture > ini > default:" in text
    )
    for option in ("--blackbox-disable", "--blackbox-block-network", "--blackbox-allowed-hosts=HOSTS"):
        assert option in text
    for ini in ("blackbox_allowed_hosts", "blackbox_block_network", "blackbox_cassette_dir"):
        assert ini in text


# -- the settings the engine gets -----------------------------------------------------------------


def _settings(pytester: pytest.Pytester, marker: str, fixture: dict[str, Any], *args: str) -> Settings:
    pytester.makeini(INNER_INI)
    source = f"import pytest\n\n@pytest.mark.blackbox({marker})\ndef test_x():\n    pass\n"
    module = pytester.getmodulecol(source, configargs=(*OTHER_PLUGINS_OFF, *args))
    [item] = pytester.genitems([module])
    return resolve_settings(item, fixture)


def redact_emails(text: str) -> str:
    return text


def same_enough(recorded: Any, live: Any) -> str | None:
    return None


def test_engine_rules_are_kept_under_the_session_options_names(pytester: pytest.Pytester) -> None:
    fixture = {"ignore": "metadata.user_id", "redact": [r"\d{4}", redact_emails], "match": same_enough}
    settings = _settings(
        pytester,
        "normalize=[(r'\\d+', 'N')], secrets={'env': ['MY_TOKEN']}, ignore=['messages[*].id']",
        fixture,
    )
    assert settings.engine_rules == {
        "ignore": ("messages[*].id",),  # the marker is closer than the fixture
        "normalize": ((re.compile(r"\d+"), "N"),),
        "redact": (re.compile(r"\d{4}"), redact_emails),
        "secrets": Secrets(env=("MY_TOKEN",)),
        "matcher": same_enough,
    }
    assert settings.match == "strict"


def test_the_match_option_wins_over_a_matcher(pytester: pytest.Pytester) -> None:
    settings = _settings(pytester, "", {"match": same_enough}, "--blackbox-match=sequence")
    assert settings.match == "sequence"
    assert settings.engine_rules == {}


def test_allowed_hosts_from_the_command_line_add_to_the_tests_own(pytester: pytest.Pytester) -> None:
    settings = _settings(
        pytester,
        "allowed_hosts=['DB.internal']",
        {"allowed_hosts": ["ignored.example"]},
        "--blackbox-allowed-hosts=a,b",
    )
    assert settings.allowed_hosts == ("db.internal", "a", "b")


def test_drop_fields_from_the_command_line_add_to_the_tests_own(pytester: pytest.Pytester) -> None:
    """Indexes are read as any index, the way a refusal's path is pasted into the setting."""
    settings = _settings(
        pytester,
        "drop_fields=['choices[0].message.x_new']",
        {"drop_fields": ["ignored"]},
        "--blackbox-drop-fields=x_top,choices[].delta.x_new",
    )
    assert settings.drop_fields == ("choices[].message.x_new", "x_top", "choices[].delta.x_new")


def test_drop_fields_from_the_ini_are_one_per_line_or_comma_separated(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"{INNER_INI}blackbox_drop_fields =\n    x_groq, usage.queue_time\n    provider\n")
    module = pytester.getmodulecol("def test_x():\n    pass\n", configargs=OTHER_PLUGINS_OFF)
    [item] = pytester.genitems([module])
    assert resolve_settings(item).drop_fields == ("x_groq", "usage.queue_time", "provider")


@pytest.mark.parametrize(
    ("ini", "marker", "fixture", "args", "expected"),
    [
        ("", "", {}, (), "digest"),
        ("blackbox_media = inline", "", {}, (), "inline"),
        ("blackbox_media = inline", "", {"media": "digest"}, (), "digest"),
        ("", "media='inline'", {"media": "digest"}, (), "inline"),
        ("", "media='inline'", {}, ("--blackbox-media=digest",), "digest"),
    ],
    ids=["default", "ini", "fixture-over-ini", "marker-over-fixture", "option-over-marker"],
)
def test_the_media_setting_follows_the_precedence(
    pytester: pytest.Pytester,
    ini: str,
    marker: str,
    fixture: dict[str, Any],
    args: tuple[str, ...],
    expected: str,
) -> None:
    pytester.makeini(f"{INNER_INI}{ini}\n")
    source = f"import pytest\n\n@pytest.mark.blackbox({marker})\ndef test_x():\n    pass\n"
    module = pytester.getmodulecol(source, configargs=(*OTHER_PLUGINS_OFF, *args))
    [item] = pytester.genitems([module])
    assert resolve_settings(item, fixture).media == expected


def test_a_recording_session_gets_the_tests_media_setting(pytester: pytest.Pytester, tmp_path: Path) -> None:
    settings = _settings(pytester, "media='inline'", {})
    options = _session_options(Decision("record", writes=True), settings, tmp_path / "pending.json")
    assert (options.mode, options.media) == ("record", "inline")


def test_the_session_is_function_scoped_as_documented(bare_dir: pytest.Pytester) -> None:
    """docs/pytest.md says a wider fixture cannot ask for it, and gets pytest's own error."""
    bare_dir.makepyfile(
        test_scope="import pytest\n\n@pytest.fixture(scope='module')\ndef wide(blackbox):\n"
        "    return blackbox\n\n\ndef test_scope(wide):\n    pass\n"
    )
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "ScopeMismatch: You tried to access the function scoped fixture blackbox with a module scoped "
            "request object*"
        ]
    )
