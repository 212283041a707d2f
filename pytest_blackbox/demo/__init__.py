"""The built-in demo agent (``blackbox demo``/``check``) and ``fork_run``, which continues it from a
fork. See docs/fork-demo-import.md.
"""

from .agent import SCENARIOS, run_agent_loop, run_demo
from .fork import fork_run

__all__ = ["SCENARIOS", "fork_run", "run_agent_loop", "run_demo"]
