"""The flow's pure parts: the training stage's progress as a line, the one line the command ends with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from nim_specdec_lab.draft.flow import Made, made_line, progress_line, worth_a_line
from nim_specdec_lab.draft.serve_line import serve_command
from nim_specdec_lab.draft.trainer_seam import Trained


@dataclass
class Event:
    step: int
    total: int
    loss: float


class Lined:
    def line(self) -> str:
        return "step 3/10, loss 2.1, 900 tokens/s, 12 s left"


@pytest.mark.parametrize(
    "event, line",
    [
        ("step 1/5", "step 1/5"),
        (Lined(), "step 3/10, loss 2.1, 900 tokens/s, 12 s left"),
        ({"step": 2, "loss": 1.23456}, "step 2, loss 1.235"),
        (Event(4, 9, 0.5), "step 4, total 9, loss 0.5"),
    ],
)
def test_progress_line(event, line):
    assert progress_line(event) == line


def test_the_last_line_names_the_draft_its_figures_and_how_to_serve_it():
    trained = Trained(Path("/o/draft"), 12, 1.512345678, 800, 3.0, "vllm", "speculators 0.9.0")
    acceptance = {"configurations": {"trained": {"acceptance_length": {"value": 2.345}}, "untrained": {}, "ngram": {}}}
    serve = serve_command("NIM_MODEL_PATH=/m/t x", Path("/o/draft"), 3)
    line = made_line(Made(Path("/o/draft"), serve, trained, acceptance))
    assert "\n" not in line and line.startswith("draft /o/draft (speculators 0.9.0, 12 steps, loss 1.512)")
    assert "trained 2.35, untrained n/a, ngram n/a" in line
    assert line.endswith(
        "serve it: NIM_MODEL_PATH='/m/t x' NIM_DRAFT_MODEL_PATH=/o/draft NIM_SPECDEC_ENABLE=1 nim-specdec serve "
        """--speculative-config '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'"""
    )


@dataclass
class Step:
    step: int
    max_steps: int


def test_a_long_run_prints_about_twenty_lines():
    shown = [n for n in range(1, 2001) if worth_a_line(Step(n, 2000))]
    assert shown[0] == 1 and shown[-1] == 2000 and 20 <= len(shown) <= 22
    assert all(worth_a_line(Step(n, 3)) for n in (1, 2, 3)) and worth_a_line("a line")
