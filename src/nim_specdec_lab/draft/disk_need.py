"""How much disk the hidden states take, checked before the target is even asked for one token.

EAGLE3 trains on the target's hidden states at its auxiliary layers plus the last one, one vector of
hidden_size per token per layer, kept in the target's dtype (2 bytes for bf16). The estimate adds a quarter
for the library's own files and checkpoints; a disk with less free is refused up front.
"""

from __future__ import annotations

from nim_specdec.errors import ConfigError

OVERHEAD = 1.25


def hidden_state_bytes(tokens: int, hidden_size: int, layers: int, dtype_bytes: int = 2) -> int:
    return int(tokens * hidden_size * layers * dtype_bytes * OVERHEAD)


def refuse_if_short(need: int, free: int, where: str) -> None:
    if need > free:
        raise ConfigError(
            "--out",
            f"{where} has {free / 2**20:.1f} MiB free, and the hidden states need about {need / 2**20:.1f} MiB",
            "free space there, give --out on a larger disk, or train on fewer requests",
        )
