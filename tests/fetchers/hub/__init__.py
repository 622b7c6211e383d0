"""Tests of src/nim_specdec/fetchers/hub/."""
