"""One replay engine for bench and tune-ngram: captured requests sent through AIPerf, measured on the server."""

from nim_specdec_lab.replay.measure import run_replay
from nim_specdec_lab.replay.spec import ReplayMeasurement, ReplaySpec

__all__ = ["ReplayMeasurement", "ReplaySpec", "run_replay"]
