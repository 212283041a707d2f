"""How a replay compares what the agent sends with the recording: the match mode (``strict`` or
``sequence``) and the match rules, as one policy object the replay cursor asks.

``strict`` requires every request and wrapped tool's input to equal the recorded one; ``sequence``
only pairs them up. Both apply the match rules (the views compared) and the user's matcher, and
remember the first comparison that passed only because of them (:class:`Relaxation`).

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from ..analysis.jsondiff import ABSENT, Difference, first_difference
from ..errors import ReplayDivergenceError
from ..trace.prefix import same_start
from ..vocabulary import Match
from .divergence import common_prefix, diverge
from .recorded import RecordedPair, RecordedRun, RecordedTurn
from .rules import MatchRules
from .tools import identity_text, same_json

__all__ = [
    "MATCHER_HINT",
    "REQUEST_HINT",
    "TOOL_INPUT_HINT",
    "Comparison",
    "Relaxation",
    "SequenceComparison",
    "StrictComparison",
    "comparison_for",
]

REQUEST_HINT = (
    "The agent sent a different request than the one recorded. If the difference comes from something "
    f"nondeterministic (a timestamp, a random id), rerun with {ReplayDivergenceError.SEQUENCE_OPTION}."
)
TOOL_INPUT_HINT = "The agent called the tool with different arguments than it did when recording."
MATCHER_HINT = "Your matcher refused the request (the reason is on the actual line)."

_sorted_text = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode

#: A request as :meth:`StrictComparison.identical` compares it: the ``identity_text`` of everything
#: but its messages, and of each message.
Parts = tuple[str | None, list[str | None]]

#: Recorded requests' parts by the identity of their payload (kept alive with them): a cassette's
#: loaders share one trace between the sessions that replay it, so its side is computed once.
_RECORDED_PARTS: OrderedDict[int, tuple[Any, Parts | None]] = OrderedDict()
_RECORDED_MAX = 4096
#: What relaxes every comparison of the ``sequence`` match mode.
SEQUENCE_RULE = "the sequence match mode"


@functools.lru_cache(maxsize=1024)
def _key_text(key: str) -> str:
    """An object key as ``identity_text`` writes it (a request's field names: a handful per protocol)."""
    return str(identity_text(key))


def _joined(keys: list[str], texts: list[str]) -> str:
    """The ``identity_text`` of an object from its (sorted) keys and the texts of their values."""
    return "{" + ", ".join(f"{_key_text(key)}: {text}" for key, text in zip(keys, texts, strict=True)) + "}"


def _parts(
    request: Any,
    message_texts: Callable[[list[Any]], list[str | None]],
    rest_text: Callable[[dict[Any, Any]], str | None] = identity_text,
) -> Parts | None:
    """A request's parts (``None``: it is no object with a list of messages, so it is compared whole):
    the ``identity_text`` of everything but its messages (``rest_text``), and of each message."""
    if type(request) is not dict or type(request.get("messages")) is not list:
        return None
    rest = {key: value for key, value in request.items() if key != "messages"}
    return rest_text(rest), message_texts(request["messages"])


def _texts(messages: list[Any]) -> list[str | None]:
    return [identity_text(message) for message in messages]


def _interned_texts(messages: list[Any]) -> list[str | None]:
    """A recorded request's message texts, each the one object every recorded request repeating that
    message holds: once a request matched, the texts it keeps (``Comparison._texts_of``) are those
    objects, so comparing the next request's history with its recorded one stops at identity."""
    return [text if text is None else sys.intern(text) for text in _texts(messages)]


def _encode_to(values: list[Any], texts: list[str | None]) -> bool:
    """Whether ``values`` give each its ``identity_text`` in ``texts`` again, encoded as one list: the
    encoder writes a list as its items' texts joined by ``", "``, so one call checks them all."""
    if None in texts:
        return _texts(values) == texts
    return identity_text(values) == "[" + ", ".join(texts) + "]"  # type: ignore[arg-type]


def _recorded_parts(request: Any) -> Parts | None:
    entry = _RECORDED_PARTS.get(id(request))
    if entry is None or entry[0] is not request:
        entry = _RECORDED_PARTS[id(request)] = (request, _parts(request, _interned_texts))
        if len(_RECORDED_PARTS) > _RECORDED_MAX:
            _RECORDED_PARTS.popitem(last=False)
    return entry[1]


@dataclass(frozen=True)
class Relaxation:
    """A request or tool input that matched its recording only because a rule relaxed the comparison:
    as sent, it differs at ``path`` (masked) of step ``index``; ``rules`` names what let it through."""

    index: int
    path: str
    rules: str


def _tool_path(name: str, path: str) -> str:
    """A path inside a tool's input as ``ignore`` writes it: ``tool NAME input.city``."""
    if path == "(root)":
        return f"tool {name} input"
    return f"tool {name} input{'' if path.startswith('[') else '.'}{path}"


class Comparison:
    """What both match modes share: the match rules' views of both sides (each recorded one computed
    once), the user's matcher, the closeness of a request to a recorded call, and the first
    comparison a rule relaxed.

    The subclasses say what the mode requires of a request that answers a recorded call.
    """

    #: Whether a request continues a recorded call only if it starts with that call's own messages.
    exact: bool = True

    def __init__(
        self, run: RecordedRun, secrets: Iterable[str] = (), rules: MatchRules | None = None
    ) -> None:
        self.run = run
        self.secrets = secrets
        #: The match rules, if any is set: without them a request is compared exactly as recorded.
        self.rules = rules if rules is not None and rules.active else None
        self._views: dict[RecordedTurn, Any] = {}
        self._texts: dict[RecordedTurn, str] = {}
        #: The last request's messages (kept alive with them) and their ``identity_text``.
        self._messages: list[Any] = []
        self._message_texts: list[str | None] = []
        #: The last request's other fields, by name: (value, its ``identity_text``).
        self._fields: dict[str, tuple[Any, str | None]] = {}
        #: The last request's other fields as compared: their names in order, their values, the text.
        self._last_rest: tuple[list[Any], list[Any], str | None] = ([], [], "{}")
        #: The first request or tool input that matched only through a rule (``None``: none did).
        self.relaxed: Relaxation | None = None

    # -- views -----------------------------------------------------------------------------------

    def view(self, actual: Any) -> Any:
        """A request as compared: with the match rules applied, if any is set."""
        return actual if self.rules is None else self.rules.view(actual)

    def recorded_view(self, turn: RecordedTurn) -> Any:
        """A recorded request as compared (computed once per recorded call)."""
        if self.rules is None:
            return turn.request
        view = self._views.get(turn)
        if view is None:
            view = self._views[turn] = self.rules.view(turn.request)
        return view

    def tool_view(self, name: str, tool_input: Any) -> Any:
        """A wrapped tool's input as compared."""
        return tool_input if self.rules is None else self.rules.tool_view(name, tool_input)

    def text(self, turn: RecordedTurn) -> str:
        """A recorded request as compared, as canonical JSON text (computed once)."""
        text = self._texts.get(turn)
        if text is None:
            text = self._texts[turn] = _sorted_text(self.recorded_view(turn))
        return text

    def closest(self, candidates: list[RecordedTurn], view: Any) -> RecordedTurn:
        """The candidate whose request starts with the longest run of the same canonical JSON."""
        if len(candidates) == 1:
            return candidates[0]
        text = _sorted_text(view)
        return max(candidates, key=lambda t: (common_prefix(self.text(t), text), -t.number))

    def same_tool_input(self, name: str, recorded: Any, view: Any) -> bool:
        """Whether a recorded tool input, as compared, equals an invocation's (``view``)."""
        return same_json(self.tool_view(name, recorded), view)

    # -- exactly as recorded ---------------------------------------------------------------------

    def same_parts(self, turn: RecordedTurn, request: Any) -> bool | None:
        """Whether ``request`` equals the recorded request as sent, compared message by message: the
        messages the previous request started with (the same normalized objects, see
        ``CallIds.normalized``, which the session hands out again only for byte-identical history)
        are not encoded again, and each recorded request's parts are computed once per cassette.
        ``None``: either is no object with a list of messages (compare them whole)."""
        parts = _recorded_parts(turn.request)
        actual = _parts(request, self._texts_of, self._rest_text) if parts is not None else None
        if actual is None:
            return None
        if None in actual[1] or actual != parts:
            return False
        self._message_texts = parts[1]  # equal texts: the recorded objects (read only), compared by identity
        return True

    def _rest_text(self, rest: dict[Any, Any]) -> str | None:
        """The ``identity_text`` of a request's fields besides its messages: the last request's
        again while they are the very same objects (a session hands the same normalized fields out
        again for byte-identical text, see ``CallIds.reused``), else joined from each field's text."""
        names, values = list(rest), list(rest.values())
        last_names, last_values, last_text = self._last_rest
        if names == last_names and same_start(values, last_values) == len(values):
            return last_text
        if not all(type(key) is str for key in rest):
            text = identity_text(rest)
        else:
            keys = sorted(rest)
            texts = [self._field_text(key, rest[key]) for key in keys]
            text = None if None in texts else _joined(keys, texts)  # type: ignore[arg-type]
        self._last_rest = (names, values, text)
        return text

    def _field_text(self, name: str, value: Any) -> str | None:
        """A field's ``identity_text``, kept while the field is the very same object (the tool
        definitions a session hands out again for byte-identical text, see ``CallIds.reused``)."""
        known = self._fields.get(name)
        if known is None or known[0] is not value:
            known = self._fields[name] = (value, identity_text(value))
        return known[1]

    def _texts_of(self, messages: list[Any]) -> list[str | None]:
        """Each message's ``identity_text``, encoding only those after the last request's start."""
        kept = same_start(messages, self._messages)
        texts = self._message_texts[:kept] + _texts(messages[kept:])
        self._messages, self._message_texts = list(messages), texts[:]
        return texts

    def _relaxes(self) -> bool:
        """Whether a comparison can pass on a difference (a rule is set, or the mode pairs only)."""
        return self.relaxed is None and (self.rules is not None or not self.exact)

    def note_request(self, turn: RecordedTurn, actual: Any, view: Any) -> None:
        """A request answered ``turn``: remember it if it matched only through a rule. Computed only
        while a rule could have relaxed it, and only until the first one that did."""
        if not self._relaxes():
            return
        same = self.same_parts(turn, actual)
        if same or (same is None and same_json(turn.request, actual)):
            return
        diff = first_difference(turn.request, actual, self.secrets)
        if diff is not None:
            views_equal = partial(same_json, self.recorded_view(turn), view)
            self._note(turn.input["index"], diff, views_equal, turn.request, actual)

    def note_tool(self, pair: RecordedPair, name: str, tool_input: Any, view: Any) -> None:
        """A tool invocation claimed ``pair``: remember it if its input matched only through a rule."""
        if not self._relaxes():
            return
        recorded = pair.call["payload"].get("toolInput", ABSENT)
        diff = first_difference(recorded, tool_input, self.secrets)
        if diff is not None:
            diff = Difference(_tool_path(name, diff.path), diff.expected, diff.actual)
            views_equal = partial(self.same_tool_input, name, recorded, view)
            self._note(pair.call["index"], diff, views_equal, recorded, tool_input, name)

    def _note(
        self,
        index: int,
        diff: Difference,
        views_equal: Callable[[], bool],
        recorded: Any,
        actual: Any,
        tool: str | None = None,
    ) -> None:
        """Keep a relaxed comparison, naming what relaxed it: the ``sequence`` mode, unless the match
        rules alone made both sides equal (``views_equal``), else the rules that did."""
        if not self.exact and (self.rules is None or not views_equal()):
            rules = SEQUENCE_RULE
        else:
            assert self.rules is not None
            rules = self.rules.relaxing(diff, recorded, actual, tool)
        self.relaxed = Relaxation(index, diff.path, rules)

    # -- what the mode requires ------------------------------------------------------------------

    def equal_unused(self, following: RecordedTurn | None, view: Any) -> RecordedTurn | None:
        """An unused recorded call this request equals, ``following`` (the next in order) first;
        ``None``: the cursor picks the call the request continues."""
        return None

    def check_request(self, turn: RecordedTurn, actual: Any, view: Any) -> None:
        """Diverge if the mode refuses ``actual`` (``view`` as compared) as the answer to ``turn``."""

    def check_tool(self, pair: RecordedPair, name: str, tool_input: Any, view: Any) -> None:
        """Diverge if the mode refuses a tool invocation whose input differs from ``pair``'s."""

    def judge(self, turn: RecordedTurn, actual: Any) -> None:
        """The user's matcher, if set, has the last word on a request that answers a recorded call."""
        if self.rules is None:
            return
        reason = self.rules.judge(turn.request, actual)
        if reason is not None:
            raise ReplayDivergenceError(
                turn.input["index"], "matcher", "a request the matcher accepts", reason, MATCHER_HINT
            )

    def check_unedited(self) -> None:
        """At the end of a run: raise ``RuntimeError`` if a value this policy reused by identity was
        edited after it was compared (a bug of this package; nothing of the agent's can cause it)."""

    def _diverge_at(self, index: int, diff: Difference, hint: str, rules: str | None) -> NoReturn:
        diverge(index, diff.path, diff.expected, diff.actual, self.secrets, hint, rules)


class SequenceComparison(Comparison):
    """``sequence``: requests and tool inputs are paired with recorded ones, not compared."""

    exact = False


class StrictComparison(Comparison):
    """``strict``: a request must equal its recorded call, and a tool's input its recorded input; the
    first difference is named."""

    def __init__(
        self, run: RecordedRun, secrets: Iterable[str] = (), rules: MatchRules | None = None
    ) -> None:
        super().__init__(run, secrets, rules)
        #: Each compared recorded call's ``identity_text``, so a request is encoded once, not twice.
        self._identities: dict[RecordedTurn, str | None] = {}
        self._by_text: dict[str, list[RecordedTurn]] | None = None

    def identical(self, turn: RecordedTurn, view: Any) -> bool:
        """``identical_json`` of a recorded call (as compared) and a request.

        Without match rules, a request is compared in parts (:meth:`same_parts`). Equal parts are
        exactly equal whole texts, so a change anywhere in the history is still a difference.
        """
        if self.rules is None:
            same = self.same_parts(turn, view)
            if same is not None:
                return same
        if turn not in self._identities:
            self._identities[turn] = identity_text(self.recorded_view(turn))
        recorded = self._identities[turn]
        return recorded is not None and recorded == identity_text(view)

    def check_unedited(self) -> None:
        """The messages and fields of the last request, encoded again, must give the texts they were
        compared by.

        Reusing a message's text by identity is sound only while nothing edits the normalized
        message once made, which the session, the providers and the match rules all promise (the
        matcher gets copies). Checking it once per run costs one request's encoding, and a message
        edited at any point of the run stays edited, so a break of the promise cannot go unseen.
        """
        fields = list(self._fields.values())
        same_fields = _encode_to([value for value, _ in fields], [text for _, text in fields])
        if not same_fields or not _encode_to(self._messages, self._message_texts):
            raise RuntimeError(
                "pytest-blackbox internal error: a request message was edited after it was "
                "compared, so this replay's comparison cannot be trusted; please report it"
            )

    def equal_unused(self, following: RecordedTurn | None, view: Any) -> RecordedTurn | None:
        if following is not None and self.identical(following, view):
            return following
        if self._by_text is None:
            self._by_text = {}
            for turn in self.run.turns:
                self._by_text.setdefault(self.text(turn), []).append(turn)
        wanted = _sorted_text(view)
        return next((t for t in self._by_text.get(wanted, ()) if not t.consumed), None)

    def check_request(self, turn: RecordedTurn, actual: Any, view: Any) -> None:
        if self.identical(turn, view):
            return
        diff = first_difference(self.recorded_view(turn), view, self.secrets)
        if diff is not None:
            applied = self.rules.applied(turn.request, actual) if self.rules is not None else None
            self._diverge_at(turn.input["index"], diff, REQUEST_HINT, applied)

    def check_tool(self, pair: RecordedPair, name: str, tool_input: Any, view: Any) -> None:
        recorded = pair.call["payload"].get("toolInput", ABSENT)
        applied = self.rules.applied(recorded, tool_input, name) if self.rules is not None else None
        diff = Difference(f"tool {name} input", self.tool_view(name, recorded), view)
        self._diverge_at(pair.call["index"], diff, TOOL_INPUT_HINT, applied)


def comparison_for(
    match: Match, run: RecordedRun, secrets: Iterable[str] = (), rules: MatchRules | None = None
) -> Comparison:
    """The policy of match mode ``match`` over ``run``."""
    policy = StrictComparison if match == "strict" else SequenceComparison
    return policy(run, secrets, rules)
