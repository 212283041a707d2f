"""How a replay compares what the agent sends with the recording: the match mode (``strict`` or
``sequence``) and the match rules, as one policy object the replay cursor asks.

``strict`` requires every request and wrapped tool's input to equal the recorded one; ``sequence``
only pairs them up. Both apply the match rules (the views compared) and the user's matcher.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, NoReturn

from ..analysis.jsondiff import ABSENT, Difference, first_difference
from ..errors import ReplayDivergenceError
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


def _parts(request: Any, message_text: Any) -> Parts | None:
    """A request's parts (``None``: it is no object with a list of messages, so it is compared whole)."""
    if type(request) is not dict or type(request.get("messages")) is not list:
        return None
    rest = identity_text({key: value for key, value in request.items() if key != "messages"})
    return rest, [message_text(message) for message in request["messages"]]


def _recorded_parts(request: Any) -> Parts | None:
    entry = _RECORDED_PARTS.get(id(request))
    if entry is None or entry[0] is not request:
        entry = _RECORDED_PARTS[id(request)] = (request, _parts(request, identity_text))
        if len(_RECORDED_PARTS) > _RECORDED_MAX:
            _RECORDED_PARTS.popitem(last=False)
    return entry[1]


class Comparison:
    """What both match modes share: the match rules' views of both sides (each recorded one computed
    once), the user's matcher, and the closeness of a request to a recorded call.

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
        #: The last request's messages by identity (kept alive with them) and their ``identity_text``.
        self._messages: dict[int, tuple[Any, str | None]] = {}

    def identical(self, turn: RecordedTurn, view: Any) -> bool:
        """``identical_json`` of a recorded call (as compared) and a request.

        Without match rules, a request is compared in parts, message by message: a message the
        previous request held (the same normalized object, see ``CallIds.normalized``, which the
        session hands out again only for byte-identical history) is not encoded again, and each
        recorded request's parts are computed once per cassette. Equal parts are exactly equal
        whole texts, so a change anywhere in the history is still a difference.
        """
        if self.rules is None:
            parts = _recorded_parts(turn.request)
            actual = _parts(view, self._message_text) if parts is not None else None
            if actual is not None:
                self._messages = {id(message): self._messages[id(message)] for message in view["messages"]}
                return None not in actual[1] and actual == parts
        if turn not in self._identities:
            self._identities[turn] = identity_text(self.recorded_view(turn))
        recorded = self._identities[turn]
        return recorded is not None and recorded == identity_text(view)

    def _message_text(self, message: Any) -> str | None:
        entry = self._messages.get(id(message))
        if entry is None or entry[0] is not message:
            entry = self._messages[id(message)] = (message, identity_text(message))
        return entry[1]

    def check_unedited(self) -> None:
        """The messages of the last request, encoded again, must give the texts they were compared by.

        Reusing a message's text by identity is sound only while nothing edits the normalized
        message once made, which the session, the providers and the match rules all promise (the
        matcher gets copies). Checking it once per run costs one request's encoding, and a message
        edited at any point of the run stays edited, so a break of the promise cannot go unseen.
        """
        for message, text in self._messages.values():
            if identity_text(message) != text:
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
