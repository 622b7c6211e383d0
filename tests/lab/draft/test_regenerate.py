"""The regeneration request keeps the capture's sampling; the training row is the contract's."""

from __future__ import annotations

from nim_specdec_lab.draft.capture_input import DraftRequest
from nim_specdec_lab.draft.regenerate import Regenerated, regenerate, regeneration_body, rows_jsonl, training_row
from nim_specdec_lab.ngram.trace import CHAT_PATH, COMPLETIONS_PATH


def test_body_keeps_sampling_and_asks_for_token_ids():
    payload = {
        "model": "theirs",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.9,
        "top_p": 0.8,
        "seed": 5,
        "max_tokens": 20,
        "stream": True,
        "stream_options": {"include_usage": True},
        "n": 3,
    }
    body = regeneration_body(payload, "demo")
    assert body["temperature"] == 0.9 and body["top_p"] == 0.8 and body["seed"] == 5 and body["max_tokens"] == 20
    assert body["return_token_ids"] is True and body["model"] == "demo"
    assert "stream" not in body and "stream_options" not in body and "n" not in body


def chat_answer(text: str) -> dict:
    return {"prompt_token_ids": [0, 5, 6], "choices": [{"message": {"content": text}, "token_ids": [7, 8, 1]}]}


def test_chat_row():
    request = DraftRequest("abc", 1, CHAT_PATH, {"messages": [{"role": "user", "content": "hi"}]})
    row = training_row(request, chat_answer("hello"))
    assert row == {
        "id": "abc",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "prompt_token_ids": [0, 5, 6],
        "output_token_ids": [7, 8, 1],
    }


def test_completion_row_keeps_the_prompt():
    request = DraftRequest("abc", 1, COMPLETIONS_PATH, {"prompt": "Once"})
    answer = {"choices": [{"text": " upon", "prompt_token_ids": [3], "token_ids": [4, 5]}]}
    row = training_row(request, answer)
    assert row["messages"] == [{"role": "user", "content": "Once"}, {"role": "assistant", "content": " upon"}]
    assert row["prompt"] == "Once" and row["prompt_token_ids"] == [3] and row["output_token_ids"] == [4, 5]


def test_a_bad_answer_is_that_request_left_out_not_the_run():
    requests = [
        DraftRequest(str(i), i, CHAT_PATH, {"messages": [{"role": "user", "content": str(i)}]}) for i in range(3)
    ]
    answers = {"0": chat_answer("a"), "1": {"choices": []}, "2": {"choices": [{"message": {"content": "x"}}]}}
    seen = []
    results = regenerate(
        lambda path, body: answers[body["messages"][0]["content"]], requests, "demo", 2, lambda n, t: seen.append(n)
    )
    assert [r.row is not None for r in results] == [True, False, False]
    assert all(isinstance(r, Regenerated) for r in results) and sorted(seen) == [1, 2, 3]
    assert rows_jsonl(results).count("\n") == 1
