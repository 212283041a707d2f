"""Provider neutrality: no provider-native ids or response keys, and no credentials, in a cassette.

Replay rebuilds every provider response from neutral steps, so anything provider-shaped in a
cassette means the recorder boundary leaked. Two strictnesses apply, as in the original Blackbox
(arda-ulas/blackbox): the cassette's structure is held to every rule, user data only to the
credential rules. See docs/cli-analysis.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..trace.secrets import REALISTIC_CREDENTIALS, known_secrets

__all__ = [
    "API_KEY_MARKER",
    "FORBIDDEN_KEYS",
    "USER_DATA_KEYS",
    "NeutralityScan",
    "find_markers",
    "scan_trace",
]

API_KEY_MARKER = "<api-key-value>"

#: The original's user-data keys, plus the structured-output schemas of ``params`` (a schema with a
#: property named ``usage`` is the user's data, like a tool's ``inputSchema``).
USER_DATA_KEYS = frozenset(
    {
        "toolInput",
        "result",
        "error",
        "inputSchema",
        "text",
        "content",
        "systemPrompt",
        "responseFormat",
        "outputConfig",
    }
)

FORBIDDEN_KEYS = frozenset(
    {
        "usage",
        "stop_reason",
        "stop_sequence",
        "finish_reason",
        "system_fingerprint",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    }
)

#: (label, pattern) checked in structural strings and keys; earlier entries win at one position.
_STRUCTURAL_RULES: tuple[tuple[str, str], ...] = (
    ("toolu_", r"\btoolu_[A-Za-z0-9]*\d"),
    ("msg_", r"\bmsg_[A-Za-z0-9]*\d"),
    ("call_", r"\bcall_[A-Za-z0-9]{20,}"),
    ("chatcmpl-", r"\bchatcmpl-[A-Za-z0-9]{8,}"),
    ("resp_", r"\bresp_[A-Za-z0-9]{16,}"),
    ("sk-ant-", r"sk-ant-?[A-Za-z0-9_-]*"),
    ("sk-proj-", r"sk-proj-[A-Za-z0-9_-]*"),
    ("sk-", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("Bearer", r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    ("ANTHROPIC_API_KEY", r"ANTHROPIC_API_KEY"),
    ("OPENAI_API_KEY", r"OPENAI_API_KEY"),
)


def _labelled(rules: Sequence[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    groups = {f"g{i}": label for i, (label, _) in enumerate(rules)}
    pattern = "|".join(f"(?P<g{i}>{regex})" for i, (_, regex) in enumerate(rules))
    return re.compile(pattern), groups


_STRUCTURAL, _STRUCTURAL_LABELS = _labelled(_STRUCTURAL_RULES)
_USER_DATA, _USER_DATA_LABELS = _labelled(REALISTIC_CREDENTIALS)

#: Every credential rule (and only those can match inside user data) needs one of these substrings.
_CREDENTIAL_HINTS = ("sk-", "Bearer")
#: Every structural rule needs one of these literals; searching for them first is ~20x faster than
#: running the full rule set on every id and hash.
_STRUCTURAL_PREFILTER = re.compile(r"toolu_|msg_|call_|chatcmpl-|resp_|sk-|Bearer|_API_KEY")
#: Structural strings repeat endlessly (roles, tool names, keys): their verdicts are cached.
_CACHED_TEXT_LENGTH = 128
_NONE: tuple[str, ...] = ()


def _structural_uncached(text: str) -> tuple[str, ...]:
    if _STRUCTURAL_PREFILTER.search(text) is None:
        return _NONE
    return tuple(_STRUCTURAL_LABELS[m.lastgroup] for m in _STRUCTURAL.finditer(text) if m.lastgroup)


_structural_cached = lru_cache(maxsize=1 << 14)(_structural_uncached)


def _structural_labels(text: str) -> tuple[str, ...]:
    if len(text) <= _CACHED_TEXT_LENGTH:
        return _structural_cached(text)
    return _structural_uncached(text)


@lru_cache(maxsize=1 << 12)
def _key_labels(key: str) -> tuple[str, ...]:
    """A structural key's verdict: forbidden as a key, then whatever its text matches."""
    forbidden = (key,) if key in FORBIDDEN_KEYS else _NONE
    return forbidden + _structural_labels(key)


def _user_data_labels(text: str) -> tuple[str, ...]:
    if "sk-" not in text and "Bearer" not in text:
        return _NONE
    return tuple(_USER_DATA_LABELS[m.lastgroup] for m in _USER_DATA.finditer(text) if m.lastgroup)


class _Collector:
    """Walks JSON and remembers each label once, in the order first found; ``hits`` counts all."""

    def __init__(self, api_keys: Iterable[str]) -> None:
        self.secrets = known_secrets(api_keys)
        self.labels: list[str] = []
        self.hits = 0

    def _add(self, labels: Iterable[str]) -> None:
        for label in labels:
            self.hits += 1
            if label not in self.labels:
                self.labels.append(label)

    def _text(self, text: str, user_data: bool) -> None:
        found = _user_data_labels(text) if user_data else _structural_labels(text)
        if found:
            self._add(found)
        if self.secrets and any(secret in text for secret in self.secrets):
            self._add((API_KEY_MARKER,))

    def walk(self, value: Any, user_data: bool = False) -> None:
        """Every rule, everywhere: structure, user data and the literal API keys."""
        stack: list[tuple[Any, bool]] = [(value, user_data)]
        while stack:
            item, in_data = stack.pop()
            if isinstance(item, str):
                self._text(item, in_data)
            elif isinstance(item, dict):
                children: list[tuple[Any, bool]] = []
                for key, child in item.items():
                    key = str(key)
                    self._text(key, in_data)
                    if not in_data and key in FORBIDDEN_KEYS:
                        self._add((key,))
                    children.append((child, in_data or key in USER_DATA_KEYS))
                stack.extend(reversed(children))
            elif isinstance(item, (list, tuple)):
                stack.extend((child, in_data) for child in reversed(item))

    def walk_structure(self, value: Any) -> None:
        """Structural positions only, for values already shown to hold no credential and no key.

        Only credentials and keys can be flagged inside user data, so its subtrees, most of a
        cassette's bytes, are not entered. This is ``verify``'s hot path: exact JSON types are
        tested first and strings are checked where they are found rather than via the stack.
        """
        stack = [value]
        labels_of = _structural_labels
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind is dict:
                found, structural_keys = _object_plan(tuple(item))
                if found:
                    self._add(found)
                children = []
                for key in structural_keys:
                    child = item[key]
                    if type(child) is str:
                        found = labels_of(child)
                        if found:
                            self._add(found)
                    elif type(child) not in _SCALARS:
                        children.append(child)
                stack.extend(reversed(children))
            elif kind is list:
                children = []
                for child in item:
                    if type(child) is str:
                        found = labels_of(child)
                        if found:
                            self._add(found)
                    elif type(child) not in _SCALARS:
                        children.append(child)
                stack.extend(reversed(children))
            elif isinstance(item, str):
                self._add(labels_of(str(item)))
            elif isinstance(item, dict):  # mapping and sequence subclasses, from callers' own data
                stack.append(dict(item))
            elif isinstance(item, (list, tuple)):
                stack.append(list(item))


_SCALARS = frozenset({int, float, bool, type(None)})

#: Objects in structural positions come in a handful of shapes (step, payload, message, tool…):
#: their keys' verdicts and the keys worth descending into are worked out once per shape.
_PLANS: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[Any, ...]]] = {}
_MAX_PLANS = 4096


def _object_plan(keys: tuple[Any, ...]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    plan = _PLANS.get(keys)
    if plan is None:
        found = tuple(label for key in keys for label in _key_labels(str(key)))
        plan = (found, tuple(key for key in keys if key not in USER_DATA_KEYS))
        if len(_PLANS) < _MAX_PLANS:
            _PLANS[keys] = plan
    return plan


def find_markers(value: Any, api_keys: Iterable[str] = ()) -> list[str]:
    """Marker labels (``toolu_``, ``usage``, ``sk-ant-``, ``<api-key-value>``…) found in ``value``.

    ``value`` is read as structure from its root, as a whole trace is.
    """
    collector = _Collector(api_keys)
    collector.walk(value)
    return collector.labels


@dataclass(frozen=True)
class NeutralityScan:
    """The markers found and the first step holding one (``None`` for trace-level fields)."""

    markers: list[str]
    step_index: int | None = None

    @property
    def clean(self) -> bool:
        return not self.markers


def _credential_hints(api_keys: Iterable[str]) -> tuple[str, ...]:
    """Substrings one of which the JSON text of any credential or known key must contain.

    A key is looked for as JSON writes it. ``/`` may also be written ``\\/``, so a key holding one
    is looked for by its longest slash-free part.
    """
    escaped = (json.dumps(secret, ensure_ascii=False)[1:-1] for secret in known_secrets(api_keys))
    return (*_CREDENTIAL_HINTS, *(max(text.split("/"), key=len) for text in escaped))


def _free_of_credentials(text: str | None, hints: Sequence[str]) -> bool:
    """True only if ``text`` provably holds no credential: no hint, and no ``\\u`` escape hiding one."""
    return text is not None and "\\u" not in text and not any(hint in text for hint in hints)


_FORBIDDEN_KEY_TEXTS = tuple(f'"{key}"' for key in sorted(FORBIDDEN_KEYS))


def _free_of_structural_markers(text: str | None) -> bool:
    """True only if the file text cannot hold a structural marker anywhere, so no walk is needed.

    Every structural rule needs a literal of ``_STRUCTURAL_PREFILTER``, and a forbidden key is
    written as its quoted name; ``\\u`` escapes (which could spell either) rule the shortcut out.
    """
    if text is None or "\\u" in text or _STRUCTURAL_PREFILTER.search(text) is not None:
        return False
    return not any(key in text for key in _FORBIDDEN_KEY_TEXTS)


def _json_text(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def scan_trace(trace: Any, api_keys: Sequence[str] = (), *, text: str | None = None) -> NeutralityScan:
    """Check a whole trace, top-level fields included; ``step_index`` is the first step with a marker.

    ``text`` is the file the trace was parsed from, if any. When it provably holds no credential
    or key, only the structure is walked. Otherwise each step's own JSON text is checked the same
    way, and only a step that may hold one is walked whole.
    """
    collector = _Collector(api_keys)
    if not isinstance(trace, dict):
        collector.walk(trace)
        return NeutralityScan(collector.labels)
    hints = _credential_hints(api_keys)
    whole_file_clean = _free_of_credentials(text, hints)
    if whole_file_clean and _free_of_structural_markers(text):
        return NeutralityScan([])

    def check(value: Any) -> None:
        if whole_file_clean or _free_of_credentials(_json_text(value), hints):
            collector.walk_structure(value)
        else:
            collector.walk(value)

    check({key: value for key, value in trace.items() if key != "steps"})
    first_step: int | None = None
    steps = trace.get("steps")
    for position, step in enumerate(steps if isinstance(steps, list) else ()):
        before = collector.hits
        check(step)
        if first_step is None and collector.hits > before:
            first_step = position
    return NeutralityScan(collector.labels, first_step)
