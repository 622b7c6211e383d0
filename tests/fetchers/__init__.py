"""Fetcher tests; a package so that tests/ is on sys.path and tests/servers imports as `servers`."""
