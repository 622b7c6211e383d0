"""What the planner sees of an engine: the Engine protocol an engine's package implements (engine.py), and the
neutral values a plan holds of whatever engine served it (sections.py); and what the shell reads of an engine
once it serves, its readiness, health and counters (serving.py). plan/ imports these and no engine's package."""
