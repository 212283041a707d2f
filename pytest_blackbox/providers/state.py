"""Conversation state the provider keeps ↔ neutral ids: one mapping for every kind of it.

A provider may keep state between calls and hand the agent an id for it: a Responses response id
(which ``previous_response_id`` names), a Responses ``conversation``, an Anthropic code execution
``container``. A cassette holds no provider id, so each becomes a neutral id, and a replay hands the
agent those neutral ids; the next request is compared with the mapping applied, so naming the same
state as the recording did matches and naming anything else diverges at that field.

- A response id becomes ``response-<i>``, ``i`` the index of the ``model_output`` step that answered
  it: a replay gives every response that id, so nothing needs recording until a request names one.
- Any other id a response hands out (a container) becomes ``<kind>-N`` in order of first sight, and
  the output records it.
- An id no response of the run handed out (a conversation or container made outside the run) becomes
  ``<kind>-outside-<digest>``: compared as is (by its SHA-256), never written.
- A neutral id maps to itself: that is what a replay hands out and the agent sends back. Sent to the
  provider, it would name nothing: a live request that names one (a run gone live after a replay
  handed it out) is refused.

See docs/cassette-format.md#conversation-state-kept-by-the-provider.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Literal

from ..errors import BlackboxUnsupportedError

__all__ = ["StateIds", "StateKind"]

#: What kind of provider-kept state an id names; the neutral ids' prefix.
StateKind = Literal["response", "conversation", "container"]
_OWN: Final = re.compile(r"(response|conversation|container)-(?:\d+|outside-[0-9a-f]{16})")
_DIGEST_LENGTH: Final = 16
_CONCURRENT: Final = (
    "a previous_response_id in a run with overlapping model calls is not supported yet; the response "
    "it names has no place in the cassette until the run ends; await each call before the next"
)
_WENT_LIVE: Final = (
    "{field} {neutral} was handed out by the replay, so the provider does not know it: a run that "
    "continues a conversation the provider keeps cannot go live after replaying part of it; record the "
    "whole run again"
)


class StateIds:
    """Provider state ids ↔ neutral ids for one session (see the module docstring)."""

    def __init__(self) -> None:
        self._by_provider: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        #: Response ids received whose ``model_output`` step is not written yet.
        self._unplaced: list[str] = []
        #: Set once the session sends requests to the provider (a recording, or a replay gone live).
        self.live = False
        self._named_response = False
        self._concurrent = False

    def named(self, kind: StateKind, provider_id: str, field: str) -> str:
        """The neutral id for state a request (or a response's echo of it) names in ``field``."""
        if _OWN.fullmatch(provider_id) is not None:
            if self.live:
                raise BlackboxUnsupportedError(_WENT_LIVE.format(field=field, neutral=provider_id))
            return provider_id
        if kind == "response":
            if provider_id in self._unplaced or (self._concurrent and provider_id not in self._by_provider):
                raise BlackboxUnsupportedError(_CONCURRENT)
            self._named_response = True
        known = self._by_provider.get(provider_id)
        if known is not None:
            return known
        digest = hashlib.sha256(provider_id.encode("utf-8")).hexdigest()[:_DIGEST_LENGTH]
        return f"{kind}-outside-{digest}"

    def handed_out(self, kind: StateKind, provider_id: str) -> str:
        """The neutral id for state a response hands out (not a response id: see :meth:`answered`)."""
        if _OWN.fullmatch(provider_id) is not None:
            return provider_id
        known = self._by_provider.get(provider_id)
        if known is None:
            number = self._counters.get(kind, 0)
            self._counters[kind] = number + 1
            known = self._by_provider[provider_id] = f"{kind}-{number}"
        return known

    def answered(self, response_id: str) -> None:
        """A response's own id, placed once its ``model_output`` step is written (:meth:`place`)."""
        self._unplaced.append(response_id)

    def place(self, output_index: int) -> None:
        """The responses answered since the last call are the ``model_output`` step ``output_index``."""
        for response_id in self._unplaced:
            self._by_provider[response_id] = f"response-{output_index}"
        self._unplaced.clear()

    def go_concurrent(self) -> None:
        """Overlapping calls: steps are ordered at the end, so response ids get no place from now on."""
        if self._named_response:
            raise BlackboxUnsupportedError(_CONCURRENT)
        self._concurrent = True
        self._unplaced.clear()
