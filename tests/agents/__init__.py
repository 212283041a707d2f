"""The agents the suite runs through the real SDKs, against the fake provider or a cassette.

- :mod:`.loop`: the one tool loop (both SDKs, sync or async, optionally streamed) and the helpers
  that script the fake provider for it;
- :mod:`.travel` (two tools, three model calls) and :mod:`.lookup` (one tool, two model calls): the
  conversations it is run with;
- :mod:`.triage`: the fleet-triage agent the vector cassettes were recorded from;
- :mod:`.program`: the loop as a program, for the launcher and the exit safety net.
"""

from pathlib import Path

#: The path of :mod:`.program`, to run as ``python PROGRAM SCENARIO``.
PROGRAM = Path(__file__).with_name("program.py")
