"""The fake provider: a scripted Anthropic/OpenAI/Gemini HTTP server on 127.0.0.1, to record without a key.

One module per wire protocol (``anthropic``, ``openai_chat``, ``openai_responses``, ``gemini``)
builds that API's answers, streams and errors; ``server`` queues and serves them, and ``wire`` holds
what they share. See docs/fake-provider.md.
"""

from .server import FakeProvider
from .wire import Envelope, ReceivedRequest, Responder, ScriptedResponse

__all__ = ["Envelope", "FakeProvider", "ReceivedRequest", "Responder", "ScriptedResponse"]
