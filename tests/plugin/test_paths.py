"""Where cassettes go: default layout, classes, parametrize ids, ``cassette=``, the shared tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_blackbox.plugin.paths import MAX_NAME, default_cassette, resolve_override, safe_name, trace_id_for

from .conftest import INNER_INI, QUIET, exact, summary

FINISHING_TESTS = """
import pytest


@pytest.mark.blackbox
def test_plain(blackbox):
    blackbox.finish(result="ok")


class TestGroup:
    @pytest.mark.blackbox
    def test_in_class(self, blackbox):
        blackbox.finish(result="ok")


@pytest.mark.parametrize("city", ["Paris", "a/b", "con", "x" * 150], ids=["Paris", "a/b", "con", "x" * 150])
@pytest.mark.blackbox
def test_param(blackbox, city):
    blackbox.finish(result=city)


@pytest.mark.blackbox(cassette="recordings/shared")
def test_override(blackbox):
    blackbox.finish(result="ok")
"""


def _record(pytester: pytest.Pytester, tests: int = 7) -> None:
    pytester.makepyfile(test_paths=FINISHING_TESTS)
    result = pytester.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(passed=tests)
    result.stdout.fnmatch_lines([exact(summary(recorded=tests))])


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))


def test_the_default_layout(bare_dir: pytest.Pytester) -> None:
    _record(bare_dir)
    long_name = "test_param[" + "x" * 150 + "]"
    assert _files(bare_dir.path) == sorted(
        [
            "cassettes/test_paths/test_plain.json",
            "cassettes/test_paths/TestGroup.test_in_class.json",
            "cassettes/test_paths/test_param[Paris].json",
            f"cassettes/test_paths/{safe_name('test_param[a/b]')}.json",
            f"cassettes/test_paths/{safe_name('test_param[con]')}.json",
            f"cassettes/test_paths/{safe_name(long_name)}.json",
            "recordings/shared.json",
        ]
    )
    shared = json.loads((bare_dir.path / "recordings/shared.json").read_text(encoding="utf-8"))
    assert shared["id"] == "shared"
    in_class = bare_dir.path / "cassettes/test_paths/TestGroup.test_in_class.json"
    assert json.loads(in_class.read_text(encoding="utf-8"))["id"] == "TestGroup.test_in_class"


def test_the_shared_cassette_tree(bare_dir: pytest.Pytester) -> None:
    bare_dir.makeini(INNER_INI + "blackbox_cassette_dir = recorded\n")
    bare_dir.mkdir("sub")
    (bare_dir.path / "sub" / "test_sub.py").write_text(
        "import pytest\n\n@pytest.mark.blackbox\ndef test_sub(blackbox):\n    blackbox.finish(result='ok')\n",
        encoding="utf-8",
    )
    _record(bare_dir, tests=8)
    files = _files(bare_dir.path)
    assert "recorded/test_paths/test_plain.json" in files
    assert "recorded/sub/test_sub/test_sub.json" in files
    assert "recordings/shared.json" in files  # cassette= is still relative to the test file
    assert not (bare_dir.path / "cassettes").exists()


def test_a_second_run_replays_every_layout(bare_dir: pytest.Pytester) -> None:
    _record(bare_dir)
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines([exact(summary(replayed=7))])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("test_plain", "test_plain"),
        ("TestGroup.test_in_class", "TestGroup.test_in_class"),
        ("test_x[Paris-1]", "test_x[Paris-1]"),
        ("test_x[été]", "test_x[été]"),
    ],
)
def test_safe_names_stay_as_they_are(name: str, expected: str) -> None:
    assert safe_name(name) == expected


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("test_x[a/b]", "test_x[a_b]-"),
        ("test_x[a:b]", "test_x[a_b]-"),
        ('test_x[<>"|?*]', "test_x[______]-"),
        ("test_x[tab\there]", "test_x[tab_here]-"),
        ("CON", "_CON-"),
        ("nul.txt", "_nul.txt-"),
        ("trailing. ", "trailing-"),
    ],
)
def test_changed_names_end_in_a_stable_hash(name: str, head: str) -> None:
    cleaned = safe_name(name)
    assert cleaned.startswith(head)
    assert len(cleaned) == len(head) + 10
    assert safe_name(name) == cleaned


def test_names_that_clean_alike_stay_different() -> None:
    assert safe_name("test_x[a/b]") != safe_name("test_x[a:b]")
    assert safe_name("test_x[a/b]") != "test_x[a_b]"


def test_long_names_are_shortened_with_a_hash() -> None:
    long_a, long_b = "test_" + "a" * 200, "test_" + "a" * 199 + "b"
    assert len(safe_name(long_a)) == MAX_NAME
    assert safe_name(long_a) != safe_name(long_b)
    assert safe_name(long_a).startswith("test_aaaa")
    assert safe_name("t" * MAX_NAME) == "t" * MAX_NAME


def test_default_cassette_and_overrides(tmp_path: Path) -> None:
    test_file = tmp_path / "tests" / "test_agent.py"
    assert default_cassette(test_file, None, "test_a") == tmp_path / "tests/cassettes/test_agent/test_a.json"
    assert (
        default_cassette(test_file, "TestX", "test_a")
        == tmp_path / "tests/cassettes/test_agent/TestX.test_a.json"
    )
    shared = (tmp_path / "recorded", tmp_path)
    assert (
        default_cassette(test_file, None, "test_a", shared)
        == tmp_path / "recorded/tests/test_agent/test_a.json"
    )
    assert resolve_override(test_file, "data/run") == tmp_path / "tests/data/run.json"
    assert resolve_override(test_file, tmp_path / "abs.json") == tmp_path / "abs.json"
    assert trace_id_for(Path("x/TestGroup.test_in_class.json")) == "TestGroup.test_in_class"
