"""Test utilities for users: the fake provider, to record agent tests against with no key.

See docs/fake-provider.md.
"""

from .fake_provider import Envelope, FakeProvider, ReceivedRequest, Responder, ScriptedResponse

__all__ = ["Envelope", "FakeProvider", "ReceivedRequest", "Responder", "ScriptedResponse"]
