"""Suffix decoding (vLLM method "suffix"): the exact offline simulator and its grid."""
