"""Test utilities for users: a scripted fake provider to record agent tests against, with no key."""

from .fake_provider import FakeProvider, ReceivedRequest, ScriptedResponse

__all__ = ["FakeProvider", "ReceivedRequest", "ScriptedResponse"]
