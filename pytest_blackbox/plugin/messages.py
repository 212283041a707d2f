"""What the plugin tells the user when a test's cassette run cannot go ahead or fails: each block
built from plain values (paths as the user types them, the re-record command), so every wording
has one home. See docs/pytest.md#when-a-test-fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.verify import ACTIONS, VerifyReport, render_row
from ..errors import CassetteError, OfflineRequestError, ReplayDivergenceError
from .paths import shared_cassette_advice

#: The ``sequence`` option under pytest (a divergence's hint names it).
SEQUENCE_OPTION = "--blackbox-match=sequence"

__all__ = [
    "ci_refusal",
    "connection_refused",
    "failure_block",
    "missing",
    "not_a_file",
    "not_written",
    "shared",
    "unwritable",
    "verify_failed",
]


def missing(shown: str, record_command: str, legacy: str | None) -> str:
    """No cassette in record mode ``none``; ``legacy``: where an earlier version recorded it."""
    lines = [
        f'blackbox: no cassette at {shown}, and record mode "none" only replays',
        f"record it with: {record_command}",
    ]
    if legacy is not None:
        lines.append(
            f"an earlier version of pytest-blackbox recorded this test to {legacy}; "
            f'move it: git mv "{legacy}" "{shown}"'
        )
    return "\n".join(lines)


def ci_refusal(shown: str, record_mode: str, record_command: str) -> str:
    return (
        f"blackbox: refusing to record {shown} in CI (the CI environment variable is set): "
        f'record mode "{record_mode}" would call the real model\n'
        f"record it locally and commit it: {record_command}\n"
        "or allow recording in CI with --blackbox-allow-record"
    )


def not_a_file(shown: str) -> str:
    return (
        f"blackbox: {shown} is a directory, not a cassette file\n"
        "remove or rename it, or give the test another cassette (cassette= on its marker)"
    )


def shared(nodeid: str, other: str, shown: str) -> str:
    """Two tests derive one cassette path (``other`` is the test that has it)."""
    return f"blackbox: {nodeid} would use the cassette of {other}: {shown}\n" + shared_cassette_advice(
        "this test"
    )


def unwritable(shown: str, folder: str, reason: str) -> str:
    return (
        f"blackbox: cannot write {shown}: {folder} does not take new files ({reason}); nothing was "
        "recorded\n"
        "make the folder writable, or put the cassettes elsewhere (the cassette_dir setting, "
        "the blackbox_cassette_dir ini key)"
    )


def verify_failed(report: VerifyReport, absolute: str, shown: str, rerecord_command: str) -> str:
    """A cassette that fails ``blackbox verify``: every invariant's row, the action, the fix."""
    failure = report.first_failure
    assert failure is not None
    rows = [
        render_row(result.name, result.status, result.detail.replace(absolute, shown))
        for result in report.invariants
    ]
    return "\n".join(
        [
            f"blackbox: the cassette failed verification: {failure.name}{failure.where}",
            *rows,
            _pytest_advice(ACTIONS[failure.name]),
            f"cassette: {shown}",
            f"re-record: {rerecord_command}",
        ]
    )


def connection_refused(nodeid: str, allowed_hosts: Sequence[str], action: str, where: str) -> str:
    """The socket guard's refusal of what a replay tried (``action``: connect to, send to, look up)."""
    hosts = ",".join([*allowed_hosts, where.split(":", 1)[0]])
    return (
        f"blackbox: {nodeid} tried to {action} {where} during a replay; "
        "a replay reaches loopback only\n"
        "wrap the code that makes the request as a tool (blackbox.tool), or allow the host: "
        f"@pytest.mark.blackbox(allowed_hosts=[...]) or --blackbox-allowed-hosts={hosts}"
    )


def unmarked_network_refused(nodeid: str, allowed_hosts: Sequence[str], action: str, where: str) -> str:
    """``--blackbox-block-network``'s refusal of what a test without the marker tried beyond loopback."""
    hosts = ",".join([*allowed_hosts, where.split(":", 1)[0]])
    return (
        f"blackbox: {nodeid} is not a blackbox test, and --blackbox-block-network refuses its network "
        f"access: it tried to {action} {where}; only loopback and the allowed hosts are reachable\n"
        f"allow the host: --blackbox-allowed-hosts={hosts} (or the ini key blackbox_allowed_hosts)"
    )


def relaxed(nodeid: str, rules: str, path: str, index: int) -> str:
    """The warning of a replay that passed only because ``rules`` relaxed the comparison of ``path``."""
    return (
        f"blackbox: {nodeid} passed because {rules} relaxed {path} at step {index}; compared as sent, "
        "the replay would diverge there"
    )


def failure_block(error: BaseException, shown: str, *, recording: bool, rerecord_command: str) -> str:
    """The blackbox block of a failed test: the error, the cassette and, where it helps, the
    re-record command."""
    if isinstance(error, OfflineRequestError) and str(error).startswith("blackbox: "):
        return str(error)  # the socket guard's refusal says everything itself
    if isinstance(error, OSError):
        error = CassetteError(f"could not read {shown}: {error.strerror or type(error).__name__}")
    text = error.text(SEQUENCE_OPTION) if isinstance(error, ReplayDivergenceError) else str(error)
    lines = [f"blackbox: {text}"]
    if recording:
        lines.append(f"cassette: {shown} (not written: the test failed)")
        return "\n".join(lines)
    lines.append(f"cassette: {shown}")
    if isinstance(error, (ReplayDivergenceError, CassetteError)):
        lines.append(f"re-record: {rerecord_command}")
    return "\n".join(lines)


def not_written(shown: str) -> str:
    """The note under a failed test whose recording was dropped."""
    return f"blackbox: {shown} was not written: the test failed"


def _pytest_advice(action: str) -> str:
    """verify's advice as a pytest user takes it: the re-record line below replaces ``blackbox record``."""
    return action.replace(" (`blackbox record --out <file> -- <command>`)", " (the command below)")
