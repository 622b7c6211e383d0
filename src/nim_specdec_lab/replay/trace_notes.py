"""What a trace holds that the measurement does not reproduce, as shares of its requests (pure).

A replay measures what was sent, and some of what was captured changes speculation's payoff: sampled
requests (temperature > 0) accept fewer drafts than greedy ones, so forcing greedy flatters speculation;
structured output and tool calls constrain decoding; n > 1 runs several sequences per request; a prompt
near max_model_len leaves little room and is where drafts are cut short or requests refused.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

STRUCTURED_KEYS = (
    "response_format",
    "tools",
    "tool_choice",
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "guided_decoding_backend",
    "guided_whitespace_pattern",
)
NEAR_SHARE = 0.9  # a prompt of at least this share of max_model_len counts as near it


def _temperature(body: Mapping[str, Any]) -> float | None:
    value = body.get("temperature")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _requested_tokens(body: Mapping[str, Any], forced: int | None) -> int:
    if forced is not None:
        return forced
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def trace_notes(
    requests: Sequence[Mapping[str, Any]],
    greedy: bool,
    max_tokens: int | None,
    max_model_len: int | None,
    prompt_tokens: Sequence[int | None] | None,
) -> dict[str, Any]:
    """Shares of `requests` (the bodies as captured); `prompt_tokens[i]`: request i's prompt length as the
    server tokenized it, None where unknown. Returns report.json's `trace_notes` block: shares and lines."""
    total = len(requests)
    sampled = sum(1 for b in requests if (_temperature(b) or 0) > 0)
    unset = sum(1 for b in requests if _temperature(b) is None)
    structured = sum(1 for b in requests if any(b.get(k) not in (None, [], {}) for k in STRUCTURED_KEYS))
    multiple = sum(1 for b in requests if any(isinstance(b.get(k), int) and b.get(k) > 1 for k in ("n", "best_of")))
    near = None
    if max_model_len and prompt_tokens is not None:
        near = sum(
            1
            for b, p in zip(requests, prompt_tokens)
            if p is not None
            and (p >= NEAR_SHARE * max_model_len or p + _requested_tokens(b, max_tokens) > max_model_len)
        )
    shares = {
        "requests": total,
        "temperature_above_0": sampled,
        "temperature_unset": unset,
        "structured_or_tools": structured,
        "n_above_1": multiple,
        "near_max_model_len": near,
        "greedy_forced": greedy,
        "max_model_len": max_model_len,
    }
    lines = []

    def share(count: int) -> str:
        return f"{count} of {total} requests ({count / total:.0%})" if total else "0 requests"

    if sampled or (greedy and unset):
        how = (
            "forced greedy here (--greedy): sampled traffic accepts fewer drafts than this measures"
            if greedy
            else "sampled as captured"
        )
        parts = [f"{share(sampled)} have temperature > 0"] if sampled else []
        if unset:
            parts.append(
                f"{share(unset)} set no temperature (the server's default, sampled unless the model's "
                "generation config says otherwise)"
            )
        lines.append(", ".join(parts) + f"; {how}")
    if structured:
        lines.append(
            f"{share(structured)} use structured output or tools (response_format, tools, guided_*): "
            "constrained decoding changes what a draft can get accepted"
        )
    if multiple:
        lines.append(f"{share(multiple)} ask for n > 1 (or best_of > 1): several sequences per request")
    if near:
        lines.append(
            f"{share(near)} have a prompt near max_model_len {max_model_len} (at least {NEAR_SHARE:.0%} of it, "
            "or too little room for the tokens asked): drafts are cut short there or the request refused"
        )
    elif near is None and max_model_len:
        lines.append("prompt lengths unknown: the share near max_model_len was not checked")
    return {"shares": shares, "lines": lines}
