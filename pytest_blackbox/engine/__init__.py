"""One agent run: the session that records a cassette or replays one, and what it needs.

Data flows one way: intercepted request → provider → session → trace recorder when recording, and
cassette → replay cursor → provider → reply when replaying. See docs/engine.md.
"""
