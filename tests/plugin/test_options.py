"""Options, ini keys and markers: validation, one precedence (CLI > closest marker > ini > default)."""

from __future__ import annotations

import pytest

from tests import QUIET

from .conftest import INNER_INI, MARKER_USAGE, Suite, exact, summary

LENIENT = """
DEF test_lenient(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, city())
"""


def _missing(test: str) -> list[str]:
    """The two lines of a missing-cassette failure; ``test`` is ``name`` or ``Class.name``."""
    return [
        exact(
            f"blackbox: no cassette at cassettes/test_weather/{test}.json, "
            'and record mode "none" only replays'
        ),
        exact(f"record it with: pytest test_weather.py::{test.replace('.', '::')} --record-mode=once"),
    ]


NESTED_MARKERS = """
pytestmark = pytest.mark.blackbox(record_mode="none")


class TestCities:
    pytestmark = pytest.mark.blackbox(record_mode="once")

    DEF test_class_marker(self, blackbox, anthropic_options):
        assert AWAIT ask(blackbox, anthropic_options, "Paris")

    @pytest.mark.blackbox(record_mode="none")
    DEF test_function_marker(self, blackbox, anthropic_options):
        assert AWAIT ask(blackbox, anthropic_options, "Paris")


DEF test_module_marker(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, "Paris")
"""


def test_the_closest_marker_wins_and_the_command_line_wins_over_all(suite: Suite) -> None:
    suite.write(body=NESTED_MARKERS)
    result = suite.run()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(_missing("TestCities.test_function_marker"), consecutive=True)
    result.stdout.fnmatch_lines(_missing("test_module_marker"), consecutive=True)
    result.stdout.fnmatch_lines([exact(summary(recorded=1, missing=2))])
    assert suite.cassette(test="TestCities.test_class_marker").is_file()

    forced = suite.run("--record-mode=once")
    forced.assert_outcomes(passed=3)
    forced.stdout.fnmatch_lines([exact(summary(replayed=1, recorded=2))])

    replay = suite.run("--record-mode=none")  # the CLI overrides the class marker's "once" too
    replay.assert_outcomes(passed=3)
    replay.stdout.fnmatch_lines([exact(summary(replayed=3))])


def test_the_ini_record_mode_applies_unless_a_marker_says_otherwise(suite: Suite) -> None:
    suite.pytester.makeini(INNER_INI + "blackbox_record_mode = once\n")
    suite.write(
        body=LENIENT
        + """
@pytest.mark.blackbox(record_mode="none")
DEF test_marked(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, city())
"""
    )
    result = suite.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(_missing("test_marked"), consecutive=True)
    result.stdout.fnmatch_lines([exact(summary(recorded=1, missing=1))])


@pytest.mark.parametrize(
    ("ini", "marker", "option", "expected"),
    [
        ("", "", "", "diverged"),
        ("", 'match="sequence"', "", "replayed"),
        ("", 'match="sequence"', "--blackbox-match=strict", "diverged"),
        ("blackbox_match = sequence", "", "", "replayed"),
        ("blackbox_match = sequence", 'match="strict"', "", "diverged"),
        ("blackbox_match = strict", "", "--blackbox-match=sequence", "replayed"),
    ],
)
def test_match_precedence(sync_suite: Suite, ini: str, marker: str, option: str, expected: str) -> None:
    sync_suite.pytester.makeini(f"{INNER_INI}{ini}\n")
    sync_suite.write(body=f"\n@pytest.mark.blackbox({marker})" + LENIENT)
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    sync_suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = sync_suite.run(*([option] if option else []))
    counts = {"replayed": summary(replayed=1, relaxed=1), "diverged": summary(diverged=1)}
    result.stdout.fnmatch_lines([exact(counts[expected])])
    result.assert_outcomes(**({"passed": 1} if expected == "replayed" else {"failed": 1}))


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        ('cassete="x"', "unknown argument(s) cassete"),
        ('"x.json"', "it takes keyword arguments only"),
        (
            'record_mode="sometimes"',
            """record_mode='sometimes' must be one of "none", "once", "new_episodes", "all", "rewrite\"""",
        ),
        (
            'match="fuzzy"',
            """match='fuzzy' must be one of "strict", "sequence", """
            "or a function (recorded_model_input, live_model_input) -> None | str",
        ),
        ("cassette=3", "cassette=3 must be a non-empty path"),
    ],
)
def test_bad_marker_arguments_are_a_usage_error(bare_dir: pytest.Pytester, marker: str, problem: str) -> None:
    bare_dir.makepyfile(
        test_markers=f"""
import pytest

@pytest.mark.blackbox({marker})
def test_typo():
    pass
"""
    )
    result = bare_dir.runpytest(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            exact(
                f"ERROR: test_markers.py::test_typo: bad @pytest.mark.blackbox: {problem}; "
                f"usage: {MARKER_USAGE}"
            )
        ]
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "blackbox_record_mode = sometimes",
            'bad ini value: blackbox_record_mode=\'sometimes\' must be one of "none", "once", '
            '"new_episodes", "all", "rewrite"',
        ),
        (
            "blackbox_match = fuzzy",
            """bad ini value: blackbox_match='fuzzy' must be one of "strict", "sequence\"""",
        ),
        (
            "blackbox_media = raw",
            """bad ini value: blackbox_media='raw' must be one of "digest", "inline\"""",
        ),
        (
            "blackbox_drop_fields = choices[x]",
            "bad ini value: blackbox_drop_fields='choices[x]' must be a list of field paths such as "
            "choices[].message.foo (a response's) or request.foo (a request's)",
        ),
    ],
)
def test_bad_ini_values_are_a_usage_error(pytester: pytest.Pytester, line: str, message: str) -> None:
    pytester.makeini(f"{INNER_INI}{line}\n")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([exact(f"ERROR: {message}")])


def test_bad_option_values_are_refused_by_pytest(bare_dir: pytest.Pytester) -> None:
    result = bare_dir.runpytest(*QUIET, "--record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--record-mode: invalid choice: 'sometimes'*"])


WITH_PYTEST_RECORDING = [
    pytest.param((), id="pytest-recording-loaded"),
    pytest.param(("-p", "no:recording"), id="pytest-recording-disabled"),
]


@pytest.mark.parametrize("plugins", WITH_PYTEST_RECORDING)
def test_record_mode_is_shared_with_pytest_recording(sync_suite: Suite, plugins: tuple[str, ...]) -> None:
    sync_suite.write()
    help_text = sync_suite.run(*plugins, "--help")
    assert help_text.ret == pytest.ExitCode.OK
    assert sum(line.lstrip().startswith("--record-mode=") for line in help_text.stdout.lines) == 1
    recorded = sync_suite.run(*plugins, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    plugin_line = next(line for line in recorded.stdout.lines if line.startswith("plugins:"))
    assert ("recording-" in plugin_line) is (plugins == ())


@pytest.mark.parametrize(
    "plugins",
    [("-p", "recording", "-p", "blackbox"), ("-p", "blackbox", "-p", "recording"), ("-p", "blackbox")],
    ids=["recording-first", "blackbox-first", "blackbox-alone"],
)
def test_record_mode_without_plugin_autoload(sync_suite: Suite, plugins: tuple[str, ...]) -> None:
    sync_suite.pytester._monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    sync_suite.write()
    result = sync_suite.run(*plugins, "--record-mode=once")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(recorded=1))])
