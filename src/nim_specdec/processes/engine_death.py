"""Whether vLLM's engine died in this process, as the endpoints middleware (server/) saw it after a request.

vLLM's API server shuts itself down when its engine dies and returns as after a clean stop: the process
exits 0. vllm_boot, which runs the server in this same process, reads this flag afterwards, so that a
multi-node leader whose group lost a rank exits with the launcher's code and one line instead.
"""

from __future__ import annotations

from typing import Any

_died = False


def note(engine_client: Any) -> None:
    """Remember that the engine is dead, if it is (vLLM's EngineClient.errored)."""
    global _died
    try:
        if getattr(engine_client, "errored", False) is True:
            _died = True
    except Exception:  # noqa: BLE001 - a property of a half-torn-down engine may raise; not a death we saw
        pass


def died() -> bool:
    return _died
