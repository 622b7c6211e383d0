"""Trains and exports an EAGLE3 head with NVIDIA Model Optimizer; run by train_draft inside the draft venv.

`python worker.py SPEC.json`: this file runs in the draft venv's interpreter (torch, transformers and
nvidia-modelopt, not this project), so it imports nothing from the project and reads its whole input from
one JSON file the caller wrote. It prints one JSON object per line on stdout (events "start", "progress",
"done", "error"); everything else the libraries print goes to stderr.

The library does the work: `modelopt.torch.speculative.convert` adds the EAGLE3 head to the Hugging Face
target (whose forward pass gives the hidden states, "online"), Hugging Face's Trainer runs the loop and writes
and resumes its checkpoints, `export_speculative_decoding` writes the draft directory. This file only feeds
the target's own token ids (the regenerated responses, never re-tokenized text) and translates layer numbers.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

# Printed on stdout as {"event": "error", "kind": KIND, ...}; the caller maps each kind to its typed error.
UNSUPPORTED_TARGET = "unsupported-target"
BAD_DATA = "bad-data"
TRAINING_FAILED = "training-failed"


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}, sort_keys=True), flush=True)


class WorkerError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def read_examples(path: Path, max_seq_len: int) -> list[dict]:
    """prompt + response ids of each line; the loss covers the positions whose next token is the response."""
    examples = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                prompt, output = row["prompt_token_ids"], row["output_token_ids"]
                if not all(isinstance(t, int) and t >= 0 for t in prompt + output):
                    raise ValueError("token ids must be non-negative integers")
            except (ValueError, KeyError, TypeError) as err:
                raise WorkerError(BAD_DATA, f"line {number}: {err}") from None
            ids = (prompt + output)[:max_seq_len]
            mask = [0] * max(len(prompt) - 1, 0) + [1] * (len(ids) - max(len(prompt) - 1, 0))
            if len(prompt) and len(output) and len(ids) > len(prompt):
                examples.append({"input_ids": ids, "loss_mask": mask[: len(ids)]})
    if not examples:
        raise WorkerError(BAD_DATA, "no line has both prompt and output token ids within max_seq_len")
    return examples


class PadCollator:
    """Right-pads every batch to one width (the head caches its attention masks by shape, as the library's own
    collator pads to its training length); counts the tokens it hands out, for tokens per second."""

    def __init__(self, pad_id: int, width: int):
        self.pad_id = pad_id
        self.width = width
        self.tokens = 0

    def __call__(self, rows: list[dict]) -> dict:
        import torch  # noqa: PLC0415 - the draft venv's torch, after the spec was read

        width = self.width
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        loss_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            n = len(row["input_ids"])
            ids[i, :n] = torch.tensor(row["input_ids"])
            attention[i, :n] = 1
            loss_mask[i, :n] = torch.tensor(row["loss_mask"])
        self.tokens += int(attention.sum())
        return {"input_ids": ids, "attention_mask": attention, "loss_mask": loss_mask}


def complete_checkpoint_state(entry: Path) -> dict | None:
    """trainer_state.json of a checkpoint, the Trainer's last write there: None until it is whole."""
    try:
        state = json.loads((entry / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def complete_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The newest complete checkpoint-N in checkpoint_dir, None when there is none."""
    found = []
    for entry in checkpoint_dir.glob("checkpoint-*") if checkpoint_dir.is_dir() else ():
        step = entry.name.removeprefix("checkpoint-")
        if step.isdigit() and entry.is_dir() and not entry.is_symlink() and complete_checkpoint_state(entry):
            found.append((int(step), entry))
    return max(found)[1] if found else None


def remove_partial_checkpoints(checkpoint_dir: Path) -> None:
    """A kill during a save leaves a checkpoint without its state file; the Trainer would pick it, so it goes."""
    import shutil  # noqa: PLC0415

    for entry in checkpoint_dir.glob("checkpoint-*") if checkpoint_dir.is_dir() else ():
        if entry.is_dir() and not entry.is_symlink() and complete_checkpoint_state(entry) is None:
            shutil.rmtree(entry)


def build_model(spec: dict):
    import modelopt.torch.speculative as mtsp  # noqa: PLC0415
    import torch  # noqa: PLC0415
    from transformers import AutoConfig, AutoModelForCausalLM  # noqa: PLC0415

    config = AutoConfig.from_pretrained(spec["target_dir"])
    layers = int(config.num_hidden_layers)
    # vLLM numbers the states 0 (embeddings) .. L (last layer's output); Model Optimizer hooks the output of
    # layer i, which is vLLM's i + 1. The embeddings (vLLM 0) have no layer to hook.
    aux = spec["aux_layer_ids"]
    if any(i < 1 or i > layers for i in aux) or len(set(aux)) != len(aux):
        raise WorkerError(
            UNSUPPORTED_TARGET,
            f"aux layers {aux} do not exist in a {layers}-layer target (valid: 1..{layers}, distinct)",
        )
    heads = int(config.num_attention_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(spec["target_dir"], dtype=torch.bfloat16 if cuda else torch.float32)
    torch.manual_seed(spec["seed"])  # the head's initial weights: the same for a trained and an untrained export
    architecture = {
        "num_hidden_layers": 1,
        "intermediate_size": int(config.intermediate_size),
        "num_attention_heads": heads,
        "num_key_value_heads": int(getattr(config, "num_key_value_heads", heads)),
        "head_dim": head_dim,
        "use_aux_hidden_state": True,
        "eagle_aux_hidden_state_layer_ids": [i - 1 for i in aux],
        "rope_theta": float(getattr(config, "rope_theta", None) or 10000.0),
        "rope_scaling": {"rope_type": "default", "rope_theta": float(getattr(config, "rope_theta", None) or 10000.0)},
    }
    mtsp.convert(
        model,
        [
            (
                "eagle",
                {
                    "eagle_decoder_type": "llama",
                    "eagle_architecture_config": architecture,
                    "eagle_ttt_steps": max(1, int(spec["num_speculative_tokens"])),
                    # The target's own RoPE is exported as is (the default would add a YaRN scaling).
                    "eagle_export_rope_scaling": {},
                    # Compiling costs minutes of autotuning per shape on a CPU, more than a short run trains.
                    "eagle_use_torch_compile": False,
                },
            )
        ],
    )
    return model, config


def export(model, target_config, spec: dict, stage: Path) -> None:
    import torch  # noqa: PLC0415
    from modelopt.torch.export import export_speculative_decoding  # noqa: PLC0415

    export_speculative_decoding(model, dtype=torch.bfloat16, export_dir=stage)
    config_path = stage / "config.json"
    config = json.loads(config_path.read_text())
    # In vLLM's own numbering (see build_model), in both places it looks: the V1 runner reads
    # eagle_config.eagle_aux_hidden_state_layer_ids, the V2 runner (GPUs, and every runner from 0.34) only the
    # top-level key, falling back to its defaults (2, L//2, L-3): layers the head was not trained on.
    config.setdefault("eagle_config", {})["eagle_aux_hidden_state_layer_ids"] = list(spec["aux_layer_ids"])
    config["eagle_aux_hidden_state_layer_ids"] = list(spec["aux_layer_ids"])
    config["target_hidden_size"] = int(target_config.hidden_size)
    config["torch_dtype"] = "bfloat16"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def export_finished(model, target_config, spec: dict, stage: Path, checkpoint: Path, state: dict, started: float):
    from safetensors.torch import load_file  # noqa: PLC0415

    loaded = model.load_state_dict(load_file(str(checkpoint / "model.safetensors")), strict=False)
    if loaded.missing_keys or loaded.unexpected_keys:
        keys = (loaded.missing_keys + loaded.unexpected_keys)[:3]
        raise WorkerError(TRAINING_FAILED, f"{checkpoint.name} does not match the model ({keys})")
    export(model, target_config, spec, stage)
    logged = [entry["loss"] for entry in state.get("log_history", []) if "loss" in entry]
    emit("start", resume_from=checkpoint.name, examples=0, max_steps=int(spec["max_steps"]))
    return {
        "steps": int(state["global_step"]),
        "final_loss": float(logged[-1]) if logged else None,
        "tokens": 0,
        "seconds": time.monotonic() - started,
    }


def train(spec: dict) -> dict:
    import torch  # noqa: PLC0415
    from transformers import Trainer, TrainerCallback, TrainingArguments  # noqa: PLC0415

    started = time.monotonic()
    model, target_config = build_model(spec)
    stage = Path(spec["export_stage_dir"])
    if spec["max_steps"] == 0:
        export(model, target_config, spec, stage)
        return {"steps": 0, "final_loss": None, "tokens": 0, "seconds": time.monotonic() - started}

    examples = read_examples(Path(spec["data_file"]), spec["max_seq_len"])
    checkpoint_dir = Path(spec["checkpoint_dir"])
    remove_partial_checkpoints(checkpoint_dir)
    resume = complete_checkpoint(checkpoint_dir)
    finished = complete_checkpoint_state(resume) if resume else None
    if finished and int(finished.get("global_step", 0)) >= int(spec["max_steps"]):
        # The Trainer, resumed at its last step, would train one step more: the checkpoint is exported as it is.
        return export_finished(model, target_config, spec, stage, resume, finished, started)
    pad_id = target_config.pad_token_id if target_config.pad_token_id is not None else target_config.eos_token_id
    width = max(len(e["input_ids"]) for e in examples)
    collator = PadCollator(int(pad_id if isinstance(pad_id, int) else 0), width)
    state: dict = {"loss": None, "started": None, "first_step": 0}
    max_steps = int(spec["max_steps"])

    class Progress(TrainerCallback):
        """One event per logged step; rates are averages since this run began (a resumed run counts its own)."""

        def on_train_begin(self, args, trainer_state, control, **kwargs):
            state.update(started=time.monotonic(), first_step=trainer_state.global_step)

        def on_log(self, args, trainer_state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            seconds = max(time.monotonic() - state["started"], 1e-9)
            done = max(trainer_state.global_step - state["first_step"], 1)
            state["loss"] = float(logs["loss"])
            emit(
                "progress",
                step=trainer_state.global_step,
                max_steps=max_steps,
                loss=state["loss"],
                tokens_per_second=round(collator.tokens / seconds, 1),
                seconds_left=round(seconds / done * (max_steps - trainer_state.global_step), 1),
            )

        def on_save(self, args, trainer_state, control, **kwargs):
            emit("checkpoint", step=trainer_state.global_step)

    cuda = torch.cuda.is_available()
    args = TrainingArguments(
        output_dir=str(checkpoint_dir),
        max_steps=max_steps,
        per_device_train_batch_size=int(spec["batch_size"]),
        learning_rate=float(spec["learning_rate"]),
        lr_scheduler_type="constant",
        logging_steps=1,
        save_strategy="steps",
        save_steps=int(spec["save_steps"]),
        save_total_limit=2,
        seed=int(spec["seed"]),
        data_seed=int(spec["seed"]),
        use_cpu=not cuda,
        bf16=cuda,
        report_to=[],
        dataloader_num_workers=0,
        remove_unused_columns=False,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=examples, data_collator=collator, callbacks=[Progress()])
    emit("start", resume_from=resume.name if resume else None, examples=len(examples), max_steps=max_steps)
    output = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    # A run resumed at its last step trains nothing: its loss is the one the checkpoint's log recorded.
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    final_loss = state["loss"] if state["loss"] is not None else float(logged[-1] if logged else output.training_loss)
    if not math.isfinite(final_loss):
        raise WorkerError(TRAINING_FAILED, f"the loss is {final_loss} after {trainer.state.global_step} steps")
    export(model, target_config, spec, stage)
    return {
        "steps": int(trainer.state.global_step),
        "final_loss": final_loss,
        "tokens": int(collator.tokens),
        "seconds": time.monotonic() - started,
    }


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    try:
        result = train(spec)
    except WorkerError as err:
        emit("error", kind=err.kind, message=str(err))
        return 3
    from importlib.metadata import version  # noqa: PLC0415

    emit("done", library="nvidia-modelopt", library_version=version("nvidia-modelopt"), **result)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main(sys.argv))
