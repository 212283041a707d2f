"""Gemini generateContent: the fields of a response, which each streamed chunk also is (docs/providers.md)."""

from __future__ import annotations

from typing import Final

from .shapes import fields

__all__ = ["REQUEST", "RESPONSE"]

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

#: ``generationConfig``: compared (docs/providers.md#google-gemini-google-genai); dropped on purpose:
#: ``responseModalities`` (only ``["TEXT"]`` gets this far) and ``mediaResolution``; refused: output
#: other than text, logprobs (the module's), and the settings this version does not record.
_GENERATION: Final = fields(
    "maxOutputTokens temperature topP topK stopSequences responseMimeType responseSchema "
    "responseJsonSchema thinkingConfig seed presencePenalty frequencyPenalty candidateCount",
    "responseModalities mediaResolution",
    "responseLogprobs logprobs speechConfig imageConfig audioTranscriptionConfig audioTimestamp "
    "enableAffectiveDialog enableEnhancedCivicAnswers modelSelectionConfig routingConfig "
    "translationConfig responseFormat",
)

#: The request's top-level fields (google-genai writes some in snake_case, which the module reads
#: too): compared; dropped on purpose (billing ``labels``, capacity, ``store``); refused: state kept on
#: the server (the module's) and the Vertex AI settings this version does not record.
REQUEST: Final = fields(
    "contents systemInstruction system_instruction tools toolConfig tool_config safetySettings "
    "safety_settings",
    "labels serviceTier service_tier store",
    "cachedContent cached_content continuationToken continuation_token modelArmorConfig outputConfig",
    generationConfig=_GENERATION,
)
