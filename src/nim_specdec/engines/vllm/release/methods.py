"""vLLM's speculative methods, one row each: every trait of a method the launcher's rules read. A method vLLM gains
is a row here (and its release's schema snapshot, which says which releases have it: VllmKnowledge.methods).

Sources, per trait (vLLM 0.32-0.34): vllm/config/speculative.py (SpeculativeConfig: which methods need `model`,
how a method is inferred from a draft, EagleModelTypes/NgramGPUTypes for async scheduling, parallel drafting,
draft_lm_head_quantization), vllm/config/vllm.py (async scheduling), vllm/v1/worker/gpu_model_runner.py and the
V2 runner's `_get_v2_model_runner_unsupported_features` (runners), the V1 runner's schedule support (0.33).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Method:
    name: str
    # What `model` is: "draft" (a checkpoint the launcher materializes, NIM_DRAFT_MODEL_PATH fills a missing one),
    # "optional" (a checkpoint vLLM may also do without), "none" (the proposer reads no checkpoint: the target's own
    # heads, n-grams, a suffix tree), "class" (the import path of a proposer class).
    model: str
    meaning: str  # one line, for the docs
    draft_config: bool = False  # the draft has a config.json of its own (its length and RoPE: pre-flight)
    keeps_async: bool = False  # 0.32/0.33 keep async scheduling with it (EagleModelTypes, NgramGPUTypes, ...)
    v2_refused_in: tuple[tuple[int, int], ...] = ()  # releases whose V2 model runner refuses it
    v1_schedule: bool = False  # 0.33's V1 runner keeps a per-batch-size K schedule for it
    parallel: bool = False  # drafts all K tokens in one pass: parallel_drafting is its own
    prompt_lookup: bool = False  # reads prompt_lookup_min/max (vLLM zeroes them for other methods)
    lm_head_from: str | None = None  # the release from which draft_lm_head_quantization applies to it
    lighter: str | None = None  # what needs less memory, named when it does not fit
    inferred_from_name: tuple[str, ...] = ()  # a draft reference containing one of these means this method
    inferred_from_arch: tuple[str, ...] = ()  # as does a draft whose architectures name one of these
    inferred_from_model_type: bool = False  # as does a draft whose model_type is the method's name
    preflight: str | None = None  # the family of pre-flight compatibility checks it gets (preflight/compat.py)

    @property
    def needs_model(self) -> bool:
        """The launcher fills speculative_config.model from NIM_DRAFT_MODEL_PATH when the config has none."""
        return self.model in ("draft", "optional")

    @property
    def runs_without_model(self) -> bool:
        """vLLM builds the proposer with no `model` in the config."""
        return self.model in ("none", "optional")


_LIGHTER = "mtp or ngram"
# A draft checkpoint with a config.json of its own, kept with async scheduling, lighter as MTP or n-gram.
_EAGLE = Method(
    "eagle",
    "draft",
    "an EAGLE-1 draft head",
    draft_config=True,
    keeps_async=True,
    v1_schedule=True,
    lm_head_from="0.32.0",
    lighter=_LIGHTER,
    inferred_from_name=("eagle-",),
    preflight="eagle",
)
_DFLASH = Method(
    "dflash",
    "draft",
    "a DFlash block-diffusion draft",
    draft_config=True,
    keeps_async=True,
    v1_schedule=True,
    parallel=True,
    lighter=_LIGHTER,
    inferred_from_name=("dflash",),
    inferred_from_arch=("MuseGlimmerAssistantModel",),
)
_NO_DRAFT = Method("ngram", "none", "prompt lookup: n-grams of the context")

# Row order is the order messages list methods in (and the order names are matched when a method is inferred).
METHODS: tuple[Method, ...] = (
    replace(_NO_DRAFT, v1_schedule=True, prompt_lookup=True, preflight="model_free"),
    _EAGLE,
    replace(_EAGLE, name="eagle3", meaning="an EAGLE-3 draft head", inferred_from_name=("eagle3",)),
    Method(
        "mtp",
        "none",
        "the target's own multi-token-prediction heads",
        keeps_async=True,
        v1_schedule=True,
        lm_head_from="0.32.0",
        lighter="ngram",
        preflight="mtp",
    ),
    replace(
        _EAGLE,
        name="draft_model",
        meaning="a smaller model of the target's family",
        lm_head_from=None,
        inferred_from_name=(),
        preflight="draft_model",
    ),
    _DFLASH,
    replace(
        _DFLASH,
        name="dspark",
        model="optional",
        meaning="a DSpark parallel draft",
        v1_schedule=False,
        lm_head_from="0.34.0",
        inferred_from_name=("dspark",),
        inferred_from_arch=("Qwen3DSparkModel", "Qwen3OmniDSparkModel", "Gemma4DSparkModel"),
    ),
    replace(_NO_DRAFT, name="ngram_gpu", meaning="prompt lookup on the GPU", keeps_async=True, prompt_lookup=True),
    replace(
        _NO_DRAFT,
        name="suffix",
        meaning="suffix decoding over a tree of past outputs",
        v2_refused_in=((0, 32), (0, 33)),
        preflight="model_free",
    ),
    replace(
        _NO_DRAFT,
        name="extract_hidden_states",
        meaning="no drafting: the target's hidden states saved",
        keeps_async=True,
    ),
    Method("medusa", "draft", "Medusa heads (gone in 0.33)", v2_refused_in=((0, 32),), inferred_from_model_type=True),
    Method(
        "mlp_speculator",
        "draft",
        "an MLP speculator (gone in 0.33)",
        v2_refused_in=((0, 32),),
        inferred_from_model_type=True,
    ),
    Method(
        "custom_class",
        "class",
        "a proposer class by import path (gone in 0.34: a plugin's method instead)",
        v2_refused_in=((0, 32), (0, 33)),
    ),
)

BY_NAME = {row.name: row for row in METHODS}


def rows() -> tuple[Method, ...]:
    """The table, read where it is used (a test adds a row by replacing METHODS and BY_NAME)."""
    return METHODS


def method_row(name: object) -> Method | None:
    return BY_NAME.get(name) if isinstance(name, str) else None


def names_where(trait: str) -> tuple[str, ...]:
    """The methods whose row has `trait` true, in row order."""
    return tuple(row.name for row in METHODS if getattr(row, trait))
