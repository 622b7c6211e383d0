"""Which of the target's layers vLLM hands an EAGLE3 draft, and whether the target has them.

An EAGLE3 draft reads the target's hidden states at a few auxiliary layers. vLLM takes their ids from
the draft's config.json, or its own default (2, L//2, L-3) when the draft names none, and captures only
the ids that are layers of the target: a missing or duplicated id means fewer hidden states than the
draft's fc layer takes, and the server fails at its first request (`shape '[-1, 384]' is invalid for
input of size 1024` in combine_hidden_states), after the weights have loaded. Pure: configs in, a Check out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.results import FAIL, WARN, Check, passed, skipped

NAME = "compatibility.aux_layers"
TOP = "eagle_aux_hidden_state_layer_ids"
NESTED = "eagle_config.eagle_aux_hidden_state_layer_ids"
NESTED_V2 = "eagle_config.layer_ids"
DEFAULT = "vLLM's default (2, L//2, L-3), the draft naming none"


@dataclass(frozen=True)
class AuxLayers:
    ids: Any  # as the draft's config.json gives them (any JSON value), or vLLM's default
    source: str  # the key they come from, or DEFAULT
    unread: Any = None  # eagle_config.eagle_aux_hidden_state_layer_ids where the runner does not read them


def default_aux_layers(num_layers: int) -> tuple[int, int, int]:
    # SupportsEagle3.get_eagle3_default_aux_hidden_state_layers (vllm/model_executor/models/interfaces.py).
    return (2, num_layers // 2, num_layers - 3)


def _named(value: Any) -> bool:
    # vLLM's `if not layer_ids`: null and [] name nothing.
    return value is not None and value != [] and value != ()


def aux_layers(draft: mc.Config, num_layers: int, runner: str) -> AuxLayers:
    """The ids vLLM will use, by its own precedence (draft: as mc.draft_view gives it, the speculators
    format's top-level key already lifted, as vLLM's speculators config does).

    V1 runner (vllm/v1/worker/gpu_model_runner.py, _get_eagle3_aux_layers_from_config): the top-level key,
    else eagle_config.eagle_aux_hidden_state_layer_ids. V2 runner (vllm/v1/worker/gpu/spec_decode/eagle/
    eagle3_utils.py, get_eagle3_aux_layers_from_config; 0.34's only runner): the top-level key, else
    eagle_config.layer_ids; it never reads eagle_config.eagle_aux_hidden_state_layer_ids. Both fall back to
    the default when what they read is not a non-empty list. DFlash and DSpark keys are left out: no
    EAGLE3 draft has them.
    """
    nested = draft.get("eagle_config")
    nested = nested if isinstance(nested, dict) else {}
    if _named(draft.get(TOP)):
        return AuxLayers(draft[TOP], TOP)
    if runner == "v2":
        if _named(nested.get("layer_ids")):
            return AuxLayers(nested["layer_ids"], NESTED_V2)
        unread = nested.get("eagle_aux_hidden_state_layer_ids")
        return AuxLayers(default_aux_layers(num_layers), DEFAULT, unread if _named(unread) else None)
    if _named(nested.get("eagle_aux_hidden_state_layer_ids")):
        return AuxLayers(nested["eagle_aux_hidden_state_layer_ids"], NESTED)
    return AuxLayers(default_aux_layers(num_layers), DEFAULT)


def aux_layer_problem(ids: Any, num_layers: int) -> str | None:
    """Why these ids are not distinct layers of a `num_layers`-layer target, or None when they are.

    Id k is the hidden state entering layer k, and k = L the last layer's output: vLLM's decoders capture
    at start_layer and at idx + 1 after each layer (llama.py, qwen2.py, cohere2_moe.py; deepseek_v2.py
    checks end_layer), so [0, L] exist. EagleModelMixin._set_aux_hidden_state_layers keeps
    sorted(set(ids)): a duplicate is captured once. A value that is not a list is ignored by vLLM (it
    falls back to the default), which is never what the draft's author meant.
    """
    if not isinstance(ids, (list, tuple)):
        return f"{_shown(ids)} is not a list of layer ids"
    for value in ids:
        # JSON true is 1 to Python and 2.0 equals 2, but neither is a layer id a trainer writes.
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{_shown(value)} is not an integer"
    for value in ids:
        if not 0 <= value <= num_layers:
            return f"layer {value} does not exist"
    seen: set[int] = set()
    for value in ids:
        if value in seen:
            return f"layer {value} is named twice, and vLLM captures it once"
        seen.add(value)
    return None


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, (list, tuple)) else "[" + ", ".join(_shown(v) for v in value) + "]"
    return text if len(text) <= 80 else text[:77] + "..."


def _fix(source: str, runner: str, num_layers: int) -> str:
    if source == DEFAULT:
        # The key the runner reads first; V2 reads no eagle_config.eagle_aux_hidden_state_layer_ids.
        source = TOP if runner == "v2" else NESTED
    return (
        f"set {source} in the draft's config.json to the target layers it was trained on "
        f"(distinct integers in [0, {num_layers}])"
    )


def check_aux_layers(draft: mc.Config, target: mc.Config | None, where: str, runner: str = "v1") -> Check:
    if target is None:
        return skipped(NAME, "the target's config.json is not available locally")
    num_layers = mc.num_layers(target)
    if num_layers <= 0:
        return skipped(NAME, "the target's config.json gives no num_hidden_layers")
    found = aux_layers(draft, num_layers, runner)
    shown = _shown(found.ids)
    figures = {"aux_layer_ids": shown, "source": found.source, "target_num_layers": num_layers, "runner": runner}
    problem = aux_layer_problem(found.ids, num_layers)
    if problem is not None:
        source = found.source if found.unread is None else f"{found.source}; the V2 model runner does not read {NESTED}"
        return Check(
            NAME,
            FAIL,
            f"EAGLE3 auxiliary layers {shown} ({source}) do not fit the {num_layers}-layer target: {problem}",
            _fix(found.source, runner, num_layers),
            where,
            figures,
        )
    if found.unread is not None and found.unread != list(found.ids):
        return Check(
            NAME,
            WARN,
            f"vLLM's V2 model runner does not read {NESTED} {_shown(found.unread)}: the target hands the draft "
            f"layers {shown} ({DEFAULT}), not the ones it was trained on",
            f"copy them to {TOP} at the top level of the draft's config.json",
            where,
            figures,
        )
    return passed(NAME, **figures)
