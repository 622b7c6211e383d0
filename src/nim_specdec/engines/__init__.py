"""The engines the launcher plans for and serves with, one package each."""
