"""``blackbox view``: where the page goes, what it refuses, and that a failing cassette still renders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_blackbox.cli import main
from tests import vector_path

from .conftest import FORK_CHILD, FORK_PARENT, SUCCESS, parse_page, raw_vector


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.chdir(tmp_path)


def test_one_cassette_goes_to_its_stem_in_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(vector_path(SUCCESS))]) == 0
    written = tmp_path / "success-tool-use.v2.html"
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "wrote success-tool-use.v2.html (15 step(s), verify: pass)",
        f"open it: {written.as_uri()}",
    ]
    page = parse_page(written.read_text(encoding="utf-8"))
    assert len(page.find_all("li", "step")) == 15
    assert page.one("span", "verify").text() == "verify: pass"
    assert page.one("dl", "meta").find_all("dd")[-1].text() == str(vector_path(SUCCESS))


def test_a_cassette_symlink_says_where_it_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kept").mkdir()
    shutil.copy(vector_path(SUCCESS), tmp_path / "kept" / "real.json")
    (tmp_path / "run.json").symlink_to(Path("kept") / "real.json")
    assert main(["view", "run.json"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "run.json is a symbolic link to kept/real.json",
        "wrote run.html (15 step(s), verify: pass)",
    ]


def test_two_cassettes_write_a_diff_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(vector_path(FORK_PARENT)), str(vector_path(FORK_CHILD))]) == 0
    written = tmp_path / "fork-parent.v2-vs-fork-child.v2.html"
    assert capsys.readouterr().out.splitlines()[0] == (
        "wrote fork-parent.v2-vs-fork-child.v2.html (15 vs 7 step(s))"
    )
    page = parse_page(written.read_text(encoding="utf-8"))
    assert page.one("li", "divergence").attrs["data-index"] == "3"


def test_output_option_and_semantic_flag(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "diff.html"
    out.parent.mkdir()
    code = main(
        ["view", str(vector_path(FORK_PARENT)), str(vector_path(FORK_CHILD)), "--semantic", "-o", str(out)]
    )
    assert code == 0
    rows = parse_page(out.read_text(encoding="utf-8")).one("dl", "meta").find_all("dd")
    assert any(row.text().startswith("semantic (") for row in rows)


@pytest.mark.parametrize(
    ("flags", "comparison", "index"), [([], "semantic (", "5"), (["--by-hash"], "integrity", "0")]
)
def test_two_recordings_are_compared_semantically_unless_told(
    tmp_path: Path, flags: list[str], comparison: str, index: str
) -> None:
    incident, fixed = (
        vector_path(f"examples/fleet-triage/cassettes/{n}.json") for n in ("triage-incident", "triage-fixed")
    )
    out = tmp_path / "diff.html"
    assert main(["view", str(incident), str(fixed), *flags, "-o", str(out)]) == 0
    page = parse_page(out.read_text(encoding="utf-8"))
    rows = page.one("dl", "meta").find_all("dd")
    assert any(row.text().startswith(comparison) for row in rows)
    assert page.one("li", "divergence").attrs["data-index"] == index


def test_a_cassette_failing_verification_still_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = raw_vector(SUCCESS)
    doc["steps"][3]["payload"]["result"] = "edited"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert main(["view", str(broken)]) == 0
    assert (
        capsys.readouterr().out.splitlines()[0] == "wrote broken.html (15 step(s), verify: FAIL (hash_chain))"
    )
    page = parse_page((tmp_path / "broken.html").read_text(encoding="utf-8"))
    assert page.one("span", "verify").text() == "verify: FAIL · hash_chain at step 3"
    assert [row.attrs["id"] for row in page.find_all("li", "failed")] == ["step-3"]


def test_a_cassette_failing_the_schema_still_renders_if_it_has_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = raw_vector(SUCCESS)
    doc["version"] = 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["view", str(old)]) == 0
    page = parse_page((tmp_path / "old.html").read_text(encoding="utf-8"))
    assert page.one("span", "verify").text() == "verify: FAIL · schema_version"
    assert len(page.find_all("li", "step")) == 15


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "{not json",
            "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2",
        ),
        ('{"version": 2}', "cannot be shown: it is not a cassette (no steps list); `blackbox verify"),
        ("[1, 2]", "cannot be shown: it is not a cassette (no steps list)"),
    ],
)
def test_unreadable_input_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert main(["view", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox view: `{bad}` ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "bad.html").exists()


def test_a_missing_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "nope.json"]) == 1
    assert capsys.readouterr().err == "blackbox view: `nope.json` does not exist\n"


def test_the_page_never_overwrites_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / "run.json"
    shutil.copyfile(vector_path(SUCCESS), cassette)
    before = cassette.read_bytes()
    assert main(["view", str(cassette), "-o", "./run.json"]) == 1
    assert capsys.readouterr().err == (
        f"blackbox view: -o run.json would overwrite the cassette `{cassette}`; "
        "write the page to an .html file\n"
    )
    assert cassette.read_bytes() == before


@pytest.mark.parametrize("flag", ["--semantic", "--by-hash"])
def test_a_comparison_flag_needs_two_cassettes(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(vector_path(SUCCESS)), flag]) == 1
    assert capsys.readouterr().err == (
        f"blackbox view: {flag} compares two cassettes: give a second cassette to compare with\n"
    )


def test_the_diff_refuses_a_tampered_cassette_like_blackbox_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = raw_vector(FORK_CHILD)
    doc["steps"][5]["payload"] = {"edited": True}
    tampered = tmp_path / "child.json"
    tampered.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert main(["view", str(vector_path(FORK_PARENT)), str(tampered)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox view: `{tampered}`")
    assert "step 5" in err


def test_api_keys_from_the_environment_are_masked_in_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "env-key-planted-in-a-result-0042"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    doc = raw_vector(SUCCESS)
    doc["steps"][13]["payload"]["text"] = f"the key is {key}"
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["view", str(leaky)]) == 0
    text = (tmp_path / "leaky.html").read_text(encoding="utf-8")
    assert key not in text
    assert "the key is [redacted]" in text


def test_an_unwritable_output_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(vector_path(SUCCESS)), "-o", str(tmp_path / "missing-dir" / "x.html")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox view: cannot write `{tmp_path / 'missing-dir' / 'x.html'}`: ")
    assert err.endswith("(choose another -o FILE)\n")


def test_view_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    words = " ".join(capsys.readouterr().out.split())
    assert "view write a cassette (or two, side by side) as a self-contained HTML page" in words
