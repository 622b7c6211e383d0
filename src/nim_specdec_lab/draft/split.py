"""Which captured requests train the draft and which measure it.

The rule: a request is held out when the first 8 bytes of SHA-256("<seed>:<request id>"), read as an unsigned
integer and divided by 2**64, fall below the held-out fraction. The request id is the hash of its payload
(draft.capture_input), so the split depends only on the seed and each request's content: the same capture
and seed give the same split on any machine, in any line order, and a prompt captured twice is on one side.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft.capture_input import DraftRequest

# Two held-out prompts are the fewest an acceptance interval can be computed from; fewer training ones
# than this train nothing worth measuring.
MIN_HELD_OUT = 2
MIN_TRAIN = 8


@dataclass(frozen=True)
class Split:
    train: tuple[DraftRequest, ...]
    held_out: tuple[DraftRequest, ...]


def position(request_id: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{request_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split(requests: Sequence[DraftRequest], seed: int, fraction: float) -> Split:
    if not 0 < fraction < 1:
        raise ConfigError("--held-out", f"{fraction} is not between 0 and 1", "e.g. 0.2 holds out a fifth")
    held = tuple(r for r in requests if position(r.id, seed) < fraction)
    train = tuple(r for r in requests if position(r.id, seed) >= fraction)
    if len(held) < MIN_HELD_OUT or len(train) < MIN_TRAIN:
        raise ConfigError(
            "--held-out",
            f"{fraction} with seed {seed} leaves {len(train)} training and {len(held)} held-out requests "
            f"(at least {MIN_TRAIN} and {MIN_HELD_OUT} needed)",
            "capture more requests, or change --held-out",
        )
    return Split(train, held)
