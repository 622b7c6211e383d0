"""Backends that make a source available as a local directory, one module per scheme."""
