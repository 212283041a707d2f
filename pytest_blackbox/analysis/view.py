"""``blackbox view``: a run, or two runs side by side, as one self-contained HTML page.

Every text taken from a cassette is masked, then HTML-escaped, before it reaches the page. For long
runs each model turn shows only the messages new since the previous turn, and long values are
folded and capped at :data:`VALUE_CAP` characters. See docs/view.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final, cast

from ..trace.canonical import pretty_json
from ..trace.errors import CanonicalJSONError
from ..trace.media import MEDIA_PART, is_part_list
from ..trace.model import STEP_TYPES, Trace
from ..trace.payloads import Outcome, terminal_outcome
from ..trace.secrets import known_secrets, mask
from .diff import SEMANTIC_COMPARISON, OutcomeDiff, TraceDiff, diff_outcome, diff_traces
from .extensions import ORIGINAL_CANNOT_REPLAY, extensions_used
from .jsondiff import changed_leaf_paths, compact_json, render_value
from .labels import describe_step, type_label
from .verify import VerifyReport
from .view_assets import CONTENT_SECURITY_POLICY, SCRIPT, STYLE
from .view_media import render_media

__all__ = [
    "CHANGED_FIELDS_SHOWN",
    "FOLD_CHARS",
    "FOLD_LINES",
    "VALUE_CAP",
    "render_diff_html",
    "render_run_html",
]

#: A value longer than this many characters, or lines, is folded behind an expander.
FOLD_CHARS: Final = 320
FOLD_LINES: Final = 8
#: At most this many characters of one value are put on the page; ``inspect --step`` shows the rest.
VALUE_CAP: Final = 20_000
#: Characters of a folded value shown in its one-line preview.
PREVIEW_CHARS: Final = 100
#: JSON values up to this many characters are shown on one line.
ONE_LINE_JSON: Final = 80
#: Changed leaf fields listed per diverging step pair.
CHANGED_FIELDS_SHOWN: Final = 20

_ROLES: Final = ("user", "assistant", "system", "developer", "tool")
_SETTINGS: Final = ("systemPrompt", "model", "params", "tools")


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _json_text(value: Any) -> str:
    """Small values on one line (compact, as the file has them), larger ones indented."""
    compact = compact_json(value, ONE_LINE_JSON)
    if len(compact) <= ONE_LINE_JSON:
        return compact
    try:
        return pretty_json(value)
    except CanonicalJSONError:
        return compact_json(value)


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


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def _iso(epoch_ms: Any) -> str:
    """Epoch milliseconds as ``Date.prototype.toISOString`` writes them, or ``?``."""
    number = _number(epoch_ms)
    if number is None:
        return "?"
    try:
        whole = int(number)
        moment = datetime.fromtimestamp(whole // 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return "?"
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{whole % 1000:03d}Z"


def _offset(timestamp: Any, base: int | float | None) -> str:
    number = _number(timestamp)
    if base is None or number is None:
        return "?"
    delta = number - base
    return f"{delta:+,.0f} ms" if float(delta).is_integer() else f"{delta:+,.1f} ms"


def _steps_of(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The steps as dicts, whatever a broken cassette holds in their place."""
    steps = trace.get("steps")
    if not isinstance(steps, list):
        return []
    return [step if isinstance(step, dict) else {} for step in steps]


def _time_base(trace: Mapping[str, Any], steps: Sequence[dict[str, Any]]) -> tuple[str, int | float | None]:
    """Offsets count from ``createdAt`` when it precedes the run, else from step 0."""
    created = _number(trace.get("createdAt"))
    first = _number(steps[0].get("timestamp")) if steps else None
    if created is not None and (first is None or created <= first):
        return "createdAt", created
    if first is not None:
        return "step 0", first
    return "nothing (no usable timestamps)", None


def _overlap(before: list[Any], after: list[Any]) -> int:
    """How many messages ``after`` starts with that ``before`` ends with (the history already shown)."""
    for size in range(min(len(before), len(after)), 0, -1):
        if before[len(before) - size :] == after[:size]:
            return size
    return 0


def _payload(step: Mapping[str, Any]) -> dict[str, Any]:
    payload = step.get("payload")
    return payload if isinstance(payload, dict) else {}


class _Page:
    """Renders page pieces; every text from a cassette passes through :meth:`text` or :meth:`block`."""

    def __init__(
        self, secrets: Iterable[str], anchor: str = "step-", shared: tuple[str, int] = ("", 0)
    ) -> None:
        self.secrets = known_secrets(secrets)
        self.anchor = anchor
        #: On a diff page, steps below this index are shown once, under this other anchor prefix.
        self.shared_anchor, self.shared_length = shared

    def text(self, value: Any) -> str:
        return html.escape(mask(str(value), self.secrets))

    def value_text(self, value: Any) -> str:
        """A short one-line value (compact JSON, masked, capped) for change lists."""
        return html.escape(render_value(value, self.secrets))

    def block(self, value: Any, css: str = "") -> str:
        """Strings as text, anything else as pretty JSON; long ones folded, huge ones cut."""
        kind = "text" if isinstance(value, str) else "json"
        shown = mask(value if isinstance(value, str) else _json_text(value), self.secrets)
        note = ""
        if len(shown) > VALUE_CAP:
            hidden = len(shown) - VALUE_CAP
            shown = shown[:VALUE_CAP] + "…"
            note = (
                f'<p class="note">{hidden:,} more characters not shown; '
                "<code>blackbox inspect &lt;cassette&gt; --step N</code> prints the whole step</p>"
            )
        pre = f'<pre class="{kind} {css}">{html.escape(shown)}</pre>{note}'
        lines = shown.count("\n") + 1
        if len(shown) <= FOLD_CHARS and lines <= FOLD_LINES:
            return pre
        preview = " ".join(shown[: PREVIEW_CHARS * 2].split())[:PREVIEW_CHARS]
        size = f"{_count(lines, 'line')}, {_count(len(shown), 'char')}"
        return (
            f'<details class="fold"><summary><span class="preview">{html.escape(preview)}…</span> '
            f'<span class="size">({size})</span></summary>{pre}</details>'
        )

    # ---- pieces of a step body

    def tool_name(self, body: dict[str, Any]) -> str:
        """``<b>search</b> <code>call-0</code>``: which tool, and the id that pairs call and result."""
        name, call_id = self.text(body.get("toolName", "?")), self.text(body.get("toolCallId", ""))
        return f"<b>{name}</b> <code>{call_id}</code>"

    def call(self, call: Any) -> str:
        body = call if isinstance(call, dict) else {}
        return (
            f'<div class="call"><span class="arrow">→</span> {self.tool_name(body)}'
            f"{self.block(body.get('toolInput'))}</div>"
        )

    def result(self, result: Any) -> str:
        body = result if isinstance(result, dict) else {}
        name = self.tool_name(body)
        if "error" in body:
            return (
                f'<div class="result error"><span class="arrow">✗</span> {name} '
                f'<span class="error-label">ERROR</span>{self.block(body["error"])}</div>'
            )
        value = body.get("result")
        shown = "".join(map(self.part, value)) if is_part_list(value) else self.block(value)
        return f'<div class="result"><span class="arrow">←</span> {name}{shown}</div>'

    def part(self, part: Any) -> str:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part, dict):
            return self.block(part.get("text"))
        if kind == "tool_use":
            return self.call(part)
        if kind == "tool_result":
            return self.result(part)
        if kind == MEDIA_PART and isinstance(part, dict):
            return render_media(part, self.text)
        return self.block(part)

    def message(self, message: Any) -> str:
        body = message if isinstance(message, dict) else {}
        role = body.get("role")
        css = role if role in _ROLES else "other"
        content = body.get("content")
        if isinstance(content, list):
            inner = "".join(self.part(part) for part in content)
        else:
            inner = self.block(content)
        return f'<div class="msg role-{css}"><span class="role">{self.text(role)}</span>{inner}</div>'

    def setting(self, name: str, value: Any, changed: bool) -> str:
        label = f"{name} (changed)" if changed else name
        if name == "tools" and isinstance(value, list):
            names = ", ".join(str(tool.get("name")) if isinstance(tool, dict) else "?" for tool in value)
            return (
                f'<details class="fold setting"><summary><span class="label">{label}</span>'
                f"{len(value)} tool(s): {self.text(names)}</summary>{self.block(value)}</details>"
            )
        if isinstance(value, str) and name != "systemPrompt":
            shown = f"<code>{self.text(value)}</code>"
        else:
            shown = self.block(value)
        return f'<div class="setting"><span class="label">{label}</span>{shown}</div>'

    def link(self, index: int) -> str:
        anchor = self.shared_anchor if index < self.shared_length else self.anchor
        return f'<a href="#{anchor}{index}">step {index}</a>'


class _Run:
    """One run's steps, with what each model turn adds to the turn before it."""

    def __init__(self, trace: Mapping[str, Any], page: _Page) -> None:
        self.page = page
        self.steps = _steps_of(trace)
        self.base_label, self.base = _time_base(trace, self.steps)
        self.previous_input: dict[int, int | None] = {}
        self.turn_number: dict[int, int] = {}
        last: int | None = None
        for position, step in enumerate(self.steps):
            if step.get("type") == "model_input":
                self.previous_input[position] = last
                self.turn_number[position] = len(self.turn_number) + 1
                last = position

    def row(self, position: int, extra_class: str = "", extra_html: str = "") -> str:
        step = self.steps[position]
        kind = step.get("type")
        css = ["step", f"t-{kind}" if kind in STEP_TYPES else "t-unknown"]
        if kind == "model_input":
            css.append("turn")
        if kind == "tool_result" and "error" in _payload(step):
            css.append("error")
        if extra_class:
            css.append(extra_class)
        return (
            f'<li class="{" ".join(css)}" id="{self.page.anchor}{position}" data-index="{position}" '
            f'data-type="{self.page.text(kind)}">{self.head(position)}{extra_html}'
            f'<div class="body">{self.body(position)}</div></li>'
        )

    def head(self, position: int) -> str:
        step, page = self.steps[position], self.page
        digest, timestamp = str(step.get("hash", "")), step.get("timestamp")
        turn = self.turn_number.get(position)
        label = f'<span class="turn-label">turn {turn}</span>' if turn is not None else ""
        return (
            f'<div class="head"><a class="idx" href="#{page.anchor}{position}">#{position}</a>'
            f'<span class="type">{page.text(type_label(step.get("type")))}</span>'
            f'<span class="time" title="{_iso(timestamp)}">{_offset(timestamp, self.base)}</span>'
            f'<code class="hash" title="{page.text(digest)}">{page.text(digest[:8])}</code>'
            f'<span class="summary">{page.text(describe_step(step, page.secrets))}</span>{label}</div>'
        )

    def body(self, position: int) -> str:
        step, page = self.steps[position], self.page
        kind, payload = step.get("type"), _payload(step)
        if kind == "model_input":
            return self.turn_body(position)
        if kind == "model_output":
            return self.output_body(payload)
        if kind == "tool_call":
            return page.call(payload)
        if kind == "tool_result":
            return page.result(payload)
        if kind == "metadata":
            return self.metadata_body(payload)
        return page.block(step.get("payload"))

    def turn_body(self, position: int) -> str:
        page = self.page
        payload = _payload(self.steps[position])
        messages = payload.get("messages")
        messages = messages if isinstance(messages, list) else []
        before = self.previous_input.get(position)
        if before is None:
            pieces = [page.setting(name, payload[name], False) for name in _SETTINGS if name in payload]
            return "".join(pieces) + "".join(page.message(message) for message in messages)
        earlier = _payload(self.steps[before])
        pieces = [
            page.setting(name, payload[name], True)
            for name in _SETTINGS
            if name in payload and payload[name] != earlier.get(name)
        ]
        old = earlier.get("messages")
        old = old if isinstance(old, list) else []
        shared = _overlap(old, messages)
        if shared:
            pieces.append(f'<p class="note">{shared} earlier message(s) as in {page.link(before)}; new:</p>')
        elif old:
            pieces.append(f'<p class="note">the history differs from {page.link(before)}; all messages:</p>')
        pieces += [page.message(message) for message in messages[shared:]]
        if len(messages) == shared:
            pieces.append('<p class="note">no new messages</p>')
        return "".join(pieces)

    def output_body(self, payload: dict[str, Any]) -> str:
        page, shape = self.page, payload.get("type")
        text = payload.get("text")
        if shape == "final_answer":
            return f'<div class="answer"><span class="label">final answer</span>{page.block(text)}</div>'
        pieces = [page.block(text)] if isinstance(text, str) else []
        if shape == "tool_call":
            pieces.append(page.call(payload))
        elif shape == "tool_calls" and isinstance(payload.get("calls"), list):
            pieces += [page.call(call) for call in payload["calls"]]
        else:
            pieces = [page.block(payload)]
        return "".join(pieces)

    def metadata_body(self, payload: dict[str, Any]) -> str:
        page, event = self.page, payload.get("event")
        rest = {
            key: value for key, value in payload.items() if key not in ("event", "status", "result", "reason")
        }
        extra = page.block(rest) if rest else ""
        if event == "run_completed":
            status = payload.get("status")
            css = "success" if status == "success" else "other"
            return (
                f'<div class="terminal {css}">run completed · {page.text(status)}</div>'
                f"{page.block(payload.get('result'))}{extra}"
            )
        if event == "run_failed":
            return f'<div class="terminal error">run failed · {page.text(payload.get("reason"))}</div>{extra}'
        return page.block(payload)

    def outcome(self) -> Outcome:
        return terminal_outcome(cast(Trace, {"steps": self.steps}))


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


def _outcome_text(outcome: Outcome, page: _Page) -> str:
    if outcome.status == "success" and outcome.final_answer is not None:
        return f'<span class="label">final answer</span>{page.text(outcome.final_answer)}'
    if outcome.status == "error" and outcome.failure_reason is not None:
        return f'<span class="label">failure reason</span>{page.text(outcome.failure_reason)}'
    return '<span class="label">the run has no terminal step</span>'


def _verify_badge(report: VerifyReport | None, page: _Page) -> str:
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


def _invariants(report: VerifyReport | None, page: _Page) -> str:
    if report is None:
        return ""
    rows = "".join(
        f'<tr><td>{result.name}</td><td class="{result.status}">{result.status}</td>'
        f"<td>{page.text(result.detail)}</td></tr>"
        for result in report.invariants
    )
    return f'<table class="invariants">{rows}</table>'


def _failure_note(report: VerifyReport | None, page: _Page) -> tuple[int | None, str]:
    """The step a failed check points at, and the note shown on that row."""
    failure = report.first_failure if report is not None else None
    if failure is None or failure.step_index is None:
        return None, ""
    return failure.step_index, (
        f'<div class="failure">✗ verify failed here: {failure.name} — {page.text(failure.detail)}</div>'
    )


def _id_rows(trace: Mapping[str, Any], page: _Page) -> list[tuple[str, str]]:
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
    page = _Page(secrets)
    run = _Run(trace, page)
    outcome = run.outcome()
    failed_at, failure = _failure_note(verify_report, page)
    rows = _id_rows(trace, page)
    rows += [
        ("Created", _iso(trace.get("createdAt"))),
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


def _changes(parent: Mapping[str, Any], child: Mapping[str, Any], page: _Page) -> tuple[bool, str]:
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


def _side(run: _Run, position: int, role: str, changed: bool) -> str:
    if position >= len(run.steps):
        return f'<div class="side {role}"><p class="missing">({role} run has no step {position})</p></div>'
    css = f"side {role} changed" if changed else f"side {role}"
    return f'<div class="{css}"><ol class="timeline">{run.row(position)}</ol></div>'


def _pair(parent: _Run, child: _Run, position: int, diff: TraceDiff) -> str:
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


def _outcome_rows(outcome: OutcomeDiff, page: _Page) -> list[tuple[str, str]]:
    def tools(names: list[str]) -> str:
        return page.text(" → ".join(names)) if names else "(none)"

    return [
        ("Outcome", f"<b>{page.text(outcome.verdict)}</b>"),
        ("Parent ended", f"{_outcome_badge(outcome.parent)} {_outcome_text(outcome.parent, page)}"),
        ("Child ended", f"{_outcome_badge(outcome.child)} {_outcome_text(outcome.child, page)}"),
        ("Parent tools", tools(outcome.parent_tools)),
        ("Child tools", tools(outcome.child_tools)),
    ]


def _diff_header(parent: Trace, child: Trace, diff: TraceDiff, page: _Page, labels: Sequence[str]) -> str:
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


def _shared_prefix(parent: _Run, length: int) -> str:
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
    page = _Page(secrets, anchor="parent-step-")
    diff = diff_traces(parent, child, semantic=semantic)
    child_page = _Page(secrets, anchor="child-step-", shared=("parent-step-", diff.shared_prefix_length))
    left, right = _Run(parent, page), _Run(child, child_page)
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
