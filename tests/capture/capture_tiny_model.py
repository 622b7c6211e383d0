"""A tiny Llama chat model made offline for the end-to-end capture tests (random weights, fixed seed).

2 layers, hidden 128, 2 heads and 1 KV head of size 64 (the CPU attention kernel refuses smaller
heads), bf16, with a byte-level BPE tokenizer trained on a few fixed sentences and a chat template.
Random weights fall into repetition, so n-gram speculation gets drafts accepted.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
SPECIALS = ["<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]
CORPUS = [
    "Payload capture records each request body so that a benchmark can replay real traffic.",
    "The quick brown fox jumps over the lazy dog, again and again and again.",
    "Count with me: one two three four five six seven eight nine ten.",
    "Speculative decoding drafts tokens cheaply and lets the target model verify them at once.",
]


def make_tiny_model(out: Path) -> Path:
    """Writes the model into `out` (created) and returns it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=330, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(CORPUS * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=2048,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=False, torch_dtype="bfloat16")
    torch.manual_seed(20240601)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    return out


if __name__ == "__main__":
    import sys

    print(make_tiny_model(Path(sys.argv[1])))
