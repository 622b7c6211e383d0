"""A draft trained for a few steps, served as the guide's air-gapped example says: NIM_DRAFT_MODEL_PATH=/abs/dir
and the bare name "eagle3_draft" in the speculative config, through `nim-specdec serve` and the real vLLM. The
checks: the launcher's pre-flight passes, vLLM loads it as an EAGLE3 drafter reading the target's auxiliary layers
(1, 2, 4), and it drafts num_speculative_tokens tokens per step on sampled chat completions."""

from __future__ import annotations

import json
import urllib.request

import pytest
from training_fixtures import draft_environ, small_job

from nim_specdec_lab.demo_model import LEARNABLE_AUX_LAYERS
from nim_specdec_lab.draft.training.supervisor import train_draft
from vllm_runs import SERVER_ARGS, base_env, serving

pytestmark = pytest.mark.e2e

GUIDE_EAGLE3 = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}
COUNTERS = ("num_drafts_total", "num_draft_tokens_total", "num_accepted_tokens_total")


def spec_counters(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode()
    found = dict.fromkeys(COUNTERS, 0.0)
    for line in text.splitlines():
        for name in COUNTERS:
            if line.startswith(f"vllm:spec_decode_{name}"):
                found[name] += float(line.split()[-1])
    return found


def chat(url: str, content: str, seed: int) -> None:
    body = {
        "model": "learnable",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 24,
        "temperature": 1.0,
        "seed": seed,
    }
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    answer = json.loads(urllib.request.urlopen(request, timeout=300).read())
    assert answer["choices"][0]["message"]["content"] is not None


@pytest.fixture(scope="module")
def served(learnable, requests_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    result = train_draft(small_job(learnable, requests_file, root), environ=draft_environ())
    env = base_env(root / "run", learnable.parent)
    env.update(
        NIM_MODEL_PATH=str(learnable),
        NIM_SERVED_MODEL_NAME="learnable",
        NIM_DRAFT_MODEL_PATH=str(result.draft_dir),
        NIM_SPECDEC_ENABLE="1",
    )
    args = [*SERVER_ARGS, "--speculative-config", json.dumps(GUIDE_EAGLE3)]
    with serving("trained-draft", env, args, root) as server:
        before = spec_counters(server.url)
        for i, prompt in enumerate(("the quick brown fox", "speculative decoding", "one two three four")):
            chat(server.url, prompt, i)
        after = spec_counters(server.url)
        log = server.log_text()
    return result, {k: after[k] - before[k] for k in COUNTERS}, log


def test_the_trained_draft_is_loaded_with_the_targets_aux_layers(served):
    result, _, log = served
    assert "method='eagle3', model='" in log and "eagle3_draft" in log, log[-3000:]
    assert f"Using auxiliary layers from speculative config: {LEARNABLE_AUX_LAYERS}" in log, log[-3000:]
    assert result.aux_layer_ids == LEARNABLE_AUX_LAYERS


def test_the_trained_draft_drafts(served):
    _, growth, log = served
    assert growth["num_drafts_total"] > 0, log[-3000:]
    assert growth["num_draft_tokens_total"] == 3 * growth["num_drafts_total"]
