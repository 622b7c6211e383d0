"""Shared by the fetcher tests: test data, and running the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
WEIGHTS = "model.safetensors"
# The config.json of a one-layer Llama that vLLM's CPU build accepts (head_dim 64: the CPU attention kernel
# refuses smaller), for remote targets whose weights the tests only download.
TINY_LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 330,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


def model_files(weights_size: int = 256 * 1024) -> dict[str, bytes]:
    return {
        "config.json": b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1}',
        WEIGHTS: os.urandom(weights_size),
        "tokenizer/tokenizer.json": b'{"version": "1.0"}',
    }


def cli_env(server, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_", "NGC_", "STORAGE_EMULATOR"))}
    env.update(server.env())
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["NIM_CACHE_PATH"] = str(cache)
    env.update(extra)
    return env


def start_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "nim_specdec", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def context_for(env, cache_dir, **kwargs):
    """A FetchContext as the launcher builds one from an environment: the download settings that `env`'s
    NIM_DOWNLOAD_* variables give, with the backends reading their credentials from `env`."""
    from nim_specdec.config.download_settings import download_settings
    from nim_specdec.config.host_env import read_host_env
    from nim_specdec.fetchers.download.base import FetchContext

    host = read_host_env(env)
    kwargs = {"hf_hub_offline": host.hf_hub_offline, "secrets": host.secrets, **kwargs}
    return FetchContext(env=env, cache_dir=cache_dir, download=download_settings(env), **kwargs)
