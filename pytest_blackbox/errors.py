"""Every error a user of pytest-blackbox can see: one class per kind of failure, each message one line.

The cassette errors are defined in ``trace/errors.py`` (so ``trace/`` stays self-contained) and
re-exported here. See docs/engine.md#errors-across-the-sdk-boundary.
"""

from __future__ import annotations

from collections.abc import Sequence

from .trace.errors import (
    BlackboxError,
    CanonicalJSONError,
    CassetteError,
    CassetteReadError,
    CassetteSchemaError,
    CassetteVersionError,
    HashChainError,
)

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "BlackboxUsageError",
    "CanonicalJSONError",
    "CassetteError",
    "CassetteReadError",
    "CassetteSchemaError",
    "CassetteVersionError",
    "DroppedFieldWarning",
    "ForkError",
    "HashChainError",
    "OfflineRequestError",
    "RecordedToolError",
    "ReplayDivergenceError",
    "SecretLeakError",
    "TranscriptImportError",
    "UnreplayableWarning",
]


class BlackboxUnsupportedError(BlackboxError):
    """A request, response or tool value that could not be replayed faithfully, so it is refused."""


class BlackboxUsageError(BlackboxError):
    """A bad option, environment variable, marker argument or call order."""


class OfflineRequestError(BlackboxError):
    """A replay (or other offline run) was asked to reach the network; the request was not sent."""


class SecretLeakError(BlackboxError):
    """The cassette would contain an API key; nothing was written."""


class RecordedToolError(Exception):
    """Raised by a wrapped tool in replay: the error the tool raised when the run was recorded.

    Deliberately not a ``BlackboxError``: it stands for the tool's own failure, with the recorded
    message, so the agent handles it exactly as it handled the original exception.
    """


class UnreplayableWarning(UserWarning):
    """A recording did something a replay will refuse (a request that is not a model call)."""


class DroppedFieldWarning(UserWarning):
    """A recording left out a request or response field Blackbox does not know, as ``drop_fields`` accepts."""


class StrayCallWarning(UserWarning):
    """A model call came from a thread or task of a test that had ended: it was refused, not recorded."""


class RelaxedMatchWarning(UserWarning):
    """A replay passed only because a match rule (or the ``sequence`` mode) relaxed a comparison."""


class ForkError(BlackboxError):
    """A fork could not be set up or run."""


class TranscriptImportError(BlackboxError):
    """A transcript could not be imported."""


class ReplayDivergenceError(BlackboxError):
    """The agent did something other than what the cassette records.

    ``expected`` and ``actual`` are already rendered (compact, capped, masked) so the message can be
    shown as is; ``notes`` are lines about them (where two long texts differ, the match rules applied).
    A hint may name the option that turns the request comparison off as :data:`SEQUENCE_OPTION`;
    the message spells it as the CLI does, and :meth:`text` as the caller's layer does.
    """

    #: Stands in a hint for the option that replays in ``sequence`` mode.
    SEQUENCE_OPTION = "{sequence option}"

    def __init__(
        self,
        step_index: int,
        path: str,
        expected: str,
        actual: str,
        hint: str | None = None,
        *,
        notes: Sequence[str] = (),
    ) -> None:
        self.step_index = step_index
        self.path = path
        self.expected = expected
        self.actual = actual
        self._hint = hint
        self.notes = tuple(notes)
        super().__init__(self.text())

    @property
    def hint(self) -> str | None:
        """What to do about it, as the CLI says it."""
        return self.hint_for()

    def hint_for(self, sequence_option: str = "--match sequence") -> str | None:
        """The hint with the ``sequence`` option spelled ``sequence_option``."""
        return None if self._hint is None else self._hint.replace(self.SEQUENCE_OPTION, sequence_option)

    def text(self, sequence_option: str = "--match sequence") -> str:
        """The message, its hint naming the ``sequence`` option as ``sequence_option``."""
        hint = self.hint_for(sequence_option)
        lines = [
            f"replay diverged at step {self.step_index}, {self.path}",
            f"  recorded: {self.expected}",
            f"  actual:   {self.actual}",
            *(f"  {note}" for note in self.notes),
        ]
        if hint:
            lines.append(hint)
        return "\n".join(lines)
