"""``load_verified``: a cassette verified and loaded in one read, and a replay of the very trace checked."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine import cassettes
from pytest_blackbox.engine.cassettes import load_cassette, load_verified
from pytest_blackbox.engine.options import SessionOptions
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.errors import CassetteError
from pytest_blackbox.trace.io import dumps_trace, load_trace
from tests.agents.travel import FINAL, WEATHER, Run, ToolBox, run_agent, script
from tests.trace.conftest import conversation


def test_a_good_cassette_gives_the_verify_report_and_the_trace_load_trace_reads(
    recorded: tuple[Path, Run, str],
) -> None:
    path, _, _ = recorded
    report, trace = load_verified(path)
    assert report == verify_trace(path)
    assert report.ok
    assert trace == load_trace(path)
    assert list(trace) == list(load_trace(path))  # the members in the file's order


def test_a_replay_of_the_checked_trace_reads_the_file_no_more(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    offline: Callable[[], list[str]],
) -> None:
    """The session replays what was verified: overwriting the file afterwards changes nothing."""
    path, _, root = recorded
    seen = len(fake_provider.requests)
    fake_provider.stop()
    _, trace = load_verified(path)
    assert trace is not None
    path.write_text("not a cassette", encoding="utf-8")
    attempts = offline()
    with Session(SessionOptions(mode="replay", cassette=path), exit_net=False, trace=trace) as session:
        run = run_agent(flavor, root, session=session)
    assert run.answer == FINAL
    assert run.box.calls == []
    assert attempts == []
    assert len(fake_provider.requests) == seen == 3
    assert session.report is not None
    assert (session.report.status, session.report.replayed_steps) == ("success", 13)


def edit_step(path: Path, index: int, field: str, value: object) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["steps"][index]["payload"][field] = value
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")


@pytest.mark.parametrize("flavor", [("anthropic", False)], indirect=True)
def test_an_edited_cassette_gives_its_failing_report_and_no_trace(recorded: tuple[Path, Run, str]) -> None:
    path, _, _ = recorded
    edit_step(path, 3, "result", {"city": "Paris", "tempC": 99})
    report, trace = load_verified(path)
    assert trace is None
    assert report == verify_trace(path)
    assert report.first_failure is not None
    assert (report.first_failure.name, report.first_failure.step_index) == ("hash_chain", 3)


def test_a_cassette_holding_a_given_key_gives_no_trace(fake_provider: FakeProvider, tmp_path: Path) -> None:
    """Provider neutrality looks for the keys given, as ``verify --api-key`` does; none is echoed."""
    key = "tok-7f3c9e-a-key-the-recording-did-not-know-of"
    flavor = ("anthropic", False)
    script(fake_provider, flavor[0])
    path = tmp_path / "leak.json"
    box = ToolBox({**WEATHER, "Paris": {"note": f"key {key}"}})
    run_agent(flavor, fake_provider, box=box, session_options={"mode": "record", "out": path})
    assert load_verified(path)[1] is not None
    report, trace = load_verified(path, api_keys=[key])
    assert trace is None
    assert report == verify_trace(path, api_keys=[key])
    assert report.first_failure is not None
    assert report.first_failure.name == "provider_neutrality"
    assert key not in json.dumps(report.to_json())


@pytest.mark.parametrize("content", [b"", b"{not json", b"\xff\xfe", b"[]"])
def test_an_unreadable_cassette_fails_schema_version_and_gives_no_trace(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    report, trace = load_verified(path)
    assert trace is None
    assert report == verify_trace(path)
    assert report.first_failure is not None
    assert report.first_failure.name == "schema_version"


@pytest.mark.parametrize("flavor", [("anthropic", False)], indirect=True)
def test_an_unchanged_cassette_is_checked_once_and_an_edited_one_again(
    recorded: tuple[Path, Run, str],
) -> None:
    """Tests replaying the same file share one check and one trace, until a byte of the file changes."""
    path, _, _ = recorded
    first_report, first = load_verified(path)
    second_report, second = load_verified(path)
    assert first is not None
    assert second is first
    assert second_report is first_report
    edit_step(path, 3, "result", {"city": "Paris", "tempC": 99})
    report, trace = load_verified(path)
    assert trace is None
    assert report.first_failure is not None
    assert (report.first_failure.name, report.first_failure.step_index) == ("hash_chain", 3)


@pytest.mark.parametrize("flavor", [("anthropic", False)], indirect=True)
def test_an_edit_that_keeps_the_size_and_times_is_checked_again(recorded: tuple[Path, Run, str]) -> None:
    """The shared check is keyed by the bytes read, not the file's metadata: one digit changed in
    place, with the modification time put back, is still found."""
    path, _, _ = recorded
    assert load_verified(path)[1] is not None
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    edited = text.replace('"tempC": 21', '"tempC": 29', 1)
    assert edited != text and len(edited) == len(text)
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    report, trace = load_verified(path)
    assert trace is None
    assert report.first_failure is not None
    assert report.first_failure.name == "hash_chain"


@pytest.mark.parametrize("flavor", [("anthropic", False)], indirect=True)
def test_a_settled_cassette_is_known_by_its_metadata_until_it_changes(
    recorded: tuple[Path, Run, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file last changed long enough before it was hashed is not read again while its metadata is
    unchanged; a write changes the metadata, and the file is read and checked again."""
    path, _, _ = recorded
    monkeypatch.setattr(cassettes, "_now_ns", lambda: time.time_ns() + 2 * cassettes.SETTLED_NS)
    first = load_cassette(path)
    with monkeypatch.context() as unreadable:
        unreadable.setattr(Path, "read_bytes", _refuse_to_read)
        assert load_cassette(path) is first
    edit_step(path, 3, "result", {"city": "Paris", "tempC": 99})
    with pytest.raises(CassetteError, match="hash"):
        load_cassette(path)


def test_a_cassette_hashed_right_after_it_changed_is_read_again(tmp_path: Path) -> None:
    """Within the file system clock's tick an edit may leave the metadata as it was, so a file that
    changed shortly before it was hashed is never known by its metadata."""
    path = tmp_path / "run.json"
    path.write_text("{}", encoding="utf-8")
    assert cassettes._fingerprint(path)[0] == hashlib.sha256(b"{}").hexdigest()
    assert str(path) not in cassettes._FINGERPRINTS
    path.write_text("[]", encoding="utf-8")  # the same size, at once
    assert cassettes._fingerprint(path)[0] == hashlib.sha256(b"[]").hexdigest()


def _refuse_to_read(self: Path) -> bytes:
    raise AssertionError(f"{self.name} was read again")


@pytest.mark.parametrize("reader", ["load_verified", "load_cassette"])
def test_a_replays_trace_holds_each_repeated_message_once_and_still_fails_a_copy_edited_in_the_history(
    tmp_path: Path, reader: str
) -> None:
    """Both readers of a replay share what the ``model_input`` steps repeat; an edited copy deep in
    the history is a value of its own, which the hash chain names."""
    text = dumps_trace(conversation(40))
    path = tmp_path / "long.json"
    path.write_text(text, encoding="utf-8")
    read = {"load_verified": lambda p: load_verified(p)[1], "load_cassette": load_cassette}[reader]
    trace = read(path)
    assert trace == load_trace(path)
    first, last = trace["steps"][0]["payload"], trace["steps"][39]["payload"]
    assert last["messages"][0] is first["messages"][0] and last["tools"][0] is first["tools"][0]
    at = text.index('"n": 7\n', text.index('"index": 30,'))
    path.write_text(text[:at] + '"n": 8' + text[at + len('"n": 7') :], encoding="utf-8")
    if reader == "load_verified":
        report, kept = load_verified(path)
        failure = report.first_failure
        assert (report.ok, kept, failure and failure.name, failure and failure.step_index) == (
            False,
            None,
            "hash_chain",
            30,
        )
    else:
        with pytest.raises(CassetteError, match="step 30: stored hash does not match"):
            load_cassette(path)
