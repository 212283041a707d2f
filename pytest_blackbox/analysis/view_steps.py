"""How one step of a run is drawn on a ``blackbox view`` page (the run page and each side of the
diff page): every text from a cassette masked and escaped, long values folded and capped, and
each model turn showing only the messages new since the turn before it. See docs/view.md.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final, cast

from ..trace.canonical import pretty_json
from ..trace.errors import CanonicalJSONError
from ..trace.media import MEDIA_PART, is_part_list
from ..trace.model import STEP_TYPES, Trace
from ..trace.payloads import Outcome, terminal_outcome
from ..trace.secrets import known_secrets, mask
from .jsondiff import compact_json, render_value
from .labels import describe_step, type_label
from .view_media import render_media

__all__ = ["FOLD_CHARS", "FOLD_LINES", "VALUE_CAP", "Page", "RunSteps", "iso_time"]

#: A value longer than this many characters, or lines, is folded behind an expander.
FOLD_CHARS: Final = 320
FOLD_LINES: Final = 8
#: At most this many characters of one value are put on the page; ``inspect --step`` shows the rest.
VALUE_CAP: Final = 20_000
#: Characters of a folded value shown in its one-line preview.
PREVIEW_CHARS: Final = 100
#: JSON values up to this many characters are shown on one line.
ONE_LINE_JSON: Final = 80
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


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def iso_time(epoch_ms: Any) -> str:
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


class Page:
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


class RunSteps:
    """One run's steps, with what each model turn adds to the turn before it."""

    def __init__(self, trace: Mapping[str, Any], page: Page) -> None:
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
            f'<span class="time" title="{iso_time(timestamp)}">{_offset(timestamp, self.base)}</span>'
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
        """The output, then each of its other choices (a request for several), numbered from 2."""
        extra = payload.get("choices")
        choices = [choice for choice in extra if isinstance(choice, dict)] if isinstance(extra, list) else []
        return self._one_output(payload) + "".join(
            f'<p class="note">choice {number}</p>{self._one_output(choice)}'
            for number, choice in enumerate(choices, start=2)
        )

    def _one_output(self, payload: dict[str, Any]) -> str:
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
