"""``blackbox diff``: where two runs part ways, by step hash (a fork and its parent) or by type and
payload (two recordings), and whether it changed how they ended. See docs/cli-analysis.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from ..trace.canonical import canonical_json, same_encoded
from ..trace.errors import CanonicalJSONError
from ..trace.model import Trace, TraceStep
from ..trace.payloads import Outcome, terminal_outcome, tool_call_sequence
from ..trace.secrets import known_secrets, mask, truncate_masked
from .jsondiff import ABSENT, changed_leaf_paths, first_difference, fits, render_value
from .labels import describe_step, type_label

__all__ = [
    "IDENTICAL",
    "SEMANTIC_COMPARISON",
    "OutcomeDiff",
    "TraceDiff",
    "diff_outcome",
    "diff_traces",
    "is_fork_pair",
    "render_diff",
]

SEMANTIC_COMPARISON: Final = "semantic (step type + payload; timestamps and hash-chain fields ignored)"
#: The verdict when every step matches: the original Blackbox's words.
IDENTICAL: Final = "Traces are identical (no divergence)"
#: Changed values longer than this are shown as changed leaf fields instead.
CHANGED_VALUE_LIMIT: Final = 240
#: At most this many changed leaf fields are listed.
CHANGED_FIELDS_SHOWN: Final = 20
_SALIENT_FIELDS: Final = ("result", "toolInput", "text")


@dataclass(frozen=True)
class TraceDiff:
    """The first divergence between a parent and a child trace (``None`` index when identical)."""

    parent_trace_id: str
    child_trace_id: str
    shared_prefix_length: int
    has_divergence: bool
    first_divergence_index: int | None
    parent_step: TraceStep | None
    child_step: TraceStep | None
    is_parent_strict_prefix_of_child: bool
    is_child_strict_prefix_of_parent: bool
    semantic: bool = False

    @property
    def summary(self) -> str:
        """``tool_result differs at index 3``, ``parent ended before child at index 7``, …"""
        index = self.first_divergence_index
        if index is None:
            return "no divergence"
        if self.parent_step is None:
            return f"parent ended before child at index {index}"
        if self.child_step is None:
            return f"child ended before parent at index {index}"
        parent_type, child_type = self.parent_step.get("type"), self.child_step.get("type")
        if parent_type == child_type:
            return f"{parent_type} differs at index {index}"
        return f"{parent_type} vs {child_type} at index {index}"

    def to_json(self) -> dict[str, Any]:
        return {
            "parentTraceId": self.parent_trace_id,
            "childTraceId": self.child_trace_id,
            "comparison": "semantic" if self.semantic else "integrity",
            "sharedPrefixLength": self.shared_prefix_length,
            "hasDivergence": self.has_divergence,
            "firstDivergenceIndex": self.first_divergence_index,
            "summary": self.summary,
            "parentStep": _step_ref(self.parent_step),
            "childStep": _step_ref(self.child_step),
            "isParentStrictPrefixOfChild": self.is_parent_strict_prefix_of_child,
            "isChildStrictPrefixOfParent": self.is_child_strict_prefix_of_parent,
        }


def _step_ref(step: TraceStep | None) -> dict[str, Any] | None:
    """A step as the JSON report names it: where it is and what it is, not its (user) payload."""
    if step is None:
        return None
    return {
        "id": step.get("id"),
        "index": step.get("index"),
        "type": step.get("type"),
        "hash": step.get("hash"),
    }


def _semantic_key(step: TraceStep) -> tuple[Any, str]:
    try:
        return step.get("type"), canonical_json(step.get("payload"))
    except CanonicalJSONError:
        return step.get("type"), repr(step.get("payload"))


class _SamePayloads:
    """:func:`~pytest_blackbox.trace.canonical.same_encoded` of two steps' payloads, with each pair of
    list items found equal remembered by identity.

    Every ``model_input`` repeats the conversation so far, which a trace read with ``shared=True``
    holds as the same objects step after step: comparing the items of its lists pair by pair, each
    pair once, costs the length of the runs instead of its square. Canonical JSON writes a list as
    its items' texts in order and an object by its sorted keys, so equal items under the same keys
    make equal texts; anything else is compared whole.
    """

    def __init__(self) -> None:
        self._equal: dict[tuple[int, int], tuple[Any, Any]] = {}

    def __call__(self, left: Any, right: Any) -> bool:
        if type(left) is dict and type(right) is dict and left.keys() == right.keys():
            return all(self._value(value, right[key]) for key, value in left.items())
        return same_encoded(left, right)

    def _value(self, left: Any, right: Any) -> bool:
        if type(left) is list and type(right) is list:
            return len(left) == len(right) and all(map(self._item, left, right))
        return same_encoded(left, right)

    def _item(self, left: Any, right: Any) -> bool:
        known = self._equal.get((id(left), id(right)))
        if known is not None and known[0] is left and known[1] is right:
            return True
        if not same_encoded(left, right):
            return False
        self._equal[id(left), id(right)] = (left, right)
        return True


def _same_step(parent: TraceStep, child: TraceStep, semantic: bool, same: _SamePayloads) -> bool:
    if semantic:
        same_type = parent.get("type") == child.get("type")
        if same_type and same(parent.get("payload"), child.get("payload")):
            return True
        return _semantic_key(parent) == _semantic_key(child)
    return parent.get("hash") == child.get("hash")


def is_fork_pair(parent: Trace, child: Trace) -> bool:
    """Whether one trace is a fork of the other (its ``parentId`` is the other's id).

    A fork copies its parent's steps before the fork point verbatim, so the hashes show exactly where
    it departs. Any other two traces are separate recordings, whose timestamps, and so hashes, differ
    from step 0: only their types and payloads say where the runs differ. The commands compare by
    hash for a fork pair and semantically otherwise, unless told (``--semantic``, ``--by-hash``).
    """
    parent_id, child_id = parent.get("id"), child.get("id")
    return child.get("parentId") == parent_id or parent.get("parentId") == child_id


def diff_traces(parent: Trace, child: Trace, *, semantic: bool = False) -> TraceDiff:
    """Walk both traces by index; the first unequal step, or the first missing one, diverges."""
    parent_steps, child_steps = parent["steps"], child["steps"]
    shared, same = 0, _SamePayloads()
    for parent_step, child_step in zip(parent_steps, child_steps, strict=False):
        if not _same_step(parent_step, child_step, semantic, same):
            break
        shared += 1
    longest = max(len(parent_steps), len(child_steps))
    diverges = shared < longest
    return TraceDiff(
        parent_trace_id=str(parent.get("id")),
        child_trace_id=str(child.get("id")),
        shared_prefix_length=shared,
        has_divergence=diverges,
        first_divergence_index=shared if diverges else None,
        parent_step=parent_steps[shared] if shared < len(parent_steps) else None,
        child_step=child_steps[shared] if shared < len(child_steps) else None,
        is_parent_strict_prefix_of_child=shared == len(parent_steps) < len(child_steps),
        is_child_strict_prefix_of_parent=shared == len(child_steps) < len(parent_steps),
        semantic=semantic,
    )


def _terminal_result(outcome: Outcome) -> str | None:
    if outcome.status == "success":
        return outcome.final_answer
    if outcome.status == "error":
        return outcome.failure_reason
    return None


@dataclass(frozen=True)
class OutcomeDiff:
    """How the two runs ended, and the first rule of four that tells them apart."""

    verdict: str
    parent: Outcome
    child: Outcome
    parent_tools: list[str] = field(default_factory=list)
    child_tools: list[str] = field(default_factory=list)

    @property
    def status_changed(self) -> bool:
        return self.parent.status != self.child.status

    @property
    def result_changed(self) -> bool:
        return _terminal_result(self.parent) != _terminal_result(self.child)

    @property
    def tools_changed(self) -> bool:
        return self.parent_tools != self.child_tools

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "parentStatus": self.parent.status,
            "childStatus": self.child.status,
            "statusChanged": self.status_changed,
            "resultChanged": self.result_changed,
            "toolsChanged": self.tools_changed,
            "parentToolCallSequence": self.parent_tools,
            "childToolCallSequence": self.child_tools,
        }


def diff_outcome(parent: Trace, child: Trace) -> OutcomeDiff:
    """Compare terminal status, terminal result (answer or failure reason) and tool-call path."""
    before, after = terminal_outcome(parent), terminal_outcome(child)
    before_tools, after_tools = tool_call_sequence(parent), tool_call_sequence(child)
    if before.status != after.status:
        verdict = f"outcome flipped: parent {before.status} → child {after.status}"
    elif _terminal_result(before) != _terminal_result(after):
        what = "the final answer" if before.status == "success" else "the failure reason"
        verdict = f"same final status ({before.status}), but {what} changed"
    elif before_tools != after_tools:
        verdict = "same outcome, but the tool-call path changed"
    else:
        verdict = "no behavioral change: the divergence did not alter the run outcome"
    return OutcomeDiff(verdict, before, after, before_tools, after_tools)


def _label(text: str) -> str:
    return f"{text:<16}"


def _step_row(role: str, step: TraceStep | None, secrets: list[str]) -> str:
    if step is None:
        return f"  {role:<6}  <no step>"
    kind = type_label(step.get("type"))
    digest = str(step.get("hash", ""))[:8]
    return f"  {role:<6}  {kind:<14}  {digest}  {describe_step(step, secrets)}"


def _salient(parent: TraceStep, child: TraceStep) -> tuple[str | None, Any, Any]:
    """The field a reader cares about: ``result``, else ``toolInput``, else ``text``, else the payload."""
    before, after = parent.get("payload"), child.get("payload")
    for name in _SALIENT_FIELDS:
        old = before.get(name, ABSENT) if isinstance(before, dict) else ABSENT
        new = after.get(name, ABSENT) if isinstance(after, dict) else ABSENT
        if old is ABSENT and new is ABSENT:
            continue
        if first_difference(old, new) is not None:
            return name, old, new
        break  # the salient field is unchanged: show the whole payload instead
    return None, before, after


def _equal_payload_line(parent: TraceStep, child: TraceStep, secrets: list[str]) -> str:
    """Why two steps with equal payloads still differ, so the report never lists an empty change."""
    if parent.get("type") != child.get("type"):
        why = "the step types differ"
    elif first_difference(parent.get("timestamp"), child.get("timestamp")) is not None:
        why = (
            f"the timestamps differ (parent {render_value(parent.get('timestamp'), secrets)}, "
            f"child {render_value(child.get('timestamp'), secrets)})"
        )
    else:
        why = "only the stored hashes differ (run blackbox verify on both cassettes)"
    return f"  changed fields: none — the payloads are equal; {why}"


def _changed_value_lines(parent: TraceStep, child: TraceStep, secrets: list[str]) -> list[str]:
    if first_difference(parent.get("payload"), child.get("payload")) is None:
        return [_equal_payload_line(parent, child, secrets)]
    name, before, after = _salient(parent, child)
    if fits(before, CHANGED_VALUE_LIMIT, secrets) and fits(after, CHANGED_VALUE_LIMIT, secrets):
        return [
            f"  changed value ({name or 'payload'}):",
            f"    parent: {render_value(before, secrets, CHANGED_VALUE_LIMIT)}",
            f"    child:  {render_value(after, secrets, CHANGED_VALUE_LIMIT)}",
        ]
    changes = changed_leaf_paths(before, after, [name] if name else [], secrets)
    lines = ["  changed fields:"]
    for change in changes[:CHANGED_FIELDS_SHOWN]:
        lines.append(
            f"    {mask(change.path, secrets)}: {render_value(change.before, secrets)} → "
            f"{render_value(change.after, secrets)}"
        )
    if len(changes) > CHANGED_FIELDS_SHOWN:
        lines.append(f"    … and {len(changes) - CHANGED_FIELDS_SHOWN} more changed field(s)")
    return lines


def _tools(names: list[str], secrets: list[str]) -> str:
    return mask(" → ".join(names), secrets) if names else "(none)"


def _outcome_lines(outcome: OutcomeDiff, secrets: list[str]) -> list[str]:
    lines = [f"{_label('Outcome:')}{outcome.verdict}"]
    if outcome.status_changed or outcome.result_changed:
        for role, side in (("parent", outcome.parent), ("child", outcome.child)):
            if side.status == "success" and side.final_answer is not None:
                lines.append(f"  {role + ' answer:':<15}{_one_line(side.final_answer, secrets)}")
            elif side.status == "error" and side.failure_reason is not None:
                lines.append(f"  {role + ' reason:':<15}{_one_line(side.failure_reason, secrets)}")
    lines.append(f"  {'parent tools:':<15}{_tools(outcome.parent_tools, secrets)}")
    lines.append(f"  {'child tools:':<15}{_tools(outcome.child_tools, secrets)}")
    return lines


def _one_line(text: str, secrets: list[str]) -> str:
    return truncate_masked(" ".join(text.split()), CHANGED_VALUE_LIMIT, secrets)


def _divergence_lines(diff: TraceDiff, secrets: list[str]) -> list[str]:
    lines = [
        f"{_label('Summary:')}{diff.summary}",
        f"First divergence at index {diff.first_divergence_index}",
        _step_row("parent", diff.parent_step, secrets),
        _step_row("child", diff.child_step, secrets),
    ]
    if diff.parent_step is not None and diff.child_step is not None:
        lines += _changed_value_lines(diff.parent_step, diff.child_step, secrets)
    if diff.is_parent_strict_prefix_of_child:
        lines.append("  (parent is a strict prefix of child)")
    if diff.is_child_strict_prefix_of_parent:
        lines.append("  (child is a strict prefix of parent)")
    return lines


def render_diff(diff: TraceDiff, outcome: OutcomeDiff | None = None, secrets: Iterable[str] = ()) -> str:
    """The ``blackbox diff`` report; ``outcome`` adds the ``Outcome:`` block, as the original always does."""
    wanted = known_secrets(secrets)
    lines = [
        "--- trace diff ---",
        f"{_label('Parent:')}{mask(diff.parent_trace_id, wanted)}",
        f"{_label('Child:')}{mask(diff.child_trace_id, wanted)}",
    ]
    if diff.semantic:
        lines.append(f"Comparison:      {SEMANTIC_COMPARISON}")
    lines += [f"{_label('Shared prefix:')}{diff.shared_prefix_length} step(s)", ""]
    if diff.first_divergence_index is None:
        lines.append(IDENTICAL)
    else:
        lines += _divergence_lines(diff, wanted)
    if outcome is not None:
        lines += ["", *_outcome_lines(outcome, wanted)]
    return "\n".join(lines)
