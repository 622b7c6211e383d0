"""EAGLE and EAGLE3 drafts against their target: generation, architecture, hidden size, vocabulary.

Pure functions over config dicts and the draft's tensor headers. The failures they catch
are the ones vLLM reports late or not at all: a hidden-size mismatch surfaces as a shape
error after the target has loaded, and an EAGLE3 checkpoint served as `eagle` runs with an
acceptance length of 1.0 and no error at all.
"""

from __future__ import annotations

from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.checkpoint import Checkpoint
from nim_specdec.preflight.compat_aux_layers import check_aux_layers
from nim_specdec.preflight.results import FAIL, Check, passed, skipped

# Architectures vLLM 0.32's model registry maps to an EAGLE3 or an EAGLE(-1) implementation.
EAGLE3_ARCHITECTURES = frozenset(
    {
        "Eagle3LlamaForCausalLM",
        "LlamaForCausalLMEagle3",
        "Eagle3MiniMaxM2ForCausalLM",
        "Eagle3Qwen2_5vlForCausalLM",
        "Eagle3Qwen3vlForCausalLM",
        "Eagle3Qwen3ForCausalLM",
        "Eagle3DeepseekV2ForCausalLM",
        "Eagle3DeepseekV3ForCausalLM",
        "PEagleDraftModel",
        "PeagleLlamaForCausalLM",
        "PeagleQwen3ForCausalLM",
    }
)
EAGLE_ARCHITECTURES = frozenset(
    {
        "EagleLlamaForCausalLM",
        "EagleLlama4ForCausalLM",
        "EagleMiniCPMForCausalLM",
        "EagleCohereForCausalLM",
        "EagleMistralForCausalLM",
        "EagleMistralLarge3ForCausalLM",
        "EagleDeepSeekMTPModel",
    }
)
# The speculators format names its architecture through the layer config's model_type.
SPECULATORS_EAGLE3 = {"llama": "Eagle3LlamaForCausalLM", "qwen3": "Eagle3Qwen3ForCausalLM"}
_SET_METHOD = 'set "method": "{method}" in the speculative config (NIM_SPECDEC_ARGS or --speculative-config)'
_OTHER_DRAFT = "use a draft trained for this target (NIM_DRAFT_MODEL_PATH), or a method without a draft (mtp, ngram)"


def vllm_architectures(method: str, draft: mc.Config) -> tuple[str, ...]:
    """The architecture names vLLM will look up for this draft under this method (its EAGLEConfig rule)."""
    if "speculators_model_type" in draft:
        return (
            SPECULATORS_EAGLE3.get(str(draft.get("model_type", "llama")), f"<speculators {draft.get('model_type')}>"),
        )
    if method == "eagle3":
        return tuple(
            a if a.startswith("Eagle3") or a.endswith("Eagle3") else f"Eagle3{a}" for a in mc.architectures(draft)
        )
    return tuple(a if a.startswith("Eagle") else f"Eagle{a}" for a in mc.architectures(draft))


def generation(draft: mc.Config, ckpt: Checkpoint | None, target_hidden: int | None) -> tuple[str | None, str]:
    """Which EAGLE generation a checkpoint is ("eagle3", "eagle" or None), and the evidence for it."""
    spec_type = draft.get("speculators_model_type")
    if spec_type in ("eagle3", "peagle"):
        return "eagle3", f"speculators_model_type {spec_type}"
    for arch in mc.architectures(draft):
        if arch in EAGLE3_ARCHITECTURES or arch.startswith("Eagle3") or arch.endswith("Eagle3"):
            return "eagle3", f"architecture {arch}"
        if arch in EAGLE_ARCHITECTURES:
            return "eagle", f"architecture {arch}"
    if draft.get("draft_vocab_size") is not None:
        return "eagle3", "draft_vocab_size in its config.json"
    if ckpt is not None and ckpt.tensors is not None:
        if ckpt.has_tensor("d2t") or any(n.startswith("midlayer.") for n in ckpt.tensors):
            return "eagle3", "d2t or midlayer tensors in its weights"
        fc = ckpt.find("fc.weight")
        if fc is not None and len(fc.shape) == 2:
            # EAGLE3 fuses three of the target's hidden states; EAGLE-1 one state plus the token
            # embedding, both of the draft's own width (fc.weight is [out, in]).
            widths = {w for w in (target_hidden, draft.get("target_hidden_size"), mc.hidden_size(draft)) if w}
            if any(fc.shape[1] == 3 * int(w) for w in widths):
                return "eagle3", f"fc.weight {list(fc.shape)} takes 3 x hidden size"
            if fc.shape[1] == 2 * fc.shape[0]:
                return "eagle", f"fc.weight {list(fc.shape)} takes 2 x hidden size"
    return None, "neither its config.json nor its weights tell the EAGLE generation"


def check_generation(method: str, draft: mc.Config, ckpt: Checkpoint | None, target: mc.Config | None) -> Check:
    name = "compatibility.method"
    gen, evidence = generation(draft, ckpt, mc.hidden_size(target) if target else None)
    if gen is None:
        return skipped(name, evidence, method=method)
    if gen == method:
        return passed(name, checkpoint=gen, evidence=evidence)
    label = "an EAGLE3" if gen == "eagle3" else "an EAGLE-1"
    return Check(
        name,
        FAIL,
        f"method {method!r} does not fit the draft: it is {label} checkpoint ({evidence})",
        _SET_METHOD.format(method=gen),
        "speculative_config",
        {"method": method, "checkpoint": gen},
    )


def check_architecture(method: str, draft: mc.Config, where: str) -> Check:
    name = "compatibility.architecture"
    known = EAGLE3_ARCHITECTURES if method == "eagle3" else EAGLE_ARCHITECTURES
    resolved = vllm_architectures(method, draft)
    if not resolved:
        return Check(name, FAIL, "its config.json has no architectures", _OTHER_DRAFT, where)
    unknown = [a for a in resolved if a not in known]
    if not unknown:
        return passed(name, architectures=list(resolved))
    return Check(
        name,
        FAIL,
        f"vLLM has no {method} implementation for architecture {unknown[0]} "
        f"(from {list(mc.architectures(draft)) or draft.get('model_type')})",
        _OTHER_DRAFT,
        where,
        {"architectures": list(resolved)},
    )


def check_hidden_size(method: str, draft: mc.Config, target: mc.Config, where: str) -> Check:
    name = "compatibility.hidden_size"
    key = "target_hidden_size" if method == "eagle3" and draft.get("target_hidden_size") else "hidden_size"
    expects, actual = (draft.get(key) or mc.hidden_size(draft)), mc.hidden_size(target)
    figures = {"draft_" + key: expects, "target_hidden_size": actual}
    if expects is None or actual is None:
        return skipped(name, "a config.json gives no hidden_size", **figures)
    if int(expects) == int(actual):
        return passed(name, **figures)
    return Check(
        name,
        FAIL,
        f"the draft expects a target hidden size of {expects} ({key}) but the target's is {actual}",
        _OTHER_DRAFT,
        where,
        figures,
    )


def check_vocabulary(method: str, draft: mc.Config, ckpt: Checkpoint | None, target: mc.Config, where: str) -> Check:
    """EAGLE3 may predict a smaller vocabulary, mapped onto the target's by its `d2t` tensor."""
    name = "compatibility.vocabulary"
    target_vocab, embed_vocab = mc.vocab_size(target), mc.vocab_size(draft)
    draft_vocab = draft.get("draft_vocab_size") if method == "eagle3" else None
    figures = {"target_vocab_size": target_vocab, "draft_vocab_size": draft_vocab or embed_vocab}
    if target_vocab is None or (embed_vocab is None and draft_vocab is None):
        return skipped(name, "a config.json gives no vocab_size", **figures)
    if embed_vocab is not None and int(embed_vocab) != int(target_vocab):
        return Check(
            name,
            FAIL,
            f"the draft embeds a vocabulary of {embed_vocab} tokens but the target's has {target_vocab}",
            _OTHER_DRAFT,
            where,
            figures,
        )
    if draft_vocab is None or int(draft_vocab) == int(target_vocab):
        return passed(name, mapping="identity", **figures)
    has_d2t = None if ckpt is None else ckpt.has_tensor("d2t")
    if has_d2t is None:
        return skipped(
            name,
            f"draft_vocab_size {draft_vocab} needs a d2t tensor, and the draft has no safetensors headers to show it",
            **figures,
        )
    d2t = ckpt.find("d2t") if ckpt else None
    if d2t is None:
        return Check(
            name,
            FAIL,
            f"its draft_vocab_size {draft_vocab} differs from the target's vocab_size {target_vocab} and its weights have no d2t tensor to map one onto the other",  # noqa: E501
            _OTHER_DRAFT,
            where,
            figures,
        )
    if tuple(d2t.shape) != (int(draft_vocab),):
        return Check(
            name,
            FAIL,
            f"its d2t tensor has shape {list(d2t.shape)}, not [{draft_vocab}] as draft_vocab_size says",
            _OTHER_DRAFT,
            where,
            figures,
        )
    return passed(name, mapping="d2t", **figures)


def eagle_checks(
    method: str,
    draft_raw: mc.Config,
    ckpt: Checkpoint | None,
    target: mc.Config | None,
    where: str,
    runner: str = "v1",
) -> list[Check]:
    """`runner`: the plan's model runner ("v1" or "v2"), which decides where vLLM reads EAGLE3's layer ids."""
    draft = mc.draft_view(draft_raw)
    checks = [check_generation(method, draft, ckpt, target), check_architecture(method, draft, where)]
    # EAGLE-1 reads the target's last hidden state only: auxiliary layers are EAGLE3's.
    aux = [check_aux_layers(draft, target, where, runner)] if method == "eagle3" else []
    if target is None:
        reason = "the target's config.json is not available locally"
        return (
            checks + [skipped("compatibility.hidden_size", reason), skipped("compatibility.vocabulary", reason)] + aux
        )
    return checks + [
        check_hidden_size(method, draft, target, where),
        check_vocabulary(method, draft, ckpt, target, where),
        *aux,
    ]
