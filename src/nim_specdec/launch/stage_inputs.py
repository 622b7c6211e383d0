"""What each stage is given of the settings: its own part, typed, made once at the command's edge.

The environment is parsed once (config.settings) into one Settings value; no stage takes the whole of it. This is
the one place that says which stage reads which variable: the fetchers get a FetchContext (the cache, the
download policy, the environment the backends read their credentials from), the planner a PlannerInput (the
settings' sections it reads, as they are), the machine's facts a FactsQuery (with the environment the engine
reads its own variables from), and a step or process that logs as the launcher does a LogFormat. The pre-flight
and vLLM's check are given their few values (the modes, the visible GPUs, the secrets) by the command itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from nim_specdec.config.settings import LogFormat, Settings
from nim_specdec.fetchers.download.base import FetchContext, say_nothing
from nim_specdec.launch.facts import FactsQuery
from nim_specdec.plan.plan_input import PlannerInput


def fetch_context(
    settings: Settings, log: Callable[[str], None] = say_nothing, warn: Callable[[str], None] | None = None
) -> FetchContext:
    """NIM_CACHE_PATH, NIM_DISABLE_MODEL_DOWNLOAD for cache-only (hf:// also honours HF_HUB_OFFLINE), the
    download settings, and the environment the backends read their credentials and endpoints from."""
    return FetchContext(
        env=settings.environ,
        cache_dir=Path(settings.locations.cache_path),
        offline=settings.disable_download,
        log=log,
        download=settings.download,
        hf_hub_offline=settings.host.hf_hub_offline,
        secrets=settings.host.secrets,
        trust_shared=settings.cache_trust_shared,
        warn=warn,
    )


def planner_input(settings: Settings) -> PlannerInput:
    return PlannerInput(
        settings.speculation,
        settings.target,
        settings.engine_variables,
        settings.locations,
        settings.capture,
        settings.tuned_for,
        shown_env=settings.host.shown_env,
        ignored=settings.ignored,
    )


def facts_query(settings: Settings) -> FactsQuery:
    return FactsQuery(
        settings.builtin_config_dir,
        settings.plan_vllm_version,
        settings.host.cuda_visible_devices,
        settings.engine,
        settings.host.sglang_python,
        settings.environ,
    )


def log_format(settings: Settings) -> LogFormat:
    return LogFormat(settings.log_level, settings.jsonl_logging, settings.host.secrets)
