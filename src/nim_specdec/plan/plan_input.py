"""What the plan is built from of the user's environment: the planner's part of the settings, typed.

The launcher parses its environment once (config.settings) and gives each stage the part it reads; this is
the planner's (launch/stage_inputs.py makes it). Nothing else of the environment reaches plan_front or
build_plan: the sources' files and the installed vLLM arrive as Facts (plan.plan_facts), the vLLM arguments
as tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from nim_specdec.config.capture_config import CaptureConfig
from nim_specdec.config.engine_variables import EngineVariables
from nim_specdec.config.locations import Locations
from nim_specdec.config.speculation_request import SpeculationRequest
from nim_specdec.config.target_request import TargetRequest
from nim_specdec.config.tuned_for import TunedFor
from nim_specdec.config.variable_check import IgnoredVariable


@dataclass(frozen=True)
class PlannerInput:
    """The settings' sections the planner reads, each as the settings hold it."""

    speculation: SpeculationRequest  # NIM_SPECDEC_ENABLE, NIM_SPECDEC_ARGS, NIM_DRAFT_MODEL_PATH
    target: TargetRequest  # NIM_MODEL_PATH, NIM_MODEL_NAME, NIM_PASSTHROUGH_ARGS
    engine: EngineVariables  # the NIM variables that set engine arguments (port, served name, ...)
    # Where the launcher keeps files: the plan links into the workspace, keys its compile cache in the cache.
    locations: Locations
    capture: CaptureConfig | None  # None: capture off (or its file cannot be written)
    tuned_for: TunedFor | None  # the engine a tune recommendation was measured on
    shown_env: Mapping[str, str] = field(default_factory=dict, compare=False)  # as the plan prints it, masked
    ignored: tuple[IgnoredVariable, ...] = ()  # NIM_* variables set but not read: each a warning of the plan
