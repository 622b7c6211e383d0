"""Fixtures of the training tests (their helpers live in training_fixtures.py)."""

from training_fixtures import learnable, requests_file  # noqa: F401
