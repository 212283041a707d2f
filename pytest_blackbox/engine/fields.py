"""Request and response fields Blackbox does not know: refused, or left out where the run accepts it.

The provider tables (``providers.fields``) name every field a protocol compares or gives back and
those it drops on purpose; a field outside them is an API addition a cassette could neither compare
(a request's) nor give back (a response's). It is refused, naming its path, unless the
``drop_fields`` setting names it: then it is left out and, while recording, a ``DroppedFieldWarning``
says so, once per field and run. See docs/providers.md#fields-blackbox-does-not-know.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any, Final, Literal

from ..errors import BlackboxUnsupportedError, BlackboxUsageError, DroppedFieldWarning
from ..vocabulary import field_pattern

__all__ = ["FieldPolicy", "check_drop_fields"]

#: A field path: names (letters, digits, ``_``, ``-``, ``$``, ``@``) joined by dots, each optionally
#: followed by ``[]`` or ``[N]``.
_PATH: Final = re.compile(r"[\w$@-]+(?:\[\d*\])*(?:\.[\w$@-]+(?:\[\d*\])*)*")
_USAGE: Final = (
    "drop_fields={value!r} must be a list of field paths such as choices[].message.foo (a response's) "
    "or request.foo (a request's)"
)
#: Per side: why the field is refused, and what the warning says once a run accepts losing it.
_REFUSED: Final = {
    "response": "a replay could not give it back; it was not recorded. To record without it",
    "request": (
        "a cassette could neither hold nor compare it; the request was not sent. To send it unrecorded"
    ),
}
_LEFT_OUT: Final = {
    "response": (
        "was left out of the cassette, as drop_fields accepts ({pattern}): a replay does not give it back"
    ),
    "request": "was sent but not recorded, as drop_fields accepts ({pattern}): a replay does not compare it",
}
Side = Literal["request", "response"]


def check_drop_fields(value: Any) -> tuple[str, ...]:
    """``drop_fields``: field paths (``choices[].message.foo``, ``request.foo``), one or a list; each
    index may be written ``[]`` (any) or as the number a refusal named (read as any)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise BlackboxUsageError(_USAGE.format(value=value))
    for item in items:
        if not _PATH.fullmatch(item.strip()):
            raise BlackboxUsageError(_USAGE.format(value=item))
    return tuple(dict.fromkeys(field_pattern(item) for item in items))


class FieldPolicy:
    """What a run does with the unknown fields of each request and response: refuse, or drop what is
    accepted (warning about it while recording)."""

    def __init__(self, accepted: Iterable[str] = ()) -> None:
        self._accepted = frozenset(accepted)
        self._warned: set[str] = set()

    def check(self, unknown: list[str], side: Side = "response", *, recording: bool = True) -> None:
        """Refuse the first unknown field not accepted; while recording, warn once for each accepted
        one left out."""
        for path in unknown:
            pattern = field_pattern(path)
            if pattern not in self._accepted:
                raise BlackboxUnsupportedError(
                    f"the {side} field {path} is not known to Blackbox, so {_REFUSED[side]}, accept "
                    f'losing it: drop_fields=["{pattern}"] (the blackbox marker), blackbox_drop_fields '
                    f"in the ini or --blackbox-drop-fields={pattern}"
                )
        for path in unknown if recording else ():
            pattern = field_pattern(path)
            if pattern not in self._warned:
                self._warned.add(pattern)
                warnings.warn(
                    f"record mode: the {side} field {path} {_LEFT_OUT[side].format(pattern=pattern)}",
                    DroppedFieldWarning,
                    stacklevel=2,
                )
