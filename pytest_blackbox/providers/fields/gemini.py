"""Gemini generateContent: the fields of a response, which each streamed chunk also is (docs/providers.md)."""

from __future__ import annotations

from typing import Final

from .shapes import fields

__all__ = ["RESPONSE"]

#: Part kinds are the module's: it records text, calls and media and refuses the others with advice
#: of its own (``providers/gemini/parts.py``); thought parts and signatures are dropped.
_PART: Final = fields(
    "text inlineData fileData functionResponse executableCode codeExecutionResult toolCall "
    "toolResponse videoMetadata mediaResolution audioMetadata audioTranscription documentMetadata "
    "spreadsheetMetadata speechMetadata partMetadata mediaProcessing",
    "thought thoughtSignature",
    functionCall=fields("name args id", refused="partialArgs willContinue"),
)

_CANDIDATE: Final = fields(
    "finishReason index groundingMetadata urlContextMetadata logprobsResult",
    "safetyRatings citationMetadata avgLogprobs tokenCount finishMessage",
    "continuationToken",
    content=fields("role", parts=_PART),
)

RESPONSE: Final = fields(
    "",
    "responseId modelVersion usageMetadata createTime modelStatus promptFeedback",
    candidates=_CANDIDATE,
)
