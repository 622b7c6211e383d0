"""Reading a running server: the smoke check, through the serving engine's readiness path and counters
(engines.protocol.serving)."""
