"""Stable re-recording: a new recording that shows the same run as the cassette it would replace leaves
the file alone, byte for byte, so re-recording an unchanged agent makes no git churn. See
docs/pytest.md#re-recording-without-churn.

Two recordings of one run never share timestamps, so never hashes: they are compared as
``blackbox diff --semantic`` compares runs (step types and payloads), plus every trace-level field
but ``createdAt``.
"""

from __future__ import annotations

from pathlib import Path

from ..analysis.diff import diff_traces
from ..analysis.jsondiff import first_difference
from ..errors import BlackboxError
from ..trace.io import load_trace
from ..trace.model import Trace

#: Trace fields that differ between two recordings of the same run.
_VOLATILE = frozenset({"createdAt", "steps"})


def first_change(old_path: Path, new: Trace) -> str | None:
    """Where ``new`` first departs from the cassette at ``old_path``; ``None`` if it shows the same run.

    The answer names a place, never a value (a value may hold a secret): ``step 0 model_input:
    systemPrompt``.
    """
    try:
        old = load_trace(old_path)
    except BlackboxError:
        return "the old cassette could not be read"
    for key in sorted((set(old) | set(new)) - _VOLATILE):
        if old.get(key) != new.get(key):
            return f"trace field {key}"
    diff = diff_traces(old, new, semantic=True)
    index, before, after = diff.first_divergence_index, diff.parent_step, diff.child_step
    if index is None:
        return None
    if before is None:
        assert after is not None
        return f"step {index}: a new {after['type']} step (the old run ended before it)"
    if after is None:
        return f"step {index}: the new run ends here ({len(old['steps']) - index} old step(s) dropped)"
    if before["type"] != after["type"]:
        return f"step {index}: {before['type']} became {after['type']}"
    difference = first_difference(before["payload"], after["payload"])
    where = difference.path if difference is not None else "payload"
    return f"step {index} {before['type']}: {where}"
