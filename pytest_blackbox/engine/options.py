"""Session settings: explicit options first, then ``BLACKBOX_*`` environment variables.

The ``blackbox`` launcher talks to the session in the child process only through the environment,
so every setting has a variable, and every bad value gets the message the original Blackbox
(arda-ulas/blackbox) gives for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from ..errors import BlackboxUsageError
from ..trace.io import parse_json
from ..vocabulary import MATCHES, MEDIA_MODES, UNSET, Match, Media
from .fields import check_drop_fields
from .hosts import check_allowed_hosts
from .rules import (
    Matcher,
    MatchRules,
    NormalizeRule,
    RedactRule,
    Secrets,
    check_ignore,
    check_matcher,
    check_normalize,
    check_redact,
    check_secrets,
)

Mode = Literal["off", "record", "replay", "fork"]
Continue = Literal["live", "script"]
OnDivergence = Literal["fail", "record"]

MODES: tuple[Mode, ...] = ("off", "record", "replay", "fork")
CONTINUES: tuple[Continue, ...] = ("live", "script")
ON_DIVERGENCE: tuple[OnDivergence, ...] = ("fail", "record")
C = TypeVar("C", bound=str)
D = TypeVar("D", bound="str | None")

#: Every variable the launcher owns; it clears stale ones before starting a child.
SESSION_ENV_VARS = (
    "BLACKBOX_MODE",
    "BLACKBOX_CASSETTE",
    "BLACKBOX_OUT",
    "BLACKBOX_TRACE_ID",
    "BLACKBOX_FORK_AT",
    "BLACKBOX_FORK_SET",
    "BLACKBOX_CONTINUE",
    "BLACKBOX_SCRIPT",
    "BLACKBOX_MATCH",
    "BLACKBOX_REPORT",
)

_STEP_INDEX = re.compile(r"^(0|[1-9]\d*)$")


@dataclass(frozen=True)
class SessionOptions:
    """Resolved settings of one session."""

    mode: Mode = "off"
    cassette: Path | None = None
    out: Path | None = None
    trace_id: str | None = None
    match: Match = "strict"
    fork_at: int | None = None
    fork_set: Any = UNSET
    continue_with: Continue | None = None
    script: Path | None = None
    report_path: Path | None = None
    #: Replay only: at the first divergence, continue live and re-record from there (``new_episodes``).
    on_divergence: OnDivergence = "fail"
    #: Match rules (docs/engine.md#match-rules): request fields left out of the comparison, text
    #: rules applied to both sides before comparing, and the user's own check.
    ignore: tuple[str, ...] = ()
    normalize: tuple[NormalizeRule, ...] = ()
    matcher: Matcher | None = None
    #: Redaction (docs/engine.md#redaction): text rules applied to everything written to a cassette,
    #: and more values to treat like the API keys.
    redact: tuple[RedactRule, ...] = ()
    secrets: Secrets = field(default_factory=Secrets)
    #: Hosts a replay may still reach besides loopback, for requests that are not model calls.
    allowed_hosts: tuple[str, ...] = ()
    #: What a recording keeps of a request's images, documents, audio and files: their digest, or
    #: their bytes too (docs/cassette-format.md#media-parts). A replay compares digests either way.
    media: Media = "digest"
    #: Request and response fields no protocol table knows that a run may leave out (paths with ``[]``;
    #: a request's start with ``request.``) instead of refusing them
    #: (docs/providers.md#fields-blackbox-does-not-know).
    drop_fields: tuple[str, ...] = ()

    @property
    def has_fork_set(self) -> bool:
        return self.fork_set is not UNSET

    @property
    def match_rules(self) -> MatchRules:
        return MatchRules(self.ignore, self.normalize, self.matcher)

    @property
    def resolved_trace_id(self) -> str:
        """The trace id: explicit, else the out (or cassette) file's base name, else ``run``."""
        if self.trace_id:
            return self.trace_id
        target = self.out or self.cassette
        if target is not None and target.name:
            return target.name[: -len(".json")] if target.name.endswith(".json") else target.name
        return "run"


def _choose(name: str, value: Any, env: Mapping[str, str]) -> Any:
    if value is not None:
        return value
    raw = env.get(name)
    return raw if raw not in (None, "") else None


def _choice(value: Any, allowed: tuple[C, ...], default: D, problem: str) -> C | D:
    """``value`` when it is one of ``allowed``, ``default`` for ``None``; anything else is the usage
    error ``problem``, a template naming the setting that receives the value (``{value}``)."""
    if value is None:
        return default
    if value not in allowed:
        raise BlackboxUsageError(problem.format(value=value))
    return cast("C", value)


def _mode(value: Any) -> Mode:
    return _choice(
        value, MODES, "off", 'BLACKBOX_MODE must be one of off, record, replay, fork; got "{value}"'
    )


def _match(value: Any) -> Match:
    return _choice(value, MATCHES, "strict", 'BLACKBOX_MATCH must be "strict" or "sequence"; got "{value}"')


def _continue(value: Any) -> Continue | None:
    return _choice(value, CONTINUES, None, 'BLACKBOX_CONTINUE must be "live" or "script"; got "{value}"')


def _fork_at(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and _STEP_INDEX.match(value):
        return int(value)
    raise BlackboxUsageError(f'BLACKBOX_FORK_AT must be a step index; got "{value}"')


def _fork_set(explicit: Any, env: Mapping[str, str]) -> Any:
    if explicit is not UNSET:
        return explicit
    raw = env.get("BLACKBOX_FORK_SET")
    if raw is None:
        return UNSET
    try:
        return parse_json(raw)
    except Exception:
        raise BlackboxUsageError("BLACKBOX_FORK_SET must be JSON (the replacement tool result)") from None


def _on_divergence(value: Any) -> OnDivergence:
    return _choice(value, ON_DIVERGENCE, "fail", 'on_divergence must be "fail" or "record"; got "{value}"')


def check_media(value: Any) -> Media:
    """The ``media`` setting: ``"digest"`` (the default, for ``None``) or ``"inline"``."""
    return _choice(value, MEDIA_MODES, "digest", 'media must be "digest" or "inline"; got {value!r}')


def _path(value: Any) -> Path | None:
    """A path as given (a ``Path`` is immutable: the same one serves), else made from the value."""
    return value if value is None or isinstance(value, Path) else Path(value)


def _check_report_path(options: SessionOptions) -> SessionOptions:
    """The launcher's report must never overwrite the cassette a run reads or writes."""
    report = options.report_path
    if report is not None and any(
        target is not None and os.path.abspath(target) == os.path.abspath(report)
        for target in (options.cassette, options.out)
    ):
        raise BlackboxUsageError(
            "BLACKBOX_REPORT names the cassette itself; the status report needs a file of its own"
        )
    return options


def resolve_options(
    *,
    mode: str | None = None,
    cassette: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    trace_id: str | None = None,
    match: str | None = None,
    fork_at: int | str | None = None,
    fork_set: Any = UNSET,
    continue_with: str | None = None,
    script: str | os.PathLike[str] | None = None,
    report_path: str | os.PathLike[str] | None = None,
    on_divergence: str | None = None,
    ignore: Any = None,
    normalize: Any = None,
    matcher: Any = None,
    redact: Any = None,
    secrets: Any = None,
    allowed_hosts: Any = None,
    media: Any = None,
    drop_fields: Any = None,
    env: Mapping[str, str] | None = None,
) -> SessionOptions:
    """Merge explicit options over ``BLACKBOX_*`` variables and validate every value.

    ``on_divergence="record"`` (replay only) continues live from the first divergence and re-records
    the rest of the run into the cassette (``new_episodes``); it has no variable, as the CLI has no flag.
    Neither have the rules (``ignore``, ``normalize``, ``matcher``, ``redact``, ``secrets``): they are
    code, checked by the validators of ``rules``; nor ``allowed_hosts`` (checked by ``hosts``),
    ``media`` (:func:`check_media`) and ``drop_fields`` (checked by ``fields``).
    """
    env = os.environ if env is None else env
    options = SessionOptions(
        mode=_mode(_choose("BLACKBOX_MODE", mode, env)),
        cassette=_path(_choose("BLACKBOX_CASSETTE", cassette, env)),
        out=_path(_choose("BLACKBOX_OUT", out, env)),
        trace_id=_choose("BLACKBOX_TRACE_ID", trace_id, env),
        match=_match(_choose("BLACKBOX_MATCH", match, env)),
        fork_at=_fork_at(_choose("BLACKBOX_FORK_AT", fork_at, env)),
        fork_set=_fork_set(fork_set, env),
        continue_with=_continue(_choose("BLACKBOX_CONTINUE", continue_with, env)),
        script=_path(_choose("BLACKBOX_SCRIPT", script, env)),
        report_path=_path(_choose("BLACKBOX_REPORT", report_path, env)),
        on_divergence=_on_divergence(on_divergence),
        ignore=check_ignore(ignore),
        normalize=check_normalize(normalize),
        matcher=check_matcher(matcher),
        redact=check_redact(redact),
        secrets=check_secrets(secrets),
        allowed_hosts=check_allowed_hosts(allowed_hosts),
        media=check_media(media),
        drop_fields=check_drop_fields(drop_fields),
    )
    return _check_report_path(options)
