"""Training rows: each training request answered again by the target itself, with its token ids.

A draft must learn what the target says, not what answered the captured request (an older model, another
sampling), so every training request is sent to the target with its own sampling parameters (temperature,
top_p, top_k, seed, max_tokens, stop ...), not streamed, one choice, and `return_token_ids: true` (the
server then returns the prompt's and the output's token ids, FINDINGS "n-gram acceptance ...").

One row per request, the contract with the training stage:
    {"id": str, "messages": [...], "prompt_token_ids": [int], "output_token_ids": [int]}
`messages` ends with the target's assistant answer. A chat request keeps its messages; a completion
request's prompt becomes one user message, and the row also keeps it as "prompt": its token ids are the
prompt's own (no chat template), and they are what the target saw, so a trainer reads the ids first.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from nim_specdec.errors import LauncherError
from nim_specdec_lab.draft.capture_input import DraftRequest
from nim_specdec_lab.ngram.trace import CHAT_PATH, token_ids

# Fields that would stream the answer, ask for several choices or beams: one plain answer is regenerated.
_DROPPED = ("stream", "stream_options", "n", "best_of", "use_beam_search", "logprobs", "top_logprobs", "echo")


@dataclass(frozen=True)
class Regenerated:
    request: DraftRequest
    row: Mapping[str, Any] | None
    error: str | None = None


def regeneration_body(payload: Mapping[str, Any], model: str) -> dict[str, Any]:
    body = {k: v for k, v in payload.items() if k not in _DROPPED}
    body["model"] = model
    body["return_token_ids"] = True
    return body


def _text(response: Mapping[str, Any], chat: bool) -> str:
    choice = response["choices"][0]
    text = choice["message"].get("content") if chat else choice.get("text")
    return text if isinstance(text, str) else ""


def training_row(request: DraftRequest, response: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's row; ValueError when the answer carries no token ids or no text."""
    chat = request.path == CHAT_PATH
    try:
        prompt, output, _ = token_ids(dict(response))
        text = _text(response, chat)
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError("the answer is not a chat or completion response") from None
    if not output:
        raise ValueError("the target answered with no tokens")
    if chat:
        messages = [m for m in request.payload["messages"]] + [{"role": "assistant", "content": text}]
        row: dict[str, Any] = {"id": request.id, "messages": messages}
    else:
        prompt_text = request.payload["prompt"]
        if not isinstance(prompt_text, str):  # a list of prompts or token ids: kept as sent
            prompt_text = json.dumps(prompt_text)
        messages = [{"role": "user", "content": prompt_text}, {"role": "assistant", "content": text}]
        row = {"id": request.id, "messages": messages, "prompt": request.payload["prompt"]}
    row["prompt_token_ids"] = prompt
    row["output_token_ids"] = output
    return row


def regenerate(
    post: Callable[[str, dict[str, Any]], Mapping[str, Any]],
    requests: Sequence[DraftRequest],
    model: str,
    concurrency: int,
    on_done: Callable[[int, int], None],
) -> list[Regenerated]:
    """Every request answered through `post(path, body)` (the caller's HTTP edge), `concurrency` in flight;
    on_done(finished, total) after each. The result keeps the requests' order."""
    finished = [0]

    def one(request: DraftRequest) -> Regenerated:
        try:
            answer = post(request.path, regeneration_body(request.payload, model))
            out = Regenerated(request, training_row(request, answer))
        except LauncherError as err:
            out = Regenerated(request, None, err.problem)
        except ValueError as err:
            out = Regenerated(request, None, str(err))
        finished[0] += 1
        on_done(finished[0], len(requests))
        return out

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, requests))


def rows_jsonl(results: Sequence[Regenerated]) -> str:
    return "".join(json.dumps(r.row, ensure_ascii=False, allow_nan=False) + "\n" for r in results if r.row)
