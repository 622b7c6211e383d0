"""One training run: what it is asked to do (TrainJob), what it reports (Progress), what it made (TrainResult)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Where the target's hidden states came from. Model Optimizer's "online" mode runs the target's forward pass in
# transformers inside each training step; vLLM's extract_hidden_states path fails on the CPU build (see
# docs/draft-training.md), so this is the only one that runs here.
HIDDEN_STATES_ONLINE_HF = "online-transformers"


@dataclass(frozen=True)
class TrainJob:
    target_dir: Path  # a local Hugging Face model directory (the served target)
    data_file: Path  # JSONL: {"id", "messages", "prompt_token_ids", "output_token_ids"} per regenerated request
    work_dir: Path  # checkpoints and the export's staging directory; kept between runs to resume
    output_dir: Path  # the exported draft; appears whole or not at all
    seed: int = 0
    steps: int = 200
    num_speculative_tokens: int = 3  # also the number of train-time-test steps the head is trained for
    aux_layer_ids: tuple[int, ...] | None = None  # vLLM numbering (0 embeddings, k output of layer k); None: chosen
    max_seq_len: int = 512
    learning_rate: float = 1e-3
    batch_size: int = 4
    save_steps: int = 25


@dataclass(frozen=True)
class Progress:
    step: int
    max_steps: int
    loss: float
    tokens_per_second: float
    seconds_left: float


@dataclass(frozen=True)
class TrainResult:
    draft_dir: Path
    steps: int
    final_loss: float | None  # None for an untrained export
    tokens_trained: int
    seconds: float
    hidden_states: str  # which path gave the target's hidden states (HIDDEN_STATES_ONLINE_HF)
    library: str
    library_version: str
    aux_layer_ids: tuple[int, ...]
    resumed_from_step: int | None = None
