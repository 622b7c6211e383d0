"""Smoke check of a running server: `python -m nim_specdec.observe.smoke URL [--expect-spec] [--deadline S]`.

Waits (up to the deadline) for /v1/health/ready, sends a few greedy chat and completion requests,
then prints the acceptance report for the traffic it sent. A server started with an API key (vLLM's
--api-key, or VLLM_API_KEY) is asked with the key in VLLM_API_KEY, the variable the server itself reads,
so a check run inside the server's container needs nothing more; the key is never printed.

Exit codes (nim_specdec.errors' table): 0 passed;
4 the server did not become ready in time, a request failed, or --expect-spec was given and no drafts were
made (the server answered wrongly); 1 an internal error. Standard library only, so that it runs from any
Python next to the server.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Mapping

from nim_specdec.engines.protocol.serving import result_problem
from nim_specdec.engines.registry import serving_for
from nim_specdec.errors import EXIT_INTERNAL, EXIT_OK, EXIT_UNREACHABLE, LauncherError, printable
from nim_specdec.observe.http_client import request, request_json

PROMPTS = ("The quick brown fox", "def add(a, b):", "One, two, three, four")
# Every request has an overall deadline (its timeout) and a size cap: a server that trickles or never
# stops answering cannot hold the check forever.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
SERVING = serving_for()  # the engine the launcher serves: its readiness and metrics paths, its counters


def http_get(url: str, timeout: float = 10.0, headers: Headers | None = None) -> tuple[int, str]:
    """(status, body); status 0 when the connection is refused, the answer is too large or not complete in time."""
    try:
        answer = request(url, where=url, deadline=timeout, headers=headers, max_bytes=MAX_ANSWER_BYTES)
    except LauncherError:
        return 0, ""
    return answer.status, answer.text()


def post_json(url: str, payload: dict, timeout: float = 120.0, headers: Headers | None = None) -> tuple[int, Any]:
    try:
        return request_json(
            url, where=url, deadline=timeout, payload=payload, max_bytes=MAX_ANSWER_BYTES, headers=headers
        )
    except LauncherError as err:
        return 0, err.one_line()


def wait_ready(base: str, deadline_s: float, poll_s: float = 1.0, alive=lambda: True) -> list[int]:
    """Poll the engine's readiness path (/v1/health/ready) until 200; returns the statuses seen. Raises
    TimeoutError at the deadline."""
    seen: list[int] = []
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        status, _ = http_get(base + SERVING.ready_path, timeout=min(10.0, poll_s * 10))
        seen.append(status)
        if status == 200:
            return seen
        if not alive():
            raise RuntimeError(f"the server process exited before it became ready (statuses seen: {sorted(set(seen))})")
        time.sleep(poll_s)
    raise TimeoutError(
        f"{base}{SERVING.ready_path} did not answer 200 within {deadline_s:.0f} s (statuses seen: {sorted(set(seen))})"
    )


def _say(text: str) -> None:
    """One line on stderr: whatever the server put in it (an error body, a model id), its control characters
    are escapes, never terminal commands or forged lines."""
    print(printable("smoke: " + text), file=sys.stderr)


def served_model(base: str, headers: Headers | None = None) -> str:
    status, body = http_get(base + "/v1/models", headers=headers)
    if status == 401:
        raise RuntimeError("GET /v1/models answered 401: the server wants an API key; set VLLM_API_KEY to one of them")
    if status != 200:
        raise RuntimeError(f"GET /v1/models answered {status}")
    model = json.loads(body)["data"][0]["id"]
    if not isinstance(model, str) or not model:
        raise TypeError("GET /v1/models names no model id")
    return model


Headers = Mapping[str, str]


def bearer(api_key: str | None) -> dict[str, str]:
    """The header vLLM's --api-key checks; none without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def spec_counters(base: str, headers: Headers | None = None):
    status, text = http_get(base + SERVING.metrics_path, headers=headers)
    if status != 200:
        raise RuntimeError(f"GET {SERVING.metrics_path} answered {status}")
    return SERVING.counters.parse(text)


def send_requests(base: str, model: str, max_tokens: int = 32, headers: Headers | None = None) -> list[str]:
    """A few greedy requests; returns one line per failure (empty when all succeeded)."""
    failures = []
    for prompt in PROMPTS:
        for path, payload in (
            ("/v1/completions", {"prompt": prompt}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}]}),
        ):
            body = {"model": model, "max_tokens": max_tokens, "temperature": 0, **payload}
            status, answer = post_json(base + path, body, headers=headers)
            if status != 200 or not isinstance(answer, dict) or not answer.get("choices"):
                failures.append(f"POST {path} answered {status}: {str(answer)[:200]}")
    return failures


def run(base: str, expect_spec: bool, deadline_s: float, api_key: str | None = None) -> int:
    base, headers = base.rstrip("/"), bearer(api_key)
    try:
        wait_ready(base, deadline_s)
    except TimeoutError as err:
        _say(f"not ready: {err}")
        return EXIT_UNREACHABLE
    model = served_model(base, headers)
    before = spec_counters(base, headers)
    failures = send_requests(base, model, headers=headers)
    for failure in failures:
        _say(failure)
    counters = SERVING.counters
    grown = counters.difference(spec_counters(base, headers), before)
    result = counters.report(grown)
    problem = counters.problem(grown, since=True) or result_problem(result)
    if problem:
        _say(f"the counters cannot be reported: {problem}")
        return EXIT_UNREACHABLE
    print(counters.render_text(result), end="")
    drafts = sum(entry["drafts"] for entry in result.values())
    if expect_spec and drafts <= 0:
        _say("speculative decoding was expected but no drafts were made")
        return EXIT_UNREACHABLE
    if failures:
        return EXIT_UNREACHABLE
    print(printable(f"smoke: ok ({len(PROMPTS) * 2} requests to {model[:200]}, {drafts:g} drafts)"))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nim_specdec.observe.smoke", description=__doc__.splitlines()[0])
    parser.add_argument("url", help="server base URL, e.g. http://localhost:8000")
    parser.add_argument("--expect-spec", action="store_true", help="fail when the requests made no drafts")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds to wait for readiness (default 600)")
    args = parser.parse_args(argv)
    try:
        return run(args.url, args.expect_spec, args.deadline, os.environ.get("VLLM_API_KEY") or None)
    except (
        RuntimeError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        RecursionError,
    ) as err:  # the server's answers
        _say(f"the server answered wrongly: {type(err).__name__}: {' '.join(str(err).split())[:300]}")
        return EXIT_UNREACHABLE
    except Exception as err:  # noqa: BLE001 - a bug here: one line, never a traceback
        _say(f"internal error: {type(err).__name__}: {' '.join(str(err).split())[:300]}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
