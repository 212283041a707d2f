"""``blackbox view``: a run, or two runs side by side, as one self-contained HTML page.

Every text taken from a cassette is masked, then HTML-escaped, before it reaches the page. For long
runs each model turn shows only the messages new since the previous turn, and long values are
folded and capped at :data:`VALUE_CAP` characters. See docs/view.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..trace.model import STEP_TYPES, Trace
from ..trace.payloads import Outcome
from .diff import SEMANTIC_COMPARISON, OutcomeDiff, TraceDiff, diff_outcome, diff_traces
from .extensions import ORIGINAL_CANNOT_REPLAY, extensions_used
from .jsondiff import changed_leaf_paths
from .labels import type_label
from .verify import VerifyReport
from .view_assets import CONTENT_SECURITY_POLICY, SCRIPT, STYLE
from .view_steps import FOLD_CHARS, FOLD_LINES, VALUE_CAP, Page, RunSteps, iso_time

__all__ = [
    "CHANGED_FIELDS_SHOWN",
    "FOLD_CHARS",
    "FOLD_LINES",
    "VALUE_CAP",
    "render_diff_html",
    "render_run_html",
]

#: Changed leaf fields listed per diverging step pair.
CHANGED_FIELDS_SHOWN: Final = 20


def _same_json(before: Any, after: Any) -> bool:
    """Surely equal as JSON, by C-speed comparisons instead of a walk over every leaf.

    ``==`` alone would take ``true`` for ``1``; the serialized forms tell those apart. A false
    "not equal" (keys in another order) only costs the leaf walk, which then finds nothing.
    """
    try:
        if before != after:
            return False
        return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


# ---- page frame


def _document(title: str, page_class: str, header: str, main: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="blackbox view"><title>{title}</title>'
        f"<style>{STYLE}</style></head>\n"
        f'<body class="{page_class}"><header class="page">{header}</header>\n<main>{main}</main>\n'
        "<footer>Written by <code>blackbox view</code>: one self-contained file, "
        "nothing loaded from the network."
        f"</footer><script>{SCRIPT}</script></body></html>\n"
    )


def _meta(rows: Iterable[tuple[str, str]]) -> str:
    return (
        '<dl class="meta">' + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows) + "</dl>"
    )


def _controls(filters: bool) -> str:
    buttons = (
        '<button type="button" data-action="expand">expand all</button>'
        '<button type="button" data-action="collapse">collapse all</button>'
    )
    boxes = ""
    if filters:
        boxes = "<span>show:</span>" + "".join(
            f'<label><input type="checkbox" data-filter="{kind}" checked> {type_label(kind)}</label>'
            for kind in STEP_TYPES
        )
    return f'<nav class="controls">{buttons}{boxes}</nav>'


def _outcome_badge(outcome: Outcome) -> str:
    return f'<span class="badge outcome {outcome.status}">outcome: {outcome.status}</span>'


def _outcome_text(outcome: Outcome, page: Page) -> str:
    if outcome.status == "success" and outcome.final_answer is not None:
        return f'<span class="label">final answer</span>{page.text(outcome.final_answer)}'
    if outcome.status == "error" and outcome.failure_reason is not None:
        return f'<span class="label">failure reason</span>{page.text(outcome.failure_reason)}'
    return '<span class="label">the run has no terminal step</span>'


def _verify_badge(report: VerifyReport | None, page: Page) -> str:
    if report is None:
        return '<span class="badge verify none" data-verdict="none">verify: not run</span>'
    if report.ok:
        return '<span class="badge verify pass" data-verdict="pass">verify: pass</span>'
    failure = report.first_failure
    where = ""
    if failure is not None and failure.step_index is not None:
        where = f' at <a href="#{page.anchor}{failure.step_index}">step {failure.step_index}</a>'
    name = failure.name if failure is not None else "?"
    return f'<span class="badge verify fail" data-verdict="fail">verify: FAIL · {name}{where}</span>'


def _invariants(report: VerifyReport | None, page: Page) -> str:
    if report is None:
        return ""
    rows = "".join(
        f'<tr><td>{result.name}</td><td class="{result.status}">{result.status}</td>'
        f"<td>{page.text(result.detail)}</td></tr>"
        for result in report.invariants
    )
    return f'<table class="invariants">{rows}</table>'


def _failure_note(report: VerifyReport | None, page: Page) -> tuple[int | None, str]:
    """The step a failed check points at, and the note shown on that row."""
    failure = report.first_failure if report is not None else None
    if failure is None or failure.step_index is None:
        return None, ""
    return failure.step_index, (
        f'<div class="failure">✗ verify failed here: {failure.name} — {page.text(failure.detail)}</div>'
    )


def _id_rows(trace: Mapping[str, Any], page: Page) -> list[tuple[str, str]]:
    rows = [("Trace id", f"<code>{page.text(trace.get('id', '?'))}</code>")]
    if "parentId" in trace:
        rows.append(("Parent", f"<code>{page.text(trace['parentId'])}</code>"))
    if "forkedFromStepId" in trace:
        rows.append(
            ("Fork point", f"<code>{page.text(trace['forkedFromStepId'])}</code> (a step of the parent)")
        )
    return rows


def render_run_html(
    trace: Mapping[str, Any],
    *,
    verify_report: VerifyReport | None = None,
    secrets: Iterable[str] = (),
    source: str | None = None,
) -> str:
    """One run as a timeline page; ``verify_report`` adds the verdict badge and marks a failing step.

    ``trace`` may be a cassette that failed verification (any JSON object with a ``steps`` list):
    the page is where a broken run gets looked at, so nothing here assumes the data is valid.
    """
    page = Page(secrets)
    run = RunSteps(trace, page)
    outcome = run.outcome()
    failed_at, failure = _failure_note(verify_report, page)
    rows = _id_rows(trace, page)
    rows += [
        ("Created", iso_time(trace.get("createdAt"))),
        ("Steps", f"{len(run.steps):,} in {len(run.turn_number):,} model turn(s)"),
        ("Times", f"milliseconds since {run.base_label}"),
    ]
    if source is not None:
        rows.append(("File", f"<code>{page.text(source)}</code>"))
    used = extensions_used(run.steps)
    if used:
        named = ", ".join(f"{extension.name} (<code>{extension.doc}</code>)" for extension in used)
        rows.append(("Extensions", f"{named}; {ORIGINAL_CANNOT_REPLAY}"))
    header = (
        f"<h1>Run <code>{page.text(trace.get('id', '?'))}</code></h1>{_meta(rows)}"
        f'<div class="badges">{_verify_badge(verify_report, page)}{_outcome_badge(outcome)}</div>'
        f"{_invariants(verify_report, page)}"
        f'<div class="outcome-line">{_outcome_text(outcome, page)}</div>{_controls(filters=True)}'
    )
    body = "".join(
        run.row(position, "failed", failure) if position == failed_at else run.row(position)
        for position in range(len(run.steps))
    )
    title = f"blackbox · {page.text(trace.get('id', 'run'))}"
    return _document(title, "run", header, f'<ol class="timeline">{body}</ol>')


# ---- diff page


def _changes(parent: Mapping[str, Any], child: Mapping[str, Any], page: Page) -> tuple[bool, str]:
    """Whether one step pair differs in type or payload, and its changed leaf fields by path.

    The paths come from the same walk ``blackbox diff`` uses, so both name a change the same way.
    """
    if parent.get("type") != child.get("type"):
        return True, (
            f'<div class="changes">step type: <span class="before">{page.text(parent.get("type"))}</span> → '
            f'<span class="after">{page.text(child.get("type"))}</span></div>'
        )
    before, after = parent.get("payload"), child.get("payload")
    changes = [] if _same_json(before, after) else changed_leaf_paths(before, after, secrets=page.secrets)
    if not changes:
        return False, '<div class="changes">same payload; only the timestamp or the hash chain differs</div>'
    items = "".join(
        f'<li><code class="path">{page.text(change.path)}</code> <span class="before">'
        f"{page.value_text(change.before)}</span> → "
        f'<span class="after">{page.value_text(change.after)}</span></li>'
        for change in changes[:CHANGED_FIELDS_SHOWN]
    )
    if len(changes) > CHANGED_FIELDS_SHOWN:
        items += f"<li>… and {len(changes) - CHANGED_FIELDS_SHOWN} more changed field(s)</li>"
    return True, f'<div class="changes">{len(changes)} changed field(s):<ul>{items}</ul></div>'


def _side(run: RunSteps, position: int, role: str, changed: bool) -> str:
    if position >= len(run.steps):
        return f'<div class="side {role}"><p class="missing">({role} run has no step {position})</p></div>'
    css = f"side {role} changed" if changed else f"side {role}"
    return f'<div class="{css}"><ol class="timeline">{run.row(position)}</ol></div>'


def _pair(parent: RunSteps, child: RunSteps, position: int, diff: TraceDiff) -> str:
    both = position < len(parent.steps) and position < len(child.steps)
    changed, changes = (
        _changes(parent.steps[position], child.steps[position], parent.page) if both else (False, "")
    )
    first = position == diff.first_divergence_index
    marker = (
        f'<div class="marker" id="divergence">▶ first divergence · {parent.page.text(diff.summary)}</div>'
        if first
        else ""
    )
    css = "pair divergence" if first else "pair"
    return (
        f'<li class="{css}" id="pair-{position}" data-index="{position}">{marker}{changes}'
        f'<div class="columns">{_side(parent, position, "parent", changed)}'
        f"{_side(child, position, 'child', changed)}</div></li>"
    )


def _outcome_rows(outcome: OutcomeDiff, page: Page) -> list[tuple[str, str]]:
    def tools(names: list[str]) -> str:
        return page.text(" → ".join(names)) if names else "(none)"

    return [
        ("Outcome", f"<b>{page.text(outcome.verdict)}</b>"),
        ("Parent ended", f"{_outcome_badge(outcome.parent)} {_outcome_text(outcome.parent, page)}"),
        ("Child ended", f"{_outcome_badge(outcome.child)} {_outcome_text(outcome.child, page)}"),
        ("Parent tools", tools(outcome.parent_tools)),
        ("Child tools", tools(outcome.child_tools)),
    ]


def _diff_header(parent: Trace, child: Trace, diff: TraceDiff, page: Page, labels: Sequence[str]) -> str:
    rows = [
        ("Parent", f"<code>{page.text(parent.get('id'))}</code> {labels[0]}"),
        ("Child", f"<code>{page.text(child.get('id'))}</code> {labels[1]}"),
    ]
    rows += [(f"Child's {label.lower()}", value) for label, value in _id_rows(child, page)[1:]]
    comparison = SEMANTIC_COMPARISON if diff.semantic else "integrity (step hashes)"
    first = diff.first_divergence_index
    rows += [
        ("Comparison", page.text(comparison)),
        ("Shared prefix", f"{diff.shared_prefix_length:,} step(s)"),
        ("Summary", page.text(diff.summary)),
        ("First divergence", f'<a href="#divergence">index {first}</a>' if first is not None else "none"),
    ]
    rows += _outcome_rows(diff_outcome(parent, child), page)
    title = f"Diff <code>{page.text(parent.get('id'))}</code> → <code>{page.text(child.get('id'))}</code>"
    return f"<h1>{title}</h1>{_meta(rows)}{_controls(filters=False)}"


def _shared_prefix(parent: RunSteps, length: int) -> str:
    if length == 0:
        return ""
    rows = "".join(parent.row(position) for position in range(length))
    return (
        f'<details class="shared" id="shared"><summary>shared prefix: {length:,} identical step(s) '
        f"(0–{length - 1}), collapsed</summary>"
        f'<ol class="timeline">{rows}</ol></details>'
    )


def render_diff_html(
    parent: Trace,
    child: Trace,
    *,
    semantic: bool = False,
    secrets: Iterable[str] = (),
    labels: Sequence[str] = ("", ""),
) -> str:
    """Two runs side by side by step index: the shared prefix collapsed, the first divergence marked.

    Steps are compared as ``blackbox diff`` compares them (by hash, or by type and payload with
    ``semantic``); each diverging pair lists its changed leaf fields by path. ``labels`` name the
    two files in the header.
    """
    page = Page(secrets, anchor="parent-step-")
    diff = diff_traces(parent, child, semantic=semantic)
    child_page = Page(secrets, anchor="child-step-", shared=("parent-step-", diff.shared_prefix_length))
    left, right = RunSteps(parent, page), RunSteps(child, child_page)
    names = [f'<span class="label">{page.text(label)}</span>' if label else "" for label in labels]
    header = _diff_header(parent, child, diff, page, names)
    longest = max(len(left.steps), len(right.steps))
    pairs = "".join(
        _pair(left, right, position, diff) for position in range(diff.shared_prefix_length, longest)
    )
    heads = (
        f'<div class="columns"><div class="colhead">parent · {page.text(parent.get("id"))} '
        f'({len(left.steps):,} steps)</div><div class="colhead">child · {page.text(child.get("id"))} '
        f"({len(right.steps):,} steps)</div></div>"
    )
    same = (
        "" if diff.has_divergence else '<p class="note same">No divergence: the runs match step for step.</p>'
    )
    main = f'{heads}{_shared_prefix(left, diff.shared_prefix_length)}{same}<ol class="pairs">{pairs}</ol>'
    title = f"blackbox · diff {page.text(parent.get('id'))} → {page.text(child.get('id'))}"
    return _document(title, "diff", header, main)
