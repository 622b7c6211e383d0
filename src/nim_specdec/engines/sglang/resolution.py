"""SGLang's own argument resolution as the check of the commands the launcher writes: run where SGLang is installed
(resolver_child.py in SGLang's interpreter, bounded in time), its answer read as typed values, and every value it
would change without a word listed as a warning naming the option, the value asked for and the value served
(measured on 0.5.23: EAGLE3 with 9 draft tokens serves 4; --speculative-adaptive with top-k 4 is turned off;
NEXTN on a Llama becomes EAGLE with steps 5, top-k 4, 8 draft tokens). run_resolver is the shell; the rest is pure.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from nim_specdec.engines.sglang.methods import same_algorithm
from nim_specdec.engines.sglang.native_args import read_native_args
from nim_specdec.engines.sglang.options import spelling_of
from nim_specdec.errors import ConfigError, printable

CHILD = Path(__file__).resolve().with_name("resolver_child.py")
CHECK_DEVICE = "cpu"  # the check runs on any machine: SGLang resolves the CPU platform without a GPU
WHERE = "SGLang's resolver"
# Values SGLang fills in when the command leaves them unset, worth a line: K's three numbers, the draft it found,
# the batch it caps (48 for speculative decoding), adaptive K.
FILLED_WHEN_UNSET = (
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_draft_model_path",
    "speculative_adaptive",
    "max_running_requests",
)


# SGLang's refusals that say the check's CPU platform lacks something the argv needs, not that the argv is wrong:
# the target's own kernels or checkpoint format (DeepSeek-V3.2's and GLM-5's sparse attention want CUDA, Mamba
# hybrids' cache snapshots, gpt-oss's mxfp4 weights) or the algorithm (DFLASH, DSPARK). Fragments of the message.
PLATFORM_REFUSALS = (
    "Torch not compiled with CUDA enabled",
    "requires platform support for Mamba cache state snapshots",
    "Unknown quantization method: mxfp4",
    "speculative decoding only supports CUDA, NPU or XPU device",
    "speculative decoding is not supported by",
)


@dataclass(frozen=True)
class Resolution:
    ok: bool
    served: Mapping[str, object] = field(default_factory=dict)  # field -> the value SGLang would serve
    changed_by: Mapping[str, str] = field(default_factory=dict)  # field -> SGLang's handler that set it
    refusal: str | None = None  # SGLang's own error, one line, when not ok


@dataclass(frozen=True)
class SilentChange:
    field: str
    asked: str | None  # as the command wrote it; None: not given
    served: object
    by: str  # SGLang's handler that changed it

    def line(self) -> str:
        asked = "unset" if self.asked is None else self.asked
        served = (
            {True: "on", False: "off"}.get(self.served, self.served) if isinstance(self.served, bool) else self.served
        )
        return f"{spelling_of(self.field)}: asked {asked}, SGLang 0.5 serves {served} (its {self.by})"


def platform_refusal(resolution: Resolution) -> bool:
    """Whether SGLang refused only for the check's CPU platform (PLATFORM_REFUSALS), not for the arguments."""
    return not resolution.ok and any(fragment in (resolution.refusal or "") for fragment in PLATFORM_REFUSALS)


def check_argv(server_args: Sequence[str], device: str | None = CHECK_DEVICE) -> tuple[str, ...]:
    """The server arguments with the device the check resolves for (any --device given is replaced); device None:
    the arguments as they are (where SGLang is installed with its own platform, the one it will serve on)."""
    if device is None:
        return tuple(server_args)
    out: list[str] = []
    skip = False
    for word in server_args:
        if skip:
            skip = False
            continue
        if word == "--device":
            skip = True
            continue
        if word.startswith("--device="):
            continue
        out.append(word)
    return (*out, "--device", device)


def _resolution(entry: object) -> Resolution:
    if not isinstance(entry, dict) or not isinstance(entry.get("ok"), bool):
        raise ValueError("an entry is not an object with a boolean `ok`")
    if not entry["ok"]:
        return Resolution(False, refusal=printable(str(entry.get("refusal") or "refused"))[:600])
    served, changed_by = entry.get("served"), entry.get("changed_by")
    if not isinstance(served, dict) or not isinstance(changed_by, dict):
        raise ValueError("an accepted entry lacks `served` or `changed_by`")
    return Resolution(True, dict(served), {str(k): str(v) for k, v in changed_by.items()})


def parse_resolutions(text: str, count: int) -> tuple[Resolution, ...]:
    """The child's answer, one Resolution per argv; anything else refused in one line."""
    try:
        data = json.loads(text)
        if not isinstance(data, list) or len(data) != count:
            raise ValueError(f"expected a list of {count} entries")
        return tuple(_resolution(entry) for entry in data)
    except ValueError as error:
        raise ConfigError(
            WHERE, f"unreadable answer ({printable(str(error))[:200]})", "run it again; report it if it persists"
        ) from None


def run_resolver(
    python: str, argvs: Sequence[Sequence[str]], timeout: float = 300.0, device: str | None = CHECK_DEVICE
) -> tuple[Resolution, ...]:
    """SGLang's resolution of each argv (server arguments, check_argv applied), in one child: its imports cost
    seconds, each argv a fraction of one."""
    payload = json.dumps([list(check_argv(argv, device)) for argv in argvs])
    try:
        done = subprocess.run(
            [python, str(CHILD)], input=payload, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise ConfigError(
            WHERE, f"no interpreter at {python!r}", "set SGLANG_PYTHON to SGLang's python (make sglang-venv)"
        ) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(
            WHERE, f"no answer within {timeout:g} s", "run it on a less loaded machine, or raise the limit"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ConfigError(
            WHERE,
            f"{python} exited {done.returncode}: {printable(last)[:300]}",
            "check that SGLang 0.5 is installed there (make sglang-venv)",
        )
    return parse_resolutions(done.stdout, len(argvs))


def _same(field: str, asked: str | None, served: object) -> bool:
    if asked is None:  # a flag given alone
        return served is True
    if field == "speculative_algorithm":
        return same_algorithm(asked, str(served))
    return asked == str(served)


def silent_changes(asked: Mapping[str, str | None], resolution: Resolution) -> tuple[SilentChange, ...]:
    """Every value SGLang would serve otherwise than the command asked (`asked`: NativeArgs.speculative_fields() of the
    command, plus max_running_requests where given), and those it fills in unasked (FILLED_WHEN_UNSET)."""
    changes: list[SilentChange] = []
    for field_name, value in asked.items():
        if field_name in resolution.served and not _same(field_name, value, resolution.served[field_name]):
            by = resolution.changed_by.get(field_name, "resolution")
            shown = "on" if value is None else value  # a flag given alone
            changes.append(SilentChange(field_name, shown, resolution.served[field_name], by))
    for field_name in FILLED_WHEN_UNSET:
        if field_name not in asked and field_name in resolution.changed_by:
            served = resolution.served.get(field_name)
            if served not in (None, False):
                changes.append(SilentChange(field_name, None, served, resolution.changed_by[field_name]))
    return tuple(changes)


def with_local_files(server_args: Sequence[str], local: Mapping[str, str]) -> tuple[str, ...]:
    """The server arguments with each workspace path the command names (the target, the draft) replaced by the
    directory its files are in now (`local`: path -> directory), as the resolution reads their config.json."""
    return tuple(local.get(word, word) for word in server_args)


def resolution_lines(server_args: Sequence[str], resolution: Resolution) -> tuple[str, ...]:
    """The plan's warnings from SGLang's resolution of the command: each value it would change silently, or that it
    could not judge on the check's CPU platform; a refusal for the arguments themselves refused in one line."""
    if platform_refusal(resolution):
        return (f"{WHERE} could not judge the command on the CPU ({resolution.refusal}): it is checked where served",)
    if not resolution.ok:
        raise ConfigError(
            WHERE, f"refuses the command: {resolution.refusal}", "fix the argument it names, or set NIM_ENGINE=vllm"
        )
    native = read_native_args(server_args, "the command")
    asked = native.speculative_fields()
    given = {option.name: option for option in native.options}
    if "max_running_requests" in given:
        tokens = given["max_running_requests"].tokens
        asked["max_running_requests"] = tokens[-1].partition("=")[2] if len(tokens) == 1 else tokens[-1]
    return tuple(change.line() for change in silent_changes(asked, resolution))
