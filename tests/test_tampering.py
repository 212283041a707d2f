"""Tamper detection: every one-character change inside a step fails ``verify``; unhashed fields do not.

For each cassette vector the file is edited one character at a time inside each step's JSON and
verified again. A change is *detected* when ``verify`` fails; if the edit broke the JSON it must fail
at ``schema_version``, otherwise at ``schema_version`` or ``hash_chain`` naming that very step. An edit
that leaves the parsed document equal (whitespace between tokens, an equivalent escape) is no change
and is excluded, but the file must still verify. The characters of a step's ``id`` value are not
hashed by the format and are checked the other way round: editing them is *not* detected.

The small vectors are edited at every position; the larger ones at every position of the chain fields
(``index``, ``type``, ``timestamp``) plus a fixed sample of the ``prevHash``/``hash``/payload positions.
With ``BLACKBOX_FUZZ=long`` every vector is edited at every position with three substitutions each.
"""

from __future__ import annotations

import io
import json
import os
import random
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import VerifyReport, verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.cli.analysis import iso_time
from pytest_blackbox.trace.canonical import canonical_json, pretty_json
from pytest_blackbox.trace.errors import CassetteReadError
from pytest_blackbox.trace.io import load_trace, parse_json
from tests import vector_text

LONG = os.environ.get("BLACKBOX_FUZZ") == "long"
SMALL = (
    "fixtures/traces/success-final-answer.v2.json",
    "fixtures/traces/error-unknown-tool.v2.json",
    "fixtures/traces/fork-child.v2.json",
)
#: Positions sampled per step (beyond the chain fields) in the larger vectors.
HASH_SAMPLES = 4
PAYLOAD_SAMPLES = 12
_ROTATIONS = ("0123456789", "abcdef", "ghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def cassette_names() -> list[str]:
    return sorted(json.loads(vector_text("expectations.json"))["cassettes"])


def substitutes(char: str) -> list[str]:
    """The replacement characters tried at a position: one of the same kind, plus bit flips when long.

    Same kind (digit for digit, hex letter for hex letter, …) keeps most edits valid JSON and valid
    schema, so they reach the hash check rather than stopping at the parser.
    """
    first = next((rot[(rot.index(char) + 1) % len(rot)] for rot in _ROTATIONS if char in rot), None)
    if first is None:
        first = {" ": "\t", "\n": " "}.get(char) or _valid_char(ord(char) + 1)
    found = [first]
    if LONG:
        for flipped in (ord(char) ^ 1, ord(char) ^ 0x20):
            candidate = _valid_char(flipped)
            if candidate not in found and candidate != char:
                found.append(candidate)
    return found


def _valid_char(code: int) -> str:
    """A character UTF-8 can encode (surrogates are skipped)."""
    return chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)


@dataclass
class Span:
    """One step's text in the file, and where its ``id`` value and chain-field values are."""

    index: int
    start: int
    end: int
    id_chars: range
    chain_chars: list[int] = field(default_factory=list)
    hash_chars: list[int] = field(default_factory=list)


def _value_range(block: str, start: int, key: str, value: Any) -> range:
    token = pretty_json(value)
    at = block.index(f'"{key}": ') + len(f'"{key}": ')
    assert block[at : at + len(token)] == token
    return range(start + at, start + at + len(token))


def step_spans(text: str) -> list[Span]:
    """Locate each step by its own pretty form indented to the depth steps have in the file."""
    doc = parse_json(text)
    spans: list[Span] = []
    cursor = 0
    for index, step in enumerate(doc["steps"]):
        block = pretty_json(step).replace("\n", "\n    ")
        start = text.index(block, cursor)
        cursor = start + len(block)
        ident = _value_range(block, start, "id", step["id"])
        span = Span(index, start, cursor, range(ident.start + 1, ident.stop - 1))
        for key in ("index", "type", "timestamp"):
            span.chain_chars.extend(_value_range(block, start, key, step[key]))
        for key in ("prevHash", "hash"):
            span.hash_chars.extend(_value_range(block, start, key, step[key]))
        spans.append(span)
    return spans


def positions(name: str, span: Span) -> list[int]:
    """Every position of the step, or (larger vectors) the chain fields plus a fixed sample."""
    every = [p for p in range(span.start, span.end) if p not in span.id_chars]
    if LONG or name in SMALL:
        return every
    rng = random.Random(f"{name}:{span.index}")
    hashes = rng.sample(span.hash_chars, min(HASH_SAMPLES, len(span.hash_chars)))
    rest = [p for p in every if p not in span.chain_chars and p not in span.hash_chars]
    return sorted({*span.chain_chars, *hashes, *rng.sample(rest, min(PAYLOAD_SAMPLES, len(rest)))})


class Scratch:
    """A file rewritten in place (``r+`` then truncate: much faster than ``w`` on some filesystems)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_bytes(b"")

    def verify(self, text: str) -> VerifyReport:
        with open(self.path, "r+b") as handle:
            handle.write(text.encode("utf-8"))
            handle.truncate()
        return verify_trace(self.path)


@dataclass
class Tally:
    edits: int = 0
    invalid_json: int = 0
    schema: int = 0
    chain: int = 0
    equivalent: int = 0
    undetected: list[str] = field(default_factory=list)


def _classify(tally: Tally, original: str, text: str, report: VerifyReport, step: int, where: str) -> None:
    """Count one edit; ``original`` is the canonical JSON of the unedited file."""
    tally.edits += 1
    failure = report.first_failure
    try:
        parsed = parse_json(text)
    except CassetteReadError:
        tally.invalid_json += 1
        if failure is None or failure.name != "schema_version":
            tally.undetected.append(f"{where}: invalid JSON not refused at schema_version")
        return
    if canonical_json(parsed) == original:
        tally.equivalent += 1
        if not report.ok:
            tally.undetected.append(f"{where}: an equivalent file failed {failure and failure.name}")
        return
    if failure is None or failure.name not in ("schema_version", "hash_chain") or failure.step_index != step:
        tally.undetected.append(f"{where}: got {failure}")
        return
    tally.schema += failure.name == "schema_version"
    tally.chain += failure.name == "hash_chain"


@pytest.mark.parametrize("name", cassette_names())
def test_every_one_character_change_inside_a_step_is_detected(tmp_path: Path, name: str) -> None:
    text = vector_text(name)
    original = canonical_json(parse_json(text))
    scratch = Scratch(tmp_path / "tampered.json")
    assert scratch.verify(text).ok
    tally = Tally()
    for span in step_spans(text):
        for position in positions(name, span):
            for char in substitutes(text[position]):
                edited = text[:position] + char + text[position + 1 :]
                where = f"step {span.index}, offset {position}, {text[position]!r}->{char!r}"
                _classify(tally, original, edited, scratch.verify(edited), span.index, where)
    print(f"{name}: {tally.edits} edits, {tally.chain} hash_chain, {tally.schema} schema_version, "
          f"{tally.invalid_json} invalid JSON, {tally.equivalent} equivalent")  # fmt: skip
    assert tally.undetected == []
    assert tally.chain > 0 and tally.schema > 0 and tally.invalid_json > 0
    if name in SMALL or LONG:
        steps_text = sum(span.end - span.start - len(span.id_chars) for span in step_spans(text))
        assert tally.edits >= steps_text


@pytest.mark.parametrize("name", cassette_names())
def test_editing_a_step_id_is_not_detected(tmp_path: Path, name: str) -> None:
    """Step ids are outside the hash: an edited id verifies and is read back as written."""
    text = vector_text(name)
    scratch = Scratch(tmp_path / "tampered.json")
    for span in step_spans(text):
        for position in span.id_chars:
            char = substitutes(text[position])[0]
            edited = text[:position] + char + text[position + 1 :]
            report = scratch.verify(edited)
            assert report.ok, (span.index, position, report.first_failure)
        assert (
            load_trace(scratch.path)["steps"][span.index]["id"]
            == parse_json(edited)["steps"][span.index]["id"]
        )


def _inspect(path: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["inspect", str(path)]) == 0
    assert err.getvalue() == ""
    return out.getvalue()


@pytest.mark.parametrize("name", cassette_names())
def test_editing_unhashed_trace_fields_is_not_detected_and_inspect_shows_the_edit(
    tmp_path: Path, name: str, clean_env: pytest.MonkeyPatch
) -> None:
    doc = json.loads(vector_text(name))
    doc["id"] = "edited-trace-id"
    doc["createdAt"] = 1_700_000_123_456
    if "parentId" in doc:
        doc["parentId"] = "edited-parent"
        doc["forkedFromStepId"] = "edited-parent:2"
    else:
        doc["parentId"] = "added-parent"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8", newline="")
    report = verify_trace(path)
    assert report.ok, report.first_failure
    shown = _inspect(path)
    assert "\nId:           edited-trace-id\n" in shown
    assert f"\nCreated:      {iso_time(1_700_000_123_456)}\n" in shown
    assert "\nCreated:      2023-11-14T22:15:23.456Z\n" in shown
    if "forkedFromStepId" in doc:
        assert "\nParent:       edited-parent\n" in shown
        assert "\nForked from:  edited-parent:2\n" in shown
    else:
        assert "\nParent:       added-parent\n" in shown


@pytest.mark.parametrize("name", cassette_names())
def test_dropping_trailing_steps_is_not_detected(tmp_path: Path, name: str) -> None:
    """What the chain cannot see: it links each step to the one before, so a cut at the end verifies.

    Recorded for the record, not as a wish: the format has no final hash or step count, exactly as
    in the original Blackbox. A truncated success run reads as ``incomplete``, which ``assert``
    (``--expect-status success``) catches.
    """
    doc = json.loads(vector_text(name))
    doc["steps"] = doc["steps"][:-1]
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8", newline="")
    report = verify_trace(path)
    assert [row.status for row in report.invariants] == ["pass"] * 4
