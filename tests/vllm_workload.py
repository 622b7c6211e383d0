"""The fixed greedy traffic every end-to-end server gets, and what it records about a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters, parse_prometheus
from nim_specdec.observe.smoke import bearer, http_get, post_json, served_model

PROMPTS = (
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b",
    "One, two, three, four, five,",
    "Speculative decoding lets a small draft propose",
    "Hello! How are you today?",
)
MAX_TOKENS = 40
EXTEND = 8  # more than num_speculative_tokens + 1: drafts near the end are checked against these


@dataclass
class StopRecord:
    pid: int
    cmdline_before: list[str]  # what the pid ran just before SIGTERM
    returncode: int | None
    seconds: float
    group_gone: bool
    killed: bool


@dataclass
class RunRecord:
    """Everything a test may assert on: kept after the server is gone (one server at a time)."""

    name: str
    env: dict
    args: list[str]
    ready_statuses: list[int] = field(default_factory=list)
    ready_seconds: float = 0.0
    model: str = ""
    outputs: list[list[int]] = field(default_factory=list)  # completion token ids per prompt
    prompt_ids: list[list[int]] = field(default_factory=list)
    extended: list[list[int]] = field(default_factory=list)  # the same completions, EXTEND tokens longer
    counters_completions: dict = field(default_factory=dict)  # scraped right after the completions
    chat_ok: bool = False
    endpoints: dict = field(default_factory=dict)  # path -> (status, body)
    counters_before: dict = field(default_factory=dict)
    counters_after: dict = field(default_factory=dict)
    report_json: dict = field(default_factory=dict)
    report_text: str = ""
    report_stderr: str = ""
    report_returncode: int | None = None  # of `report --json`
    smoke: subprocess.CompletedProcess | None = None
    stop: StopRecord | None = None
    log: str = ""
    extra: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)  # probe name -> its result (see vllm_runs.probe)

    def probe(self, name: str):
        """The result of a registered probe; a probe that failed fails the test that reads it."""
        assert name in self.probes, f"[{self.name}] probe {name} did not run (registered: {sorted(self.probes)})"
        result = self.probes[name]
        if type(result).__name__ == "ProbeFailed":
            raise AssertionError(f"[{self.name}] probe {name} failed: {result.message}" + self.context())
        return result

    @property
    def growth(self) -> SpecCounters:
        """Counter growth over all the traffic the workload sent (what the report saw)."""
        after = self.counters_after.get(self.model, SpecCounters())
        return after.minus(self.counters_before.get(self.model, SpecCounters()))

    @property
    def completions_growth(self) -> SpecCounters:
        """Counter growth over the greedy completions alone."""
        after = self.counters_completions.get(self.model, SpecCounters())
        return after.minus(self.counters_before.get(self.model, SpecCounters()))

    def context(self) -> str:
        """Appended to assertion messages: what was sent and the end of the server's log."""
        return f"\n[{self.name}] env={self.env} args={self.args}\n--- server log (tail) ---\n{self.log[-5000:]}"


def scrape(base: str, path: str = "/metrics") -> dict[str, SpecCounters]:
    status, text = http_get(base + path)
    assert status == 200, f"GET {path} answered {status}"
    return parse_prometheus(text)


def complete(
    base: str, model: str, prompt: str, max_tokens: int = MAX_TOKENS, headers: dict | None = None
) -> tuple[list[int], list[int]]:
    """(prompt token ids, completion token ids) of one greedy completion."""
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "return_token_ids": True}
    status, answer = post_json(base + "/v1/completions", payload, headers=headers)
    assert status == 200, f"POST /v1/completions answered {status}: {answer}"
    choice = answer["choices"][0]
    assert choice.get("token_ids"), f"no token_ids in the answer: {answer}"
    return list(choice.get("prompt_token_ids") or []), list(choice["token_ids"])


def report_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "report", *args], capture_output=True, text=True, timeout=120
    )


def exercise(
    base: str, record: RunRecord, workdir: Path, smoke_expect_spec: bool | None = None, api_key: str | None = None
) -> None:
    """The traffic and probes; fills record. The server must be ready. With `api_key`, every request to vLLM's
    routes carries it (NIM's endpoints and /metrics need none)."""
    keyed = bearer(api_key)
    record.model = served_model(base, keyed)
    for path in ("/v1/health/live", "/v1/health/ready", "/v1/metrics", "/metrics", "/v1/models"):
        record.endpoints[path] = http_get(base + path, headers=keyed)
    saved = workdir / f"{record.name}-before.prom"
    before = report_cli("--url", base + "/v1/metrics", "--save", str(saved))
    assert before.returncode == 0, before.stderr
    record.counters_before = parse_prometheus(saved.read_text())
    answers = [complete(base, record.model, prompt, headers=keyed) for prompt in PROMPTS]
    record.prompt_ids = [prompt for prompt, _ in answers]
    record.outputs = [output for _, output in answers]
    record.counters_completions = scrape(base)
    record.extended = [complete(base, record.model, p, MAX_TOKENS + EXTEND, keyed)[1] for p in PROMPTS]
    status, answer = post_json(
        base + "/v1/chat/completions",
        {
            "model": record.model,
            "messages": [{"role": "user", "content": PROMPTS[0]}],
            "max_tokens": 16,
            "temperature": 0,
        },
        headers=keyed,
    )
    record.chat_ok = status == 200 and bool(answer["choices"][0]["message"]["content"])
    record.counters_after = scrape(base)
    after_json = report_cli("--url", base + "/v1/metrics", "--since", str(saved), "--json")
    record.report_stderr = after_json.stderr
    record.report_returncode = after_json.returncode
    record.report_json = json.loads(after_json.stdout) if after_json.returncode == 0 else {}
    record.report_text = report_cli("--url", base + "/v1/metrics", "--since", str(saved)).stdout
    if smoke_expect_spec is not None:
        flags = ["--expect-spec"] if smoke_expect_spec else []
        record.smoke = subprocess.run(
            [sys.executable, "-m", "nim_specdec.observe.smoke", base, "--deadline", "60", *flags],
            env={**os.environ, **({"VLLM_API_KEY": api_key} if api_key else {})},
            capture_output=True,
            text=True,
            timeout=300,
        )


def _demo_cycles() -> list[list[int]]:
    from nim_specdec_lab.demo_model import SPECIAL_TOKENS, TARGET, successor_map

    successor, seen, cycles = successor_map(TARGET.seed), set(), []
    for start in range(len(SPECIAL_TOKENS), len(successor)):
        if start not in seen:
            cycle = [start]
            while successor[cycle[-1]] != start:
                cycle.append(successor[cycle[-1]])
            seen.update(cycle)
            cycles.append(cycle)
    return cycles


def zero_draft_prompt(max_model_len: int, k: int, min_n: int, max_n: int) -> list[int]:
    """Prompt token ids whose greedy continuation on the demo model meets vLLM's zero drafts.

    The demo model's greedy output follows a fixed cycle of tokens. The prompt holds the cycle's first
    four tokens followed by other tokens, so each pass through the cycle gets one rejected n-gram draft;
    a rejection close enough to the model length is what makes vLLM draft zeros. The padding that puts
    a rejection there is found with the reference simulation.
    """
    from nim_specdec_lab.ngram.reference import simulate_request

    cycles = _demo_cycles()
    main = next(c for c in cycles if len(c) == max(map(len, cycles)))
    other = next(c for c in cycles if c is not main)
    for pad in range(4 * len(main)):
        prompt = [other[0]] * pad + main[:4] + other[1:] + [other[0], main[0]]
        output = (main[1:] + main[:1]) * (max_model_len // len(main) + 1)
        output = output[: max_model_len - len(prompt)]
        if simulate_request(prompt, output, [], k, min_n, max_n, max_model_len).zero_drafts:
            return prompt
    raise AssertionError("no padding of the prompt reaches the zero-draft regime")


def run_to_model_length(base: str, record: RunRecord, k: int, min_n: int, max_n: int) -> None:
    """One greedy completion that runs until the model length (ignore_eos, all the room as max_tokens): near the end
    vLLM schedules drafts of zeros instead of the proposer's. Token ids and counter growth go to extra."""
    status, body = http_get(base + "/v1/models")
    assert status == 200, f"GET /v1/models answered {status}"
    max_model_len = int(json.loads(body)["data"][0]["max_model_len"])
    prompt_ids = zero_draft_prompt(max_model_len, k, min_n, max_n)
    before = scrape(base)
    payload = {
        "model": record.model,
        "prompt": prompt_ids,
        "temperature": 0,
        "ignore_eos": True,
        "max_tokens": max_model_len - len(prompt_ids),
        "return_token_ids": True,
    }
    status, answer = post_json(base + "/v1/completions", payload, timeout=600)
    assert status == 200, f"POST /v1/completions answered {status}: {answer}"
    choice = answer["choices"][0]
    growth = scrape(base).get(record.model, SpecCounters()).minus(before.get(record.model, SpecCounters()))
    record.extra["to_model_length"] = {
        "max_model_len": max_model_len,
        "prompt": list(choice.get("prompt_token_ids") or prompt_ids),
        "output": list(choice["token_ids"]),
        "growth": growth,
    }
