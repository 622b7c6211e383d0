"""The edges of tune's engine records: a server's log, its plan and the device it ran on, read into
tune.engines.engine's values; the serving engine set up from the command line and the user's environment."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec.config.tuned_for import ENV as TUNED_FOR_ENV
from nim_specdec.config.tuned_for import PLATFORMS
from nim_specdec.engines.vllm.release.runner_choice import runner_inputs
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for, public
from nim_specdec.plan.plan_model import Plan
from nim_specdec_lab.tune.engines.device import read_device
from nim_specdec_lab.tune.engines.engine import ServingEngine, engine_record, planned_engine, serving_engine, tuned_for
from nim_specdec_lab.tune.engines.engine_log import read_engine_log
from nim_specdec_lab.tune.engines.serving import engine_differences, measured_server

SERVING_PLATFORMS = ("cpu", "cuda")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([.+-][0-9A-Za-z.+-]*)?$")


def measured_engine(log_text: str, env: Mapping[str, str], args: Sequence[str]) -> dict[str, Any]:
    """A started server's engine record: its log, the launcher's plan for its environment, the device."""
    settings, plan = plan_for(env, list(args))
    shown = public(plan, settings.host.secrets)
    return engine_record(
        read_engine_log(log_text), planned_engine(shown), read_device(settings.host.cuda_visible_devices)
    )


def serving_vllm_version(text: str | None) -> str | None:
    """--serving-vllm-version, checked: a version such as 0.32.0 or 0.33.1+cu129."""
    if text is None:
        return None
    if not _VERSION.match(text.strip()):
        raise ConfigError(
            "--serving-vllm-version",
            f"{text[:40]!r} is not a vLLM version",
            "give a version such as 0.32.0, or leave it out for the installed vLLM",
        )
    return text.strip()


@dataclass(frozen=True)
class ServingTarget:
    """Where the recommendation will serve: vLLM version, platform, VLLM_USE_V2_MODEL_RUNNER, engine arguments."""

    vllm_version: str
    platform: str
    use_v2: bool | None
    view: Mapping[str, Any]

    def engine_for(self, config: Mapping[str, Any] | None) -> ServingEngine:
        method = None if config is None else str(config["method"])
        return serving_engine(self.vllm_version, self.platform, runner_inputs(self.view, config, method), self.use_v2)


def serving_target(plan: Plan, use_v2: bool | None, platform: str | None, version: str | None) -> ServingTarget:
    """The serving engine: the given platform and version, else this machine's (the plan's model_runner),
    with the launcher's reading of VLLM_USE_V2_MODEL_RUNNER (`use_v2`, None when unset)."""
    assert platform is None or platform in PLATFORMS
    runner = plan.model_runner
    assert runner is not None  # build_plan always sets it
    return ServingTarget(
        version or runner.vllm_version,
        platform or runner.platform,
        use_v2,
        dict(plan.engine_args),
    )


def engine_summary(
    servers: Sequence[Mapping[str, Any]], serving: ServingEngine, method: str | None, fallback: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """tune.json's `engine` (the serving engine, what differs from the measured server, the fallback) and the
    NIM_TUNED_FOR variable for the recommended environment (none where no server record was made)."""
    measured = measured_server(servers, method)
    differences = engine_differences(measured, serving) if measured is not None else []
    summary = {
        "serving": serving.to_json(),
        "measured_on": None if measured is None else tuned_for(measured),
        "differences": differences,
        "schedule_fallback": fallback,
    }
    marker = {} if measured is None else {TUNED_FOR_ENV: json.dumps(tuned_for(measured), separators=(", ", ": "))}
    return summary, marker
