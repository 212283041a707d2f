"""Read-only tools over cassettes: verify, diff, assert, the step labels and the HTML view.

They import only ``trace/`` and the standard library, so they can never reach a model, a tool or
the network (``tests/test_import_boundary.py`` holds them to it). See docs/cli-analysis.md.
"""
