"""Offline and measurement tools: the demo model, the n-gram simulator and tuner, the on/off bench."""
