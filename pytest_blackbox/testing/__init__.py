"""Test utilities for users: the fake provider, to record agent tests against with no key.

See docs/fake-provider.md.
"""

from .fake_provider import FakeProvider, ReceivedRequest, Responder, ScriptedResponse

__all__ = ["FakeProvider", "ReceivedRequest", "Responder", "ScriptedResponse"]
