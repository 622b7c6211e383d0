"""Pre-flight checks: will this draft fit this target, and this plan fit this GPU?

Speculative decoding fails late and obscurely when the draft does not fit: a hidden-size
assert or `mat1 and mat2 shapes cannot be multiplied` after the target has spent minutes
loading, an EAGLE3 checkpoint served as `eagle` with an acceptance length of 1.0 and no
error, out-of-memory at start once a draft is added. These checks read only `config.json`
files, safetensors headers and one NVML reading, in milliseconds, before vLLM is started.

`NIM_SPECDEC_PREFLIGHT=error|warn|off` sets what a failed check does, for every check.
Unset, the two categories differ on purpose:

- compatibility defaults to `error`: a draft whose hidden size, vocabulary, architecture or
  method does not fit the target never works, so stopping at once with the remedy costs
  nothing and saves a failed (or silently useless) start;
- memory defaults to `warn`: it is an estimate from configs and headers, while vLLM's own
  profiling of the loaded model has the last word, and a plan refused on an estimate that
  was slightly off would stop a deployment that would have run.

Entry point: `run_preflight(preflight_inputs(plan), settings.preflight, gpu)` returns the plan's
`preflight` section (a typed plan.plan_sections.PreflightSection).
"""

from nim_specdec.preflight.gpu import GpuProbe, NvmlProbe, StaticProbe
from nim_specdec.preflight.shell import PreflightInputs, preflight_inputs, run_preflight

__all__ = ["GpuProbe", "NvmlProbe", "PreflightInputs", "StaticProbe", "preflight_inputs", "run_preflight"]
