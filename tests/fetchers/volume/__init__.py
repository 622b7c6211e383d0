"""Tests of src/nim_specdec/fetchers/volume/."""
