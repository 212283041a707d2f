"""Provider neutrality: no provider-native ids or response keys, and no credentials, in a cassette.

Replay rebuilds every provider response from neutral steps, so anything provider-shaped in a
cassette means the recorder boundary leaked. Two strictnesses apply, as in the original Blackbox
(arda-ulas/blackbox): the cassette's structure is held to every rule, user data only to the
credential rules. Findings are marker labels in the original's order, never the matched text. See
docs/cli-analysis.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..trace.canonical import js_stringify
from ..trace.secrets import JS_SPACE, REALISTIC_CREDENTIALS, known_secrets

__all__ = [
    "API_KEY_MARKER",
    "FORBIDDEN_KEYS",
    "USER_DATA_KEYS",
    "NeutralityScan",
    "NeutralityScanner",
    "find_markers",
    "scan_trace",
    "without_provider_keys",
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

#: (label, pattern) for structural strings and keys, tested in this order: provider ids, then
#: credentials, then the key environment-variable names.
_STRUCTURAL_RULES: tuple[tuple[str, str], ...] = (
    ("toolu_", r"\btoolu_[A-Za-z0-9]*[0-9]"),
    ("msg_", r"\bmsg_[A-Za-z0-9]*[0-9]"),
    ("call_", r"\bcall_[A-Za-z0-9]{20,}"),
    ("chatcmpl-", r"\bchatcmpl-[A-Za-z0-9]{8,}"),
    ("resp_", r"\bresp_[A-Za-z0-9]{16,}"),
    ("sk-ant", r"sk-ant-?[A-Za-z0-9_-]*"),
    ("sk-proj", r"sk-proj-[A-Za-z0-9_-]*"),
    ("sk-", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("bearer-token", rf"\bBearer{JS_SPACE}+[A-Za-z0-9._~+/=-]{{16,}}"),
    ("ANTHROPIC_API_KEY", r"ANTHROPIC_API_KEY"),
    ("OPENAI_API_KEY", r"OPENAI_API_KEY"),
)

Rules = tuple[tuple[str, Any], ...]


def _compiled(rules: Sequence[tuple[str, str]]) -> Rules:
    return tuple((label, re.compile(pattern, re.ASCII).search) for label, pattern in rules)


# Compiled when a walk first needs them: a cassette whose text is clear of every marker (the usual
# case) is never walked, and compiling them cost about a millisecond of every process's first check.
_structural_rules = lru_cache(maxsize=1)(lambda: _compiled(_STRUCTURAL_RULES))
_user_data_rules = lru_cache(maxsize=1)(lambda: _compiled(REALISTIC_CREDENTIALS))


#: Every credential rule (and only those can match inside user data) needs one of these substrings.
_CREDENTIAL_HINTS = ("sk-", "Bearer")
#: Every structural rule needs one of these literals; searching for them first is ~20x faster than
#: running the full rule set on every id and hash.
_STRUCTURAL_PREFILTER = re.compile(r"toolu_|msg_|call_|chatcmpl-|resp_|sk-|Bearer|_API_KEY")
#: Structural strings repeat endlessly (roles, tool names, keys): their verdicts are cached.
_CACHED_TEXT_LENGTH = 128
_NONE: tuple[str, ...] = ()
_SCALARS = frozenset({int, float, bool, type(None)})
#: The members of a step its hash covers (the rest are its ``id`` and ``hash``, and stray keys).
_HASHED_FIELDS = frozenset({"index", "type", "timestamp", "payload", "prevHash"})


def _rule_labels(text: str, rules: Rules) -> tuple[str, ...]:
    """The label of every rule ``text`` matches, in rule order, each once."""
    return tuple(label for label, search in rules if search(text))


def _structural_uncached(text: str) -> tuple[str, ...]:
    if _STRUCTURAL_PREFILTER.search(text) is None:
        return _NONE
    return _rule_labels(text, _structural_rules())


_structural_cached = lru_cache(maxsize=1 << 14)(_structural_uncached)


def _structural_labels(text: str) -> tuple[str, ...]:
    if len(text) <= _CACHED_TEXT_LENGTH:
        return _structural_cached(text)
    return _structural_uncached(text)


def _user_data_labels(text: str) -> tuple[str, ...]:
    if "sk-" not in text and "Bearer" not in text:
        return _NONE
    return _rule_labels(text, _user_data_rules())


@lru_cache(maxsize=1 << 12)
def _key_labels(key: str) -> tuple[str, ...]:
    """A structural key's verdict: forbidden as a key, then whatever its text matches."""
    forbidden = (key,) if key in FORBIDDEN_KEYS else _NONE
    return forbidden + _structural_labels(key)


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

    def text(self, text: str, in_data: bool) -> None:
        found = _user_data_labels(text) if in_data else _structural_labels(text)
        if found:
            self._add(found)
        if self.secrets and any(secret in text for secret in self.secrets):
            self._add((API_KEY_MARKER,))

    def key(self, key: str, in_data: bool) -> None:
        if in_data:
            self.text(key, True)
            return
        found = _key_labels(key)
        if found:
            self._add(found)
        if self.secrets and any(secret in key for secret in self.secrets):
            self._add((API_KEY_MARKER,))

    def walk(self, value: Any, in_data: bool = False, *, structure_only: bool = False) -> None:
        """Every string and key, in document order: a key, then everything under it.

        ``structure_only`` leaves user data out, for values shown to hold no credential and no
        known key (only those can be flagged there); that is most of a cassette's bytes.
        """
        stack: list[tuple[Any, bool, bool]] = [(value, in_data, False)]
        while stack:
            item, data, is_key = stack.pop()
            if is_key:
                self.key(item, data)
            elif isinstance(item, str):
                self.text(str(item), data)
            elif isinstance(item, Mapping):
                entries: list[tuple[Any, bool, bool]] = []
                for key, child in item.items():
                    name = str(key)
                    child_data = data or name in USER_DATA_KEYS
                    entries.append((name, data, True))
                    if type(child) not in _SCALARS and not (structure_only and child_data):
                        entries.append((child, child_data, False))
                stack.extend(reversed(entries))
            elif isinstance(item, (list, tuple)):
                stack.extend((child, data, False) for child in reversed(item) if type(child) not in _SCALARS)


def find_markers(value: Any, api_keys: Iterable[str] = ()) -> list[str]:
    """Marker labels (``toolu_``, ``usage``, ``sk-ant``, ``<api-key-value>``…) found in ``value``.

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


#: Every structural literal but ``sk-`` and ``Bearer`` (which :func:`_free_of_credentials` rules
#: out first), and every forbidden key but ``usage``, holds an underscore. Searching for the
#: underscore and looking around it is several times faster than an alternation of the literals.
_UNDERSCORED_MARKER = re.compile(
    r"_(?:(?<=toolu_)|(?<=msg_)|(?<=call_)|(?<=resp_)|API_KEY|reason|sequence|fingerprint)"
)


def _free_of_structural_markers(text: str | None) -> bool:
    """True only if ``text``, already free of credentials, cannot hold any structural marker.

    Every structural rule needs one of the literals of ``_STRUCTURAL_PREFILTER`` and every
    forbidden key is written as its quoted name; ``\\u`` escapes (which could spell either) were
    ruled out with the credentials.
    """
    return (
        text is not None
        and _UNDERSCORED_MARKER.search(text) is None
        and "chatcmpl-" not in text
        and '"usage"' not in text
    )


def _json_text(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


class NeutralityScanner:
    """Neutrality of one trace met piece by piece in document order: top-level members, then steps.

    A piece whose text provably holds no marker is not walked at all, and one that provably holds no
    credential or known key has only its structure walked; for a step, the text its hash was
    computed over serves, so a reader that checks the chain anyway gets this almost for free.
    """

    def __init__(self, api_keys: Sequence[str] = (), *, text: str | None = None) -> None:
        """``text`` is the whole file, when there is one: if it is clean, no piece is walked."""
        self._collector = _Collector(api_keys)
        self._hints = _credential_hints(api_keys)
        # Hashed text writes a known key as the encoder writes any string, with no other escapes.
        secrets = (js_stringify(secret)[1:-1] for secret in self._collector.secrets)
        self._hashed_hints = (*_CREDENTIAL_HINTS, *secrets)
        self._no_credentials = _free_of_credentials(text, self._hints)
        self._clean = self._no_credentials and _free_of_structural_markers(text)
        self._first_step: int | None = None

    def member(self, key: str, value: Any) -> None:
        """A top-level member; for ``steps``, its value is given step by step to :meth:`step`."""
        if self._clean:
            return
        self._collector.key(key, False)
        if key != "steps":
            self._check(value, key in USER_DATA_KEYS)

    def step(self, position: int, step: Any, hashed: str | None = None) -> None:
        """The step at ``position``; ``hashed`` is the text its hash was computed over, if known.

        That text (see :class:`~pytest_blackbox.trace.chain.ChainCheck`) spells every hashed key and
        string as it is, so searching it, and the few members outside it, stands in for a walk.
        """
        if self._clean or (hashed is not None and self._hashed_step_clean(step, hashed)):
            return
        before = self._collector.hits
        self._check(step, False)
        if self._first_step is None and self._collector.hits > before:
            self._first_step = position

    def _hashed_step_clean(self, step: Any, hashed: str) -> bool:
        """Whether a step whose hashed text is ``hashed`` provably holds no marker at all."""
        if any(hint in hashed for hint in self._hashed_hints) or not _free_of_structural_markers(hashed):
            return False
        secrets = self._collector.secrets
        for key, value in step.items():
            if key in _HASHED_FIELDS:
                continue
            if type(value) is not str or _key_labels(key) or _STRUCTURAL_PREFILTER.search(value):
                return False
            if secrets and any(secret in key or secret in value for secret in secrets):
                return False
        return True

    def _check(self, value: Any, in_data: bool) -> None:
        if type(value) in _SCALARS:
            return
        text = _json_text(value)
        if self._no_credentials or _free_of_credentials(text, self._hints):
            if _free_of_structural_markers(text):  # credentials, and so \\u escapes, ruled out above
                return
            self._collector.walk(value, in_data, structure_only=True)
        else:
            self._collector.walk(value, in_data)

    def result(self) -> NeutralityScan:
        return NeutralityScan(list(self._collector.labels), self._first_step)


def scan_trace(trace: Any, api_keys: Sequence[str] = (), *, text: str | None = None) -> NeutralityScan:
    """Check a whole trace, top-level fields included; ``step_index`` is the first step with a marker.

    ``text`` is the file the trace was parsed from, if any; when it provably holds no marker, or no
    credential or key, the walk is skipped or kept to the structure.
    """
    if not isinstance(trace, dict):
        return NeutralityScan(find_markers(trace, api_keys))
    scanner = NeutralityScanner(api_keys, text=text)
    for key, value in trace.items():
        scanner.member(str(key), value)
        if key == "steps" and isinstance(value, list):
            for position, step in enumerate(value):
                scanner.step(position, step)
    return scanner.result()


def without_provider_keys(value: Any) -> Any:
    """``value`` without the keys neutrality flags in structural positions; user data is kept whole.

    ``verify`` checks the schema on this, so a provider key such as ``stop_reason`` is reported by
    the invariant meant for it, ``provider_neutrality``, rather than as an unknown field.
    """
    if isinstance(value, dict):
        return {
            key: child if key in USER_DATA_KEYS else without_provider_keys(child)
            for key, child in value.items()
            if key not in FORBIDDEN_KEYS
        }
    if isinstance(value, list):
        return [without_provider_keys(item) for item in value]
    return value
