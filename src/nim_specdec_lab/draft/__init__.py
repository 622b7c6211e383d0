"""From captured traffic to a trained draft."""
