"""``blackbox textconv``: a cassette as line-oriented text for git's diff driver (``textconv``).

Re-recording a test rewrites every timestamp and, as the format requires, every hash after the first
changed step, so the plain ``git diff`` of a one-word prompt change runs to a hundred lines. This
text leaves out everything that differs between two recordings of the same run (``createdAt``,
timestamps, ``prevHash``/``hash``, the step ids made of the trace id and the index) and shows the
rest, each payload indented in the file's own key order. Two recordings of one run give the same
text, byte for byte, so ``git diff`` shows only what changed in the run.
See docs/ci.md#reviewing-re-recorded-cassettes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from ..trace.canonical import pretty_json
from ..trace.errors import CanonicalJSONError
from ..trace.model import Trace
from ..trace.payloads import terminal_outcome

__all__ = ["INDENT", "cassette_text", "is_cassette_document"]

#: Each payload line is indented this much under its step's header line.
INDENT: Final = "  "


def is_cassette_document(doc: Any) -> bool:
    """Whether parsed JSON has a cassette's shape: an object with an id and a list of steps.

    Anything else (another tool's JSON beside the cassettes, a file mid-merge) is shown as it is.
    """
    return isinstance(doc, dict) and isinstance(doc.get("steps"), list) and "id" in doc


def _json(value: Any) -> str:
    try:
        return pretty_json(value)
    except CanonicalJSONError:  # a value JSON cannot hold: still one stable line
        return repr(value)


def _header(trace: Mapping[str, Any]) -> list[str]:
    lines = [f"cassette {trace.get('id')} (trace format v{trace.get('version')})"]
    if "parentId" in trace or "forkedFromStepId" in trace:
        lines.append(f"parent {trace.get('parentId')}, forked at {trace.get('forkedFromStepId')}")
    steps = trace["steps"]
    outcome = terminal_outcome(cast(Trace, trace)) if all(isinstance(s, dict) for s in steps) else None
    lines.append(f"outcome: {outcome.label if outcome is not None else 'unknown'}")
    return lines


def _step_lines(position: int, step: Any) -> list[str]:
    if not isinstance(step, dict):
        return [f"step {position}: not a step", *(INDENT + line for line in _json(step).splitlines())]
    index = step.get("index", position)
    body = _json(step.get("payload")).splitlines()
    return [f"step {index} {step.get('type')}", *(INDENT + line for line in body)]


def cassette_text(trace: Mapping[str, Any]) -> str:
    """The header (id, fork origin, outcome), then each step: ``step N type`` and its payload."""
    lines = _header(trace)
    for position, step in enumerate(trace["steps"]):
        lines += ["", *_step_lines(position, step)]
    return "\n".join(lines) + "\n"
