"""Where cassettes go: one file per node id (classes, nested classes, parametrize ids, ids that differ
only in case, names too long in bytes), ``cassette=``, the shared tree, tests outside the rootdir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_blackbox.plugin.paths import (
    MAX_NAME,
    MAX_NAME_BYTES,
    case_collisions,
    cassette_name,
    legacy_cassette,
    module_folder,
    resolve_override,
    safe_name,
    trace_id_for,
)
from tests import OTHER_PLUGINS_OFF, QUIET

from .conftest import INNER_INI, exact, summary

XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]
JAPANESE = "天気" * 42 + "晴"  # 85 characters, 255 bytes in UTF-8
FINISHING_TESTS = f"""
import pytest


@pytest.mark.blackbox
def test_plain(blackbox):
    blackbox.finish(result="ok")


class TestGroup:
    @pytest.mark.blackbox
    def test_in_class(self, blackbox):
        blackbox.finish(result="ok")


class TestA:
    class TestInner:
        @pytest.mark.blackbox
        def test_x(self, blackbox):
            blackbox.finish(result="A")


class TestB:
    class TestInner:
        @pytest.mark.blackbox
        def test_x(self, blackbox):
            blackbox.finish(result="B")


@pytest.mark.parametrize("city", ["Paris", "a/b", "con", "x" * 150], ids=["Paris", "a/b", "con", "x" * 150])
@pytest.mark.blackbox
def test_param(blackbox, city):
    blackbox.finish(result=city)


@pytest.mark.parametrize("city", ["Lima", "lima"], ids=["Lima", "lima"])
@pytest.mark.blackbox
def test_case(blackbox, city):
    blackbox.finish(result=city)


@pytest.mark.blackbox
def test_{JAPANESE}(blackbox):
    blackbox.finish(result="晴れ")


@pytest.mark.blackbox(cassette="recordings/shared")
def test_override(blackbox):
    blackbox.finish(result="ok")
"""
TESTS = 12


def _record(pytester: pytest.Pytester, *args: str, tests: int = TESTS) -> None:
    pytester.makepyfile(test_paths=FINISHING_TESTS)
    result = pytester.runpytest(*QUIET, "--record-mode=once", *args)
    result.assert_outcomes(passed=tests)
    result.stdout.fnmatch_lines([exact(summary(recorded=tests))])


def _files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.suffix == ".json"
    )


def _results(root: Path) -> dict[str, str]:
    return {
        path: json.loads((root / path).read_text(encoding="utf-8"))["steps"][-1]["payload"]["result"]
        for path in _files(root)
    }


@pytest.mark.parametrize("xdist", XDIST)
def test_every_node_id_has_a_file_of_its_own_and_a_second_run_replays_it(
    bare_dir: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    """Recorded and replayed under the same ``xdist`` (each inner run under ``-n 2`` costs two worker
    start-ups, so one recording serves both checks)."""
    _record(bare_dir, *xdist)
    folder = "cassettes/test_paths"
    long_name = "test_param[" + "x" * 150 + "]"
    assert _results(bare_dir.path) == {
        f"{folder}/test_plain.json": "ok",
        f"{folder}/TestGroup.test_in_class.json": "ok",
        f"{folder}/TestA.TestInner.test_x.json": "A",
        f"{folder}/TestB.TestInner.test_x.json": "B",
        f"{folder}/test_param[Paris].json": "Paris",
        f"{folder}/{safe_name('test_param[a/b]')}.json": "a/b",
        f"{folder}/{safe_name('test_param[con]')}.json": "con",
        f"{folder}/{safe_name(long_name)}.json": "x" * 150,
        f"{folder}/{cassette_name('test_case[Lima]', {'test_case[Lima]'})}": "Lima",
        f"{folder}/{cassette_name('test_case[lima]', {'test_case[lima]'})}": "lima",
        f"{folder}/{safe_name('test_' + JAPANESE)}.json": "晴れ",
        "recordings/shared.json": "ok",
    }
    names = [Path(path).name for path in _files(bare_dir.path)]
    assert len({name.casefold() for name in names}) == len(names)  # apart on macOS and Windows too
    assert not [p for p in bare_dir.path.rglob(".*") if p.is_file()]  # no pending or temporary file left
    in_class = bare_dir.path / folder / "TestGroup.test_in_class.json"
    assert json.loads(in_class.read_text(encoding="utf-8"))["id"] == "TestGroup.test_in_class"

    result = bare_dir.runpytest(*QUIET, *xdist)
    result.assert_outcomes(passed=TESTS)
    result.stdout.fnmatch_lines([exact(summary(replayed=TESTS))])


@pytest.mark.parametrize("selected", ["test_case[Lima]", "TestA::TestInner::test_x"])
def test_a_test_named_on_the_command_line_finds_the_same_cassette(
    bare_dir: pytest.Pytester, selected: str
) -> None:
    _record(bare_dir)
    result = bare_dir.runpytest(*QUIET, f"test_paths.py::{selected}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(replayed=1, checked=False))])


SELECTED_TESTS = """
import os

import pytest


@pytest.mark.parametrize("city", ["Lima", "lima", "Oslo"], ids=["Lima", "lima", "Oslo"])
@pytest.mark.blackbox
def test_case(blackbox, city):
    blackbox.finish(result=city)
    assert os.environ.get("FAIL_CITY") != city


class TestTrip:
    @pytest.mark.blackbox
    def test_x(self, blackbox):
        blackbox.finish(result="TestTrip")


class Testtrip:
    @pytest.mark.blackbox
    def test_x(self, blackbox):
        blackbox.finish(result="Testtrip")
"""
#: Each selection, the tests it runs, and what runs first (``--lf`` needs a run in which Lima failed).
SELECTIONS = [
    pytest.param(("test_cities.py::test_case[Lima]",), ["test_case[Lima]"], id="node-id"),
    pytest.param(("-n", "2", "test_cities.py::test_case[Lima]"), ["test_case[Lima]"], id="node-id-xdist"),
    pytest.param(("test_cities.py::TestTrip::test_x",), ["TestTrip.test_x"], id="node-id-class"),
    pytest.param(("-k", "Lima"), ["test_case[Lima]", "test_case[lima]"], id="k"),
    pytest.param(
        ("--deselect", "test_cities.py::test_case[lima]", "--deselect", "test_cities.py::test_case[Oslo]"),
        ["test_case[Lima]", "TestTrip.test_x", "Testtrip.test_x"],
        id="deselect",
    ),
    pytest.param(("--lf",), ["test_case[Lima]"], id="lf"),
]
#: Every test of SELECTED_TESTS, and the ids that differ only in case (they get hashed names).
SELECTED_STEMS = [
    "test_case[Lima]",
    "test_case[lima]",
    "test_case[Oslo]",
    "TestTrip.test_x",
    "Testtrip.test_x",
]
SELECTED_COLLISIONS = case_collisions(SELECTED_STEMS)


@pytest.mark.parametrize(("selection", "stems"), SELECTIONS)
def test_a_selection_replays_the_cassettes_the_whole_run_recorded(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, selection: tuple[str, ...], stems: list[str]
) -> None:
    """However a run picks tests (a node id, ``-k``, ``--deselect``, ``--lf``, under ``-n 2``), a test
    looks for the file the whole module's recording wrote: the others are gone, so any other path
    would fail with "no cassette"."""
    bare_dir.makepyfile(test_cities=SELECTED_TESTS)
    recorded = bare_dir.runpytest(*OTHER_PLUGINS_OFF, "--record-mode=once")
    recorded.assert_outcomes(passed=len(SELECTED_STEMS))
    folder = bare_dir.path / "cassettes" / "test_cities"
    files = {stem: folder / cassette_name(stem, SELECTED_COLLISIONS) for stem in SELECTED_STEMS}
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in files.values())
    if "--lf" in selection:
        clean_env.setenv("FAIL_CITY", "Lima")
        failed = bare_dir.runpytest(*OTHER_PLUGINS_OFF)
        failed.assert_outcomes(passed=len(SELECTED_STEMS) - 1, failed=1)
        clean_env.delenv("FAIL_CITY")
    kept = {stem: files[stem].read_bytes() for stem in stems}
    for stem, path in files.items():
        if stem not in kept:
            path.unlink()
    result = bare_dir.runpytest(*OTHER_PLUGINS_OFF, *selection)
    result.assert_outcomes(passed=len(stems))
    result.stdout.fnmatch_lines([exact(summary(replayed=len(stems), checked=False))])
    assert {stem: files[stem].read_bytes() for stem in stems} == kept
    assert sorted(folder.iterdir()) == sorted(files[stem] for stem in stems)


def test_the_shared_cassette_tree(bare_dir: pytest.Pytester) -> None:
    bare_dir.makeini(INNER_INI + "blackbox_cassette_dir = recorded\n")
    bare_dir.mkdir("sub")
    (bare_dir.path / "sub" / "test_sub.py").write_text(
        "import pytest\n\n@pytest.mark.blackbox\ndef test_sub(blackbox):\n    blackbox.finish(result='ok')\n",
        encoding="utf-8",
    )
    _record(bare_dir, tests=TESTS + 1)
    files = _files(bare_dir.path)
    assert "recorded/test_paths/test_plain.json" in files
    assert "recorded/sub/test_sub/test_sub.json" in files
    assert "recordings/shared.json" in files  # cassette= is still relative to the test file
    assert not (bare_dir.path / "cassettes").exists()


OUTSIDE = """
import pytest


@pytest.mark.blackbox
def test_x(blackbox):
    blackbox.finish(result=__name__)
"""


@pytest.mark.parametrize("xdist", XDIST)
def test_tests_outside_the_rootdir_keep_their_folders_in_the_shared_tree(
    bare_dir: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    """``-c config/pytest.ini`` makes ``config/`` the rootdir: the test folders are outside it (and
    pytest gives both tests the same node id)."""
    (bare_dir.path / "config").mkdir()
    ini = INNER_INI + "addopts = --import-mode=importlib\nblackbox_cassette_dir = recorded\n"
    (bare_dir.path / "config" / "pytest.ini").write_text(ini, encoding="utf-8")
    for folder in ("one", "two"):
        (bare_dir.path / "tests" / folder).mkdir(parents=True)
        (bare_dir.path / "tests" / folder / "test_same.py").write_text(OUTSIDE, encoding="utf-8")
    args = (*QUIET, *xdist, "-c", "config/pytest.ini", "tests/one", "tests/two")
    recorded = bare_dir.runpytest(*args, "--record-mode=once")
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=2))])
    assert _files(bare_dir.path / "config" / "recorded") == [
        "_up/tests/one/test_same/test_x.json",
        "_up/tests/two/test_same/test_x.json",
    ]
    replayed = bare_dir.runpytest(*args)
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=2))])


NESTED = """
import pytest


class TestA:
    class TestInner:
        @pytest.mark.blackbox
        def test_x(self, blackbox):
            blackbox.finish(result="A")
"""


def test_a_cassette_the_old_rule_put_elsewhere_is_named_with_the_move(bare_dir: pytest.Pytester) -> None:
    bare_dir.makepyfile(test_nested=NESTED)
    bare_dir.runpytest(*QUIET, "--record-mode=once").assert_outcomes(passed=1)
    folder = bare_dir.path / "cassettes" / "test_nested"
    (folder / "TestA.TestInner.test_x.json").rename(folder / "TestInner.test_x.json")  # where 0.1 wrote it
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            exact(
                "blackbox: no cassette at cassettes/test_nested/TestA.TestInner.test_x.json, "
                'and record mode "none" only replays'
            ),
            exact("record it with: pytest test_nested.py::TestA::TestInner::test_x --record-mode=once"),
            exact(
                "an earlier version of pytest-blackbox recorded this test to "
                "cassettes/test_nested/TestInner.test_x.json; move it: git mv "
                '"cassettes/test_nested/TestInner.test_x.json" '
                '"cassettes/test_nested/TestA.TestInner.test_x.json"'
            ),
        ],
        consecutive=True,
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("test_plain", "test_plain"),
        ("TestGroup.test_in_class", "TestGroup.test_in_class"),
        ("test_x[Paris-1]", "test_x[Paris-1]"),
        ("test_x[été]", "test_x[été]"),
        ("t" * MAX_NAME, "t" * MAX_NAME),
        ("é" * (MAX_NAME_BYTES // 2), "é" * (MAX_NAME_BYTES // 2)),
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


@pytest.mark.parametrize("length", [MAX_NAME_BYTES // 3 + 1, 85, 200])
def test_names_too_long_in_bytes_are_cut_at_a_character_and_hashed(length: int) -> None:
    name = "晴" * length
    cleaned = safe_name(name)
    assert len(cleaned.encode("utf-8")) <= MAX_NAME_BYTES
    assert cleaned.startswith("晴") and cleaned[-11] == "-"
    assert safe_name(name + "x") != cleaned
    pending = f".{cleaned}.json.4194304.pending"
    assert len(f".{pending}.0123456789ab.tmp".encode()) <= 255  # the longest name it gets on disk


def test_ids_that_differ_only_in_case_are_hashed_both() -> None:
    stems = ["test_x[A]", "test_x[a]", "test_x[b]", "test_x[c/d]", "TestA.test_y"]
    collisions = case_collisions(stems)
    assert collisions == {"test_x[A]", "test_x[a]"}
    names = [cassette_name(stem, collisions) for stem in stems]
    assert names[2:] == ["test_x[b].json", safe_name("test_x[c/d]") + ".json", "TestA.test_y.json"]
    assert names[0].startswith("test_x[A]-") and names[1].startswith("test_x[a]-")
    assert len({name.casefold() for name in names}) == len(names)


def test_folders_and_overrides(tmp_path: Path) -> None:
    test_file = tmp_path / "tests" / "test_agent.py"
    assert module_folder(test_file) == tmp_path / "tests/cassettes/test_agent"
    shared = (tmp_path / "recorded", tmp_path)
    assert module_folder(test_file, shared) == tmp_path / "recorded/tests/test_agent"
    outside = (tmp_path / "config" / "recorded", tmp_path / "config")
    assert module_folder(test_file, outside) == tmp_path / "config/recorded/_up/tests/test_agent"
    assert resolve_override(test_file.parent, "data/run") == tmp_path / "tests/data/run.json"
    assert resolve_override(test_file.parent, tmp_path / "abs.json") == tmp_path / "abs.json"
    assert trace_id_for(Path("x/TestGroup.test_in_class.json")) == "TestGroup.test_in_class"
    assert legacy_cassette(test_file, "TestInner", "test_x", None) == (
        tmp_path / "tests/cassettes/test_agent/TestInner.test_x.json"
    )
    assert (
        legacy_cassette(test_file, None, "test_a", outside)
        == tmp_path / "config/recorded/test_agent/test_a.json"
    )
