"""``decide`` and ``error_outcome``: the record-mode rules over plain values, the whole table without an
inner pytest run."""

from __future__ import annotations

import pytest

from pytest_blackbox.errors import (
    BlackboxUnsupportedError,
    BlackboxUsageError,
    CassetteError,
    OfflineRequestError,
    ReplayDivergenceError,
)
from pytest_blackbox.plugin.decision import Decision, decide, error_outcome
from pytest_blackbox.vocabulary import RECORD_MODES, Outcome

RECORD = Decision("record", writes=True)
REPLAY = Decision("replay")
NEW_EPISODES = Decision("replay", writes=True, new_episodes=True)
MISSING = Decision("missing")

#: (record mode, cassette exists) → the decision outside CI (or in CI with --blackbox-allow-record).
LOCAL = {
    ("none", True): REPLAY,
    ("none", False): MISSING,
    ("once", True): REPLAY,
    ("once", False): RECORD,
    ("new_episodes", True): NEW_EPISODES,
    ("new_episodes", False): RECORD,
    ("all", True): RECORD,
    ("all", False): RECORD,
    ("rewrite", True): RECORD,
    ("rewrite", False): RECORD,
}
#: The same in CI without --blackbox-allow-record: whatever would reach the model is refused, with
#: the record mode the re-record command suggests.
IN_CI = {
    ("none", True): REPLAY,
    ("none", False): MISSING,
    ("once", True): REPLAY,
    ("once", False): Decision("refused", record_with="once"),
    ("new_episodes", True): Decision("refused", record_with="new_episodes"),
    ("new_episodes", False): Decision("refused", record_with="once"),
    ("all", True): Decision("refused", record_with="all"),
    ("all", False): Decision("refused", record_with="once"),
    ("rewrite", True): Decision("refused", record_with="rewrite"),
    ("rewrite", False): Decision("refused", record_with="once"),
}


def test_the_table_covers_every_record_mode() -> None:
    assert {mode for mode, _ in LOCAL} == {mode for mode, _ in IN_CI} == set(RECORD_MODES)


@pytest.mark.parametrize(("mode", "exists"), sorted(LOCAL))
@pytest.mark.parametrize("allow_record", [False, True])
def test_outside_ci(mode: str, exists: bool, allow_record: bool) -> None:
    assert decide(mode, exists=exists, ci=False, allow_record=allow_record) == LOCAL[mode, exists]


@pytest.mark.parametrize(("mode", "exists"), sorted(IN_CI))
def test_in_ci(mode: str, exists: bool) -> None:
    assert decide(mode, exists=exists, ci=True, allow_record=False) == IN_CI[mode, exists]


@pytest.mark.parametrize(("mode", "exists"), sorted(LOCAL))
def test_allow_record_in_ci_decides_as_outside_it(mode: str, exists: bool) -> None:
    assert decide(mode, exists=exists, ci=True, allow_record=True) == LOCAL[mode, exists]


@pytest.mark.parametrize(
    ("error", "replaying", "recording"),
    [
        (ReplayDivergenceError(3, "messages", "a", "b"), "diverged", "diverged"),
        (BlackboxUnsupportedError("u"), "unsupported", "unsupported"),
        (OfflineRequestError("o"), "refused", "refused"),
        (CassetteError("c"), "invalid", "not_written"),
        (BlackboxUsageError("x"), "failed", "not_written"),
        (ValueError("v"), "failed", "not_written"),
    ],
)
def test_error_outcome(error: BaseException, replaying: Outcome, recording: Outcome) -> None:
    assert (error_outcome(error, recording=False), error_outcome(error, recording=True)) == (
        replaying,
        recording,
    )
