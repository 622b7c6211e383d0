"""Fixtures for the pre-flight tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Mapping

import pytest
from preflight_data import Tensors, write_safetensors


@pytest.fixture
def model_dir(tmp_path: Path) -> Callable[..., Path]:
    """model_dir(name, config, tensors=None, shards=1) -> a directory with config.json and weights."""

    def make(name: str, config: Mapping, tensors: Tensors | None = None, shards: int = 1) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "config.json").write_text(json.dumps(config))
        if tensors is None:
            return directory
        if shards == 1:
            write_safetensors(directory / "model.safetensors", tensors)
            return directory
        names = list(tensors)
        weight_map, total = {}, 0
        for i in range(shards):
            shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: tensors[n] for n in names[i::shards]}
            total += write_safetensors(directory / shard, part)
            weight_map.update({n: shard for n in part})
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (directory / "model.safetensors.index.json").write_text(json.dumps(index))
        return directory

    return make
