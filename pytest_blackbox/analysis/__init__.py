"""Read-only tools over cassettes: verify, diff, assert, inspect labels and the HTML view.

They import only :mod:`pytest_blackbox.trace` and the standard library, so they can never reach a
model, a tool or the network (``tests/test_import_boundary.py`` proves it). See docs/cli-analysis.md.
"""
