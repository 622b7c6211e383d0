"""Numeric vLLM engine arguments, checked before anything computes with them.

The pre-flight memory estimate and the plan read these as numbers; vLLM itself would refuse a bad one
only after the launcher had downloaded a draft. A value may come as a JSON number (NIM_SPECDEC_ARGS) or
as the text of a command-line token (`--max-num-seqs 8`): both are accepted in the forms vLLM's parser
takes, in range, and nothing else (no NaN, no Infinity, no thousand-digit integers).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from nim_specdec.errors import ConfigError

# The largest group of nodes one vLLM server spans: far beyond any cluster's (the LeaderWorkerSet wrapper
# holds group sizes to the same bound).
MAX_NODES = 4096
# name -> (kind, lowest, highest); the ranges are vLLM 0.32's own where it has one, else generous bounds.
ENGINE_NUMBERS: dict[str, tuple[str, float, float]] = {
    "max_num_seqs": ("int", 1, 2**31 - 1),
    "max_num_batched_tokens": ("readable", 1, 2**31 - 1),  # vLLM's parser takes 4k / 4K here too
    "tensor_parallel_size": ("int", 1, 2**16),
    "pipeline_parallel_size": ("int", 1, 2**16),
    "data_parallel_size": ("int", 1, 2**16),
    "port": ("int", 1, 65535),
    "block_size": ("int", 1, 2**16),
    "seed": ("int", -(2**63), 2**63 - 1),
    "num_gpu_blocks_override": ("int", 0, 2**40),
    "gpu_memory_utilization": ("float", 0.0, 1.0),
    "swap_space": ("float", 0.0, 2**20),
    "cpu_offload_gb": ("float", 0.0, 2**20),
    "max_model_len": ("length", 1, 2**40),
    # Passed on to vLLM as given: an unbounded drain or a group no cluster has is refused here, not found later.
    "shutdown_timeout": ("int", 0, 86400),  # NIM_SHUTDOWN_TIMEOUT's range: a day at most
    "nnodes": ("int", 1, MAX_NODES),
    "node_rank": ("int", 0, MAX_NODES - 1),
    "master_port": ("int", 1, 65535),
}
_INT = re.compile(r"[+-]?[0-9]{1,19}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?")
_LENGTH = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,6})?)([kmgKMG]?)")
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        return int(value.strip())
    return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) < 2**63:
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str) and _FLOAT.fullmatch(value.strip()):
        number = float(value.strip())
        return number if math.isfinite(number) else None
    return None


def _length_ok(value: Any, lo: float, hi: float) -> bool:
    """max_model_len as vLLM takes it: an integer, -1 or "auto" (derived), or "32k" / "32K" / "1.5m"."""
    if isinstance(value, str) and value.strip() in ("-1", "auto"):
        return True
    number = _as_int(value)
    if number is not None:
        return number == -1 or lo <= number <= hi
    match = _LENGTH.fullmatch(value.strip()) if isinstance(value, str) else None
    return bool(match) and lo <= float(match.group(1)) * _UNITS[match.group(2)] <= hi


def _describe(kind: str, lo: float, hi: float) -> str:
    if kind == "length":
        return "an integer >= 1 (or 32k / 32K, or -1 / auto for the model's own length)"
    if kind == "int":
        return f"an integer from {int(lo)} to {int(hi)}"
    if kind == "readable":
        return f"an integer from {int(lo)} to {int(hi)} (or 4k / 4K)"
    return f"a number from {lo:g} to {hi:g}" + (" (0 excluded)" if lo == 0 and hi == 1 else "")


def engine_number_problem(name: str, value: Any) -> str | None:
    """Why `value` is not a usable value of the numeric engine argument `name`, or None."""
    if name not in ENGINE_NUMBERS or value is None:
        return None
    kind, lo, hi = ENGINE_NUMBERS[name]
    if kind == "length":
        ok = _length_ok(value, lo, hi)
    elif kind == "readable":
        ok = not (isinstance(value, str) and value.strip() in ("-1", "auto")) and _length_ok(value, lo, hi)
    elif kind == "int":
        number = _as_int(value)
        ok = number is not None and lo <= number <= hi
    else:
        real = _as_float(value)
        ok = real is not None and lo <= real <= hi and not (name == "gpu_memory_utilization" and real == 0)
    return None if ok else f"must be {_describe(kind, lo, hi)}"


def validate_engine_numbers(view: Mapping[str, Any], origin: Mapping[str, str]) -> None:
    """Raise a ConfigError naming the option and where it was given for the first bad numeric value."""
    for name, value in view.items():
        problem = engine_number_problem(name, value)
        if problem:
            flag = "--" + name.replace("_", "-")
            source = origin.get(name, "")
            where = flag if source in ("", "cli", "default") else f"{source} {flag}"
            shown = value if isinstance(value, str) else repr(value)
            raise ConfigError(where, f"invalid value {str(shown)[:60]!r}: {problem}", f"set {flag} to {problem[8:]}")
    nodes, rank = _as_int(view.get("nnodes", 1)), _as_int(view.get("node_rank", 0))
    if nodes is not None and rank is not None and rank >= nodes:
        source = origin.get("node_rank", "")
        where = "--node-rank" if source in ("", "cli", "default") else f"{source} --node-rank"
        raise ConfigError(
            where, f"{rank} is outside the group of {nodes} node(s) (--nnodes)", f"set it from 0 to {nodes - 1}"
        )
