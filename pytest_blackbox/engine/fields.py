"""Response fields Blackbox does not know: refused while recording, or left out where the run accepts it.

The provider tables (``providers.fields``) name every field a protocol gives back or drops on purpose;
a field outside them is an API addition no replay could give back. It is refused, naming its path,
unless the ``drop_fields`` setting names it: then it is left out and a ``DroppedFieldWarning`` says so,
once per field and run. See docs/providers.md#response-fields-blackbox-does-not-know.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any, Final

from ..errors import BlackboxUnsupportedError, BlackboxUsageError, DroppedFieldWarning
from ..vocabulary import field_pattern

__all__ = ["FieldPolicy", "check_drop_fields"]

#: A field path: names (letters, digits, ``_``, ``-``, ``$``, ``@``) joined by dots, each optionally
#: followed by ``[]`` or ``[N]``.
_PATH: Final = re.compile(r"[\w$@-]+(?:\[\d*\])*(?:\.[\w$@-]+(?:\[\d*\])*)*")
_USAGE: Final = "drop_fields={value!r} must be a list of response field paths such as choices[].message.foo"


def check_drop_fields(value: Any) -> tuple[str, ...]:
    """``drop_fields``: response field paths (``choices[].message.foo``), one or a list; each index
    may be written ``[]`` (any) or as the number a refusal named (read as any)."""
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
    """What a recording does with the unknown fields of each response: refuse, or drop what is accepted."""

    def __init__(self, accepted: Iterable[str] = ()) -> None:
        self._accepted = frozenset(accepted)
        self._warned: set[str] = set()

    def check(self, unknown: list[str]) -> None:
        """Refuse the first unknown field not accepted; warn once for each accepted one left out."""
        for path in unknown:
            pattern = field_pattern(path)
            if pattern not in self._accepted:
                raise BlackboxUnsupportedError(
                    f"the response field {path} is not known to Blackbox, so a replay could not give "
                    f"it back; it was not recorded. To record without it, accept losing it: "
                    f'drop_fields=["{pattern}"] (the blackbox marker), blackbox_drop_fields in the ini '
                    f"or --blackbox-drop-fields={pattern}"
                )
        for path in unknown:
            pattern = field_pattern(path)
            if pattern not in self._warned:
                self._warned.add(pattern)
                warnings.warn(
                    f"record mode: the response field {path} was left out of the cassette, as "
                    f"drop_fields accepts ({pattern}): a replay does not give it back",
                    DroppedFieldWarning,
                    stacklevel=2,
                )
