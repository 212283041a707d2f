"""The user's rules over a cassette: what a replay leaves out of the comparison (``ignore``,
``normalize``, ``matcher``) and what a recording keeps out of the file (``redact``, ``secrets``).

Each option has one validator here (``RULE_VALIDATORS``), which ``blackbox(**options)`` and the
pytest plugin's configuration both call, so a bad value gets the same one-line message wherever it
was written. See docs/engine.md#match-rules and docs/engine.md#redaction.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from ..analysis.jsondiff import Difference
from ..errors import BlackboxError, BlackboxUsageError
from ..trace.secrets import REDACTED, truncate_masked

__all__ = [
    "IGNORED",
    "REDACTED",
    "RULE_VALIDATORS",
    "MatchRules",
    "Matcher",
    "NormalizeRule",
    "RedactRule",
    "Redactor",
    "Secrets",
    "check_ignore",
    "check_matcher",
    "check_normalize",
    "check_redact",
    "check_secrets",
]

#: What an ignored array element is compared as (an ignored object key is left out altogether).
IGNORED: Final = "(ignored)"

TextRule = Callable[[str], str]
#: A ``normalize`` rule: a ``(pattern, replacement)`` pair (``re.sub``) or a function ``str -> str``.
NormalizeRule = tuple[re.Pattern[str], str] | TextRule
#: A ``redact`` rule: a pattern whose every match becomes ``[redacted]``, or a function ``str -> str``.
RedactRule = re.Pattern[str] | TextRule
#: ``matcher(recorded_model_input, live_model_input)``: ``None`` when they match, else the reason.
Matcher = Callable[[Any, Any], str | None]

_WILDCARD: Final = "*"
_FIRST = re.compile(r'([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+|\*|"(?:[^"\\]|\\.)*")\]')
_NEXT = re.compile(r'\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+|\*|"(?:[^"\\]|\\.)*")\]')
_TOOL_INPUT = re.compile(r"tool (\S+) input(.*)\Z", re.DOTALL)

PathPart = str | int


def _type_name(value: Any) -> str:
    return type(value).__name__


def _items(option: str, value: Any, shapes: str) -> list[Any]:
    """The items of a list-shaped option (a lone string counts as one item where ``shapes`` allow it)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise BlackboxUsageError(f"{option} must be {shapes}; got {_type_name(value)}")
    return list(value)


# -- ignore ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Path:
    """A parsed ignore path: the tool whose input it addresses (``None``: the request), and its parts."""

    tool: str | None
    parts: tuple[PathPart, ...]


def _parse_parts(text: str, original: str) -> tuple[PathPart, ...]:
    parts: list[PathPart] = []
    position = 0
    while position < len(text):
        found = (_NEXT if parts or text.startswith((".", "[")) else _FIRST).match(text, position)
        if found is None:
            raise BlackboxUsageError(
                f'ignore: "{original}" is not a request field path; write it as a divergence message '
                'prints it, e.g. "messages[2].content[0].result", with [*] for any index'
            )
        name, bracket = found.group(1), found.group(2)
        if name is not None:
            parts.append(name)
        elif bracket == _WILDCARD:
            parts.append(_WILDCARD)
        elif bracket.startswith('"'):
            parts.append(str(json.loads(bracket)))
        else:
            parts.append(int(bracket))
        position = found.end()
    return tuple(parts)


def _parse_path(text: str) -> _Path:
    tool = _TOOL_INPUT.match(text)
    if tool is not None:
        rest = tool.group(2)
        return _Path(tool.group(1), _parse_parts(rest, text) if rest else ())
    if not text:
        raise BlackboxUsageError('ignore: an empty path; name a request field, e.g. "systemPrompt"')
    return _Path(None, _parse_parts(text, text))


def check_ignore(value: Any) -> tuple[str, ...]:
    """``ignore``: request field paths as divergence messages print them (``[*]`` for any index)."""
    shapes = 'a list of request field paths such as "systemPrompt" or "messages[*].content[0].text"'
    items = [value] if isinstance(value, str) else _items("ignore", value, shapes)
    for item in items:
        if not isinstance(item, str):
            raise BlackboxUsageError(f"ignore must be {shapes}; got an item of type {_type_name(item)}")
        _parse_path(item)
    return tuple(items)


def _without(value: Any, parts: tuple[PathPart, ...]) -> Any:
    """``value`` with what ``parts`` addresses left out: an object key removed, an array element
    replaced by :data:`IGNORED` (so later indices keep their place). Copies only along the path.

    An object left empty by the removal goes too (``params`` holding only an ignored
    ``temperature`` compares like a request without ``params``).
    """
    result = _leave_out(value, parts)
    return {} if result is _EMPTIED else result


_EMPTIED: Final = object()


def _leave_out(value: Any, parts: tuple[PathPart, ...]) -> Any:
    part, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        keys = list(value) if part == _WILDCARD else [part] if part in value else []
        if not keys:
            return value
        copied = dict(value)
        for key in keys:
            kept = _leave_out(value[key], rest) if rest else _EMPTIED
            if kept is _EMPTIED:
                del copied[key]
            else:
                copied[key] = kept
        return copied if copied else _EMPTIED
    if isinstance(value, list) and (part == _WILDCARD or isinstance(part, int)):
        at = int(part) if part != _WILDCARD else -1
        indices = range(len(value)) if part == _WILDCARD else [at] if 0 <= at < len(value) else []
        if not indices:
            return value
        items = list(value)
        for index in indices:
            kept = _leave_out(value[index], rest) if rest else IGNORED
            items[index] = {} if kept is _EMPTIED else kept
        return items
    return value


# -- normalize and redact ----------------------------------------------------------------------------


def _pattern(option: str, item: Any) -> re.Pattern[str]:
    if isinstance(item, re.Pattern):
        if not isinstance(item.pattern, str):
            raise BlackboxUsageError(f"{option}: a pattern must be text, not bytes")
        return _not_empty(option, item)
    try:
        pattern = re.compile(item)
    except re.error as exc:
        raise BlackboxUsageError(f"{option}: {item!r} is not a valid regular expression ({exc})") from None
    return _not_empty(option, pattern)


def _not_empty(option: str, pattern: re.Pattern[str]) -> re.Pattern[str]:
    """A pattern that matches the empty text would act between every two characters of every string."""
    if pattern.search("") is not None:
        raise BlackboxUsageError(
            f"{option}: the pattern {pattern.pattern!r} matches the empty text, so it would apply between "
            "every two characters; give a pattern that matches at least one character"
        )
    return pattern


def _is_function(value: Any) -> bool:
    """A text rule given as a function (a lone one counts as a list of one)."""
    return callable(value) and not isinstance(value, (re.Pattern, type))


def check_normalize(value: Any) -> tuple[NormalizeRule, ...]:
    """``normalize``: ``(pattern, replacement)`` pairs and/or functions ``str -> str``."""
    shapes = "a list of (pattern, replacement) pairs and/or functions str -> str"
    rules: list[NormalizeRule] = []
    for item in [value] if _is_function(value) else _items("normalize", value, shapes):
        if _is_function(item):
            rules.append(item)
        elif (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and isinstance(item[0], (str, re.Pattern))
            and isinstance(item[1], str)
        ):
            rules.append((_pattern("normalize", item[0]), item[1]))
        else:
            raise BlackboxUsageError(
                f"normalize must be {shapes}; got an item of type {_type_name(item)} "
                "(a single pair goes in a list: normalize=[(pattern, replacement)])"
            )
    return tuple(rules)


def check_redact(value: Any) -> tuple[RedactRule, ...]:
    """``redact``: regular expressions (each match becomes ``[redacted]``) and/or functions ``str -> str``."""
    shapes = "a list of regular expressions and/or functions str -> str"
    items = (
        [value]
        if isinstance(value, (str, re.Pattern)) or _is_function(value)
        else _items("redact", value, shapes)
    )
    rules: list[RedactRule] = []
    for item in items:
        if isinstance(item, (str, re.Pattern)):
            rules.append(_pattern("redact", item))
        elif _is_function(item):
            rules.append(item)
        else:
            raise BlackboxUsageError(f"redact must be {shapes}; got an item of type {_type_name(item)}")
    return tuple(rules)


def check_matcher(value: Any) -> Matcher | None:
    """``matcher``: a function ``(recorded_model_input, live_model_input) -> None | reason``."""
    if value is None or callable(value):
        return value  # type: ignore[no-any-return]
    raise BlackboxUsageError(
        "matcher must be a function (recorded_model_input, live_model_input) -> None or a reason string; "
        f"got {_type_name(value)}"
    )


def _rule_name(rule: Any) -> str:
    if isinstance(rule, tuple):
        return f"{rule[0].pattern!r} → {rule[1]!r}"
    if isinstance(rule, re.Pattern):
        return repr(rule.pattern)
    return str(getattr(rule, "__qualname__", None) or getattr(rule, "__name__", None) or repr(rule))


def _call(kind: str, function: Callable[..., Any], *args: Any) -> Any:
    """A user's function, called; an error it raises becomes one message naming it (never a
    traceback through the interception, where it would surface as a connection error)."""
    try:
        return function(*args)
    except BlackboxError:
        raise
    except Exception as exc:
        raise BlackboxUsageError(
            f"the {kind} {_rule_name(function)} raised {type(exc).__name__}: {truncate_masked(str(exc))}"
        ) from exc


def _apply(option: str, rule: Any, text: str) -> str:
    """One text rule on one string; a function must return a string."""
    if isinstance(rule, tuple):
        return str(rule[0].sub(rule[1], text))
    if isinstance(rule, re.Pattern):
        return rule.sub(REDACTED, text)
    result = _call(f"{option} function", rule, text)
    if not isinstance(result, str):
        raise BlackboxUsageError(
            f"{option} rule {_rule_name(rule)} returned {_type_name(result)}, not a string"
        )
    return result


def _map_strings(value: Any, text: Callable[[str], str], *, keys: bool = False) -> Any:
    """``value`` rebuilt with ``text`` applied to every string (and object key, if ``keys``)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {
            (text(k) if keys and isinstance(k, str) else k): _map_strings(v, text, keys=keys)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_map_strings(item, text, keys=keys) for item in value]
    return value


class Redactor:
    """The ``redact`` rules, applied to every string (values and object keys) of a value."""

    def __init__(self, rules: tuple[RedactRule, ...]) -> None:
        self.rules = rules

    def text(self, text: str) -> str:
        for rule in self.rules:
            text = _apply("redact", rule, text)
        return text

    def value(self, value: Any) -> Any:
        return _map_strings(value, self.text, keys=True)


# -- secrets -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """Values to handle like the provider API keys: refused in a cassette, masked in every message.

    ``env``: environment variables holding one; ``values``: the values themselves; ``headers``:
    request headers carrying one (``x-gateway-key``); ``query``: URL query parameters carrying one.
    """

    env: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    query: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("env", "values", "headers", "query"):
            object.__setattr__(self, name, _strings(name, getattr(self, name)))
        object.__setattr__(self, "headers", tuple(h.lower() for h in self.headers))

    @property
    def empty(self) -> bool:
        return not (self.env or self.values or self.headers or self.query)


def _strings(key: str, value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else _items(f"secrets[{key!r}]", value, "a list of strings")
    if not all(isinstance(item, str) for item in items):
        raise BlackboxUsageError(f"secrets[{key!r}] must be a list of strings")
    return tuple(items)


#: No more secrets than the API keys: the default of every session (frozen, so one serves all).
_NO_SECRETS: Final = Secrets()


def check_secrets(value: Any) -> Secrets:
    """``secrets``: a :class:`Secrets`, or a mapping of its fields (``env``, ``values``, ...)."""
    if value is None:
        return _NO_SECRETS
    if isinstance(value, Secrets):
        return value
    if not isinstance(value, Mapping):
        raise BlackboxUsageError(
            'secrets must be a mapping such as {"env": [...], "values": [...], "headers": [...], '
            f'"query": [...]}} or pytest_blackbox.Secrets; got {_type_name(value)}'
        )
    unknown = sorted(str(key) for key in value if key not in ("env", "values", "headers", "query"))
    if unknown:
        raise BlackboxUsageError(
            f'secrets has no key "{unknown[0]}"; its keys are env, values, headers, query'
        )
    return Secrets(**{str(key): item for key, item in value.items()})


#: Option name → its validator; each returns the value as ``SessionOptions`` stores it.
RULE_VALIDATORS: Final[dict[str, Callable[[Any], Any]]] = {
    "ignore": check_ignore,
    "normalize": check_normalize,
    "matcher": check_matcher,
    "redact": check_redact,
    "secrets": check_secrets,
}


# -- the comparison ----------------------------------------------------------------------------------


def _changes(rule: NormalizeRule, *values: Any) -> bool:
    """Whether a normalize rule changes any of ``values``."""
    return any(_map_strings(v, partial(_apply, "normalize", rule)) != v for v in values)


def _covers(parts: tuple[PathPart, ...], shown: str, tool: str | None) -> bool:
    """Whether an ignore path's ``parts`` cover the field a difference names (``shown``, as a
    divergence prints it: a path that does not parse, such as one with a masked key, is covered by
    none)."""
    try:
        named = _parse_path(shown)
    except BlackboxUsageError:
        return False
    if named.tool != tool or len(named.parts) < len(parts):
        return False
    return all(part in (_WILDCARD, found) for part, found in zip(parts, named.parts, strict=False))


@dataclass
class MatchRules:
    """``ignore``, ``normalize`` and ``matcher``, as the replay comparison applies them.

    A request matches its recording when the two, each with the ignored fields left out and every
    string normalized, are equal (``strict``) and the matcher accepts them. The matcher sees both
    requests normalized but whole: ``ignore`` leaves a field out of the equality, so that the matcher
    can be the one to judge it (a model name within a family, a bounded number).
    """

    ignore: tuple[str, ...] = ()
    normalize: tuple[NormalizeRule, ...] = ()
    matcher: Matcher | None = None
    _paths: list[_Path] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self._paths = [_parse_path(text) for text in self.ignore]

    @property
    def active(self) -> bool:
        """Whether any rule is set: without one, a replay compares exactly as recorded."""
        return bool(self.ignore or self.normalize or self.matcher is not None)

    def _normalized(self, value: Any) -> Any:
        if not self.normalize:
            return value
        return _map_strings(value, self._text)

    def _text(self, text: str) -> str:
        for rule in self.normalize:
            text = _apply("normalize", rule, text)
        return text

    def view(self, model_input: Any) -> Any:
        """A model request as compared: ignored fields left out, every string normalized."""
        for path in self._paths:
            if path.tool is None:
                model_input = _without(model_input, path.parts)
        return self._normalized(model_input)

    def tool_view(self, name: str, tool_input: Any) -> Any:
        """A wrapped tool's input as compared (``ignore`` paths ``tool NAME input…`` apply)."""
        for path in self._paths:
            if path.tool == name:
                tool_input = _without(tool_input, path.parts) if path.parts else IGNORED
        return self._normalized(tool_input)

    def judge(self, recorded: Any, live: Any) -> str | None:
        """The matcher's verdict on two requests, normalized: ``None`` (they match) or its reason."""
        if self.matcher is None:
            return None
        verdict = _call(
            "matcher",
            self.matcher,
            copy.deepcopy(self._normalized(recorded)),
            copy.deepcopy(self._normalized(live)),
        )
        if verdict is None:
            return None
        if not isinstance(verdict, str):
            raise BlackboxUsageError(
                f"the matcher {_rule_name(self.matcher)} returned {_type_name(verdict)}; "
                "it must return None (the requests match) or a reason string"
            )
        return verdict or "the matcher refused the request"

    def relaxing(self, where: Difference, recorded: Any, live: Any, tool: str | None = None) -> str:
        """The rules that let a request (or ``tool``'s input) differing first at ``where`` match: the
        ignore paths that cover that field, the normalize rules that change its value on either side
        (and the matcher that judged an ignored field); else every rule that changed either side."""
        used = [
            f"the ignore rule {text}"
            for path, text in zip(self._paths, self.ignore, strict=True)
            if path.tool == tool and _covers(path.parts, where.path, tool)
        ]
        if used and self.matcher is not None and tool is None:
            used.append(f"the matcher {_rule_name(self.matcher)}")
        used += [
            f"the normalize rule {_rule_name(rule)}"
            for rule in self.normalize
            if _changes(rule, where.expected, where.actual)
        ]
        return " and ".join(used) or f"the match rules ({self.applied(recorded, live, tool)})"

    def applied(self, recorded: Any, live: Any, tool: str | None = None) -> str | None:
        """Which rules changed either side, for a divergence message (``None``: none did)."""
        used: list[str] = []
        for path, text in zip(self._paths, self.ignore, strict=True):
            whole = tool is not None and not path.parts  # ``tool NAME input``: the whole input
            if path.tool == tool and (
                whole or any(_without(v, path.parts) is not v for v in (recorded, live))
            ):
                used.append(f"ignore {text}")
        used += [f"normalize {_rule_name(rule)}" for rule in self.normalize if _changes(rule, recorded, live)]
        if self.matcher is not None and tool is None:
            used.append(f"matcher {_rule_name(self.matcher)}")
        return "; ".join(used) or None
