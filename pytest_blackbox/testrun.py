"""One test's cassette run under pytest: which mode, which file, and how it ended.

``plugin.py`` only wires hooks to this; the logic lives here so pytest start-up does not import the
session, respx or the providers until a test actually uses a cassette.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from .cassettes import trace_id_for
from .errors import BlackboxError, BlackboxUnsupportedError, CassetteError, ReplayDivergenceError
from .options import SessionOptions
from .session import OFFLINE_PLACEHOLDER_KEY, PROVIDER_KEY_VARS, Session
from .settings import Settings, rerecord_command

#: How a test's cassette run ended; the summary counts these.
Outcome = Literal[
    "replayed", "recorded", "diverged", "unsupported", "not_written", "invalid", "missing", "error"
]


@dataclass
class TestRun:
    """The cassette run of one test item."""

    item: pytest.Item
    settings: Settings
    session: Session | None = None
    setup_error: str | None = None
    outcome: Outcome | None = None
    _env_patched: list[str] = field(default_factory=list)

    @property
    def cassette(self) -> Path:
        return self.settings.cassette

    def shown_path(self) -> str:
        try:
            return os.path.relpath(self.cassette, str(self.item.config.rootpath))
        except ValueError:
            return str(self.cassette)

    # -- set-up ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Decide record or replay and start the session; problems fail the test when it runs."""
        mode = self._session_mode()
        if mode is None:
            return
        may_record = mode == "record" or self.settings.record_mode == "new_episodes"
        if may_record and os.environ.get("CI") and not self.settings.allow_record:
            self._refuse(
                f"blackbox: refusing to record {self.shown_path()} in CI (the CI environment variable is set); "
                "record locally and commit the cassette, or pass --blackbox-allow-record"
            )
            return
        if mode == "replay":
            self._set_placeholder_keys()
        options = SessionOptions(
            mode=mode,
            cassette=self.cassette if mode == "replay" else None,
            out=self.cassette if mode == "record" else None,
            trace_id=trace_id_for(self.cassette),
            match=self.settings.match,
            on_divergence="record" if self.settings.record_mode == "new_episodes" else "fail",
        )
        try:
            self.session = Session(options, exit_net=False).start()
        except CassetteError as exc:
            self.outcome = "invalid"
            self._refuse(self._with_footer(f"blackbox: {exc}", "all"))

    def _session_mode(self) -> Literal["record", "replay"] | None:
        exists = self.cassette.exists()
        mode = self.settings.record_mode
        if mode == "rewrite" and exists:
            self.cassette.unlink()
            exists = False
        if mode in ("all", "rewrite") or not exists:
            if mode == "none":
                self.outcome = "missing"
                self._refuse(
                    f"blackbox: no cassette at {self.shown_path()} and --record-mode=none replays only.\n"
                    f"record it with: {rerecord_command(self.item, 'once')}"
                )
                return None
            return "record"
        return "replay"

    def _refuse(self, message: str) -> None:
        self.setup_error = message

    def _set_placeholder_keys(self) -> None:
        for name in PROVIDER_KEY_VARS:
            if not os.environ.get(name):
                os.environ[name] = OFFLINE_PLACEHOLDER_KEY
                self._env_patched.append(name)

    def restore_env(self) -> None:
        for name in self._env_patched:
            os.environ.pop(name, None)
        self._env_patched.clear()

    # -- the call --------------------------------------------------------------------------------

    def before_call(self) -> None:
        __tracebackhide__ = True
        if self.setup_error is not None:
            pytest.fail(self.setup_error, pytrace=False)

    def test_failed(self) -> None:
        """The test body failed: never write its recording."""
        session = self.session
        if session is None:
            return
        if session.error is not None:
            self.outcome = self._error_outcome(session.error)
        elif session.mode == "record":
            self.outcome = "not_written"
        else:
            self.outcome = "error"
        session.discard()

    def after_call(self) -> None:
        """The test body passed: finish the session; a divergence or refusal fails the test here."""
        __tracebackhide__ = True
        session = self.session
        if session is None:
            return
        error: BlackboxError | None = None
        try:
            session.finish()
        except BlackboxError as exc:
            error = exc
        if error is None:
            self.outcome = "recorded" if session.mode == "record" else "replayed"  # new_episodes: went live
            return
        self.outcome = self._error_outcome(error)
        if session.mode == "record" and self.outcome == "error":
            self.outcome = "not_written"
        pytest.fail(self.failure_text(error), pytrace=False)

    @staticmethod
    def _error_outcome(error: BaseException) -> Outcome:
        if isinstance(error, ReplayDivergenceError):
            return "diverged"
        if isinstance(error, BlackboxUnsupportedError):
            return "unsupported"
        if isinstance(error, CassetteError):
            return "invalid"
        return "error"

    def failure_text(self, error: BaseException) -> str:
        return self._with_footer(f"blackbox: {error}", "all")

    def _with_footer(self, text: str, mode: str) -> str:
        return f"{text}\ncassette: {self.shown_path()}\nre-record: {rerecord_command(self.item, mode)}"

    def error_section(self) -> str | None:
        """The block shown under a test that failed with a swallowed or propagated session error."""
        session = self.session
        if session is None or session.error is None:
            return None
        return self.failure_text(session.error)


def iter_cassette_files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(p for p in directory.rglob("*.json") if p.is_file())
