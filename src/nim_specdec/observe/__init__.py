"""Reading a running server: the spec-decode counters and the smoke check."""
