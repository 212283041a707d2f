"""The importers' last step: a transcript that would not make a verifying cassette is refused.
See docs/fork-demo-import.md#blackbox-import.
"""

from __future__ import annotations

from ..analysis.verify import verify_trace
from ..errors import TranscriptImportError
from ..trace.model import Trace


def verified(trace: Trace) -> Trace:
    """Return ``trace`` if it passes ``verify``; otherwise refuse the import (never quoting content)."""
    failure = verify_trace(trace).first_failure
    if failure is not None:
        raise TranscriptImportError(
            f"the imported cassette does not pass verify ({failure.summary()}); nothing was written"
        )
    return trace
