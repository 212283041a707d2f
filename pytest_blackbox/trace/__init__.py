"""The cassette format: the trace model, canonical JSON and the hash chain, the schema, reading and
writing, and the recorder. Pure data: nothing here imports outside ``trace/``. See
docs/cassette-format.md.
"""
