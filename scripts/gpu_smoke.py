"""The GPU smoke workflow's checks (.github/workflows/gpu-smoke.yml), each a subcommand that needs only a URL
or files, so that everything but the server itself runs on a CPU too.

    python scripts/gpu_smoke.py ready URL [--api-key-env VAR] [--deadline S]   readiness, with the API key
    python scripts/gpu_smoke.py greedy URL MODEL OUT [--api-key-env VAR]        fixed chat prompts at temperature 0
    python scripts/gpu_smoke.py same A B [--min-fraction F]                       enough identical greedy outputs
    python scripts/gpu_smoke.py acceptance URL --min L [--api-key-env VAR]        acceptance length floor
    python scripts/gpu_smoke.py warm LOG                                          a start on a filled cache

Exit codes: 0 passed, 4 a check failed or the server was not reachable in time, 2 usage. Only `acceptance`
needs nim_specdec (its metrics parser); the rest is the standard library, for the runner's own Python.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

# Greedy outputs with speculation on and off are compared the way vLLM's own end-to-end test of EAGLE drafts
# compares them (tests/v1/e2e/test_spec_decode.py, test_eagle_correctness): many short greedy chat completions,
# each output equal or not as a whole, and the run passes when more than 60% of them are equal. vLLM does not
# promise byte-identical greedy output with speculation on: verifying k tokens at once changes the batch shapes
# and so the floating-point sums, and a near tie between two tokens can then go the other way. A broken image
# (wrong weights, a draft that corrupts the output) makes most outputs differ, which this still fails.
WORDS = ("test", "temp", "hello", "where", "river", "green", "seven", "light", "music", "stone")
PROMPTS = tuple(
    text
    for word in WORDS
    for text in (
        f"Write the word '{word}' ten times in a row, in lowercase, separated by spaces, and nothing else.",
        f"Give one sentence of about ten words that uses the word '{word}', and nothing else.",
    )
)
MAX_TOKENS = 10  # as vLLM's test: a short output has fewer places for a near tie to flip
MIN_FRACTION = 0.6  # vLLM's test_eagle_correctness: matches > int(0.6 * prompts)
FAILED = 4


def _request(url: str, key: str | None, body: dict | None = None, timeout: float = 120) -> bytes:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as answer:
        return answer.read()


def _key(args: argparse.Namespace) -> str | None:
    return os.environ.get(args.api_key_env) if args.api_key_env else None


def ready(args: argparse.Namespace) -> int:
    end, last = time.monotonic() + args.deadline, "no answer"
    while time.monotonic() < end:
        try:
            _request(f"{args.url}/v1/health/ready", _key(args), timeout=5)
            break
        except (urllib.error.URLError, OSError) as err:
            last = str(getattr(err, "code", "") or err)
        time.sleep(args.interval)
    else:
        print(f"gpu-smoke: {args.url}/v1/health/ready not ready within {args.deadline:.0f} s ({last})", file=sys.stderr)
        return FAILED
    if _key(args):  # the key must be what lets a request in: without it the API answers 401
        try:
            _request(f"{args.url}/v1/models", None, timeout=10)
            refused = None
        except urllib.error.HTTPError as err:
            refused = err.code
        if refused != 401:
            print(
                f"gpu-smoke: {args.url}/v1/models answered {refused or 200} without the API key, not 401",
                file=sys.stderr,
            )
            return FAILED
        _request(f"{args.url}/v1/models", _key(args), timeout=10)
    print(f"ready: {args.url}" + (" (API key required and accepted)" if _key(args) else ""))
    return 0


def greedy(args: argparse.Namespace) -> int:
    outputs = []
    for prompt in PROMPTS:
        body = {
            "model": args.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": MAX_TOKENS,
            "temperature": 0,
            "seed": 0,
        }
        answer = json.loads(_request(f"{args.url}/v1/chat/completions", _key(args), body))
        outputs.append(answer["choices"][0]["message"]["content"])
    Path(args.out).write_text(json.dumps(outputs, indent=1))
    print(f"greedy: {len(outputs)} outputs in {args.out}")
    return 0


def enough_equal(first: list[str], second: list[str], min_fraction: float) -> tuple[bool, int, int]:
    """(passed, equal outputs, outputs needed): more than int(min_fraction x prompts) equal, as vLLM counts."""
    equal = sum(1 for x, y in zip(first, second) if x == y)
    needed = int(min_fraction * len(first)) + 1
    return bool(first) and len(first) == len(second) and equal >= needed, equal, needed


def same(args: argparse.Namespace) -> int:
    first, second = (json.loads(Path(path).read_text()) for path in (args.a, args.b))
    passed, equal, needed = enough_equal(first, second, args.min_fraction)
    differing = [i for i, (x, y) in enumerate(zip(first, second)) if x != y]
    if not passed:
        print(
            f"gpu-smoke: {equal} of {len(first)} greedy outputs equal between {args.a} and {args.b} "
            f"({len(second)} there), {needed} needed; differing prompts {differing}",
            file=sys.stderr,
        )
        return FAILED
    print(f"same: {equal} of {len(first)} greedy outputs identical ({needed} needed); differing prompts {differing}")
    return 0


def acceptance_length(metrics_text: str) -> float | None:
    """1 + accepted tokens per draft over the whole scrape; None when no draft was made."""
    from nim_specdec.engines.vllm.observe.spec_counters import parse_prometheus, summed

    counters = summed(parse_prometheus(metrics_text))
    return 1.0 + counters.accepted / counters.drafts if counters.drafts else None


def acceptance(args: argparse.Namespace) -> int:
    length = acceptance_length(_request(f"{args.url}/v1/metrics", _key(args)).decode())
    if length is None or length < args.min:
        print(f"gpu-smoke: acceptance length {length} is below the floor {args.min}", file=sys.stderr)
        return FAILED
    print(f"acceptance length {length:.2f} (floor {args.min})")
    return 0


# What vLLM logs when a start loads its compiled model from the compile cache instead of compiling again; one
# line of either kind is the evidence. vLLM 0.32, 0.33 and 0.34 log both, from the same files:
# - torch's AOT compile (VLLM_USE_AOT_COMPILE, on by default with torch 2.10 or later) loads the whole compiled
#   function and compiles no graph: vllm/compilation/decorators.py, _try_load_aot_compiled_fn;
# - without it, vLLM's backend loads each piecewise graph from its cache: vllm/compilation/backends.py,
#   CompilerManager.compile.
WARM_EVIDENCE = (
    "Directly load AOT compilation from path ",
    "Directly load the compiled graph(s) for compile range ",
)


def warm_problems(log: str) -> list[str]:
    """What a second start on a filled cache got wrong, from its log (pure): it must download nothing, run
    vLLM's check inside vllm_boot (the launcher defers it there when nothing is downloaded), own the
    compile cache in place, and load vLLM's compiled model from it (WARM_EVIDENCE) instead of compiling again."""
    lines = log.splitlines()
    cache_lines = [line for line in lines if "compile cache: " in line]
    checks = (
        ("it downloaded", any("downloading " in line for line in lines)),
        (
            "vLLM's check did not run inside vllm_boot",
            not any("exec: " in line and "vllm_boot" in line for line in lines),
        ),
        (
            "the compile cache was not used in place",
            not cache_lines or any("for this start" in line or "from a copy" in line for line in cache_lines),
        ),
        (
            "vLLM compiled again instead of loading its compiled graphs",
            not any(evidence in line for line in lines for evidence in WARM_EVIDENCE),
        ),
    )
    return [what for what, bad in checks if bad]


def warm(args: argparse.Namespace) -> int:
    problems = warm_problems(Path(args.log).read_text(errors="replace"))
    if problems:
        print(f"gpu-smoke: the start on a filled cache: {'; '.join(problems)} ({args.log})", file=sys.stderr)
        return FAILED
    print("warm: filled cache, check inside vllm_boot, compile cache reused")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_smoke.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func in (("ready", ready), ("greedy", greedy), ("acceptance", acceptance)):
        command = sub.add_parser(name)
        command.set_defaults(func=func)
        command.add_argument("url")
        command.add_argument("--api-key-env", metavar="VAR", help="the variable holding the server's API key")
    sub.choices["ready"].add_argument("--deadline", type=float, default=1200)
    sub.choices["ready"].add_argument("--interval", type=float, default=5)
    sub.choices["greedy"].add_argument("model")
    sub.choices["greedy"].add_argument("out")
    sub.choices["acceptance"].add_argument("--min", type=float, required=True)
    command = sub.add_parser("same")
    command.set_defaults(func=same)
    command.add_argument("a")
    command.add_argument("b")
    command.add_argument("--min-fraction", type=float, default=MIN_FRACTION)
    command = sub.add_parser("warm")
    command.set_defaults(func=warm)
    command.add_argument("log")
    args = parser.parse_args(argv)
    args.url = getattr(args, "url", "").rstrip("/")
    try:
        return args.func(args)
    except (urllib.error.URLError, OSError, KeyError, ValueError) as err:
        print(f"gpu-smoke: {args.command}: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    sys.exit(main())
