"""Property-based fuzzing of every reader of untrusted input: cassettes, transcripts and provider bodies."""
