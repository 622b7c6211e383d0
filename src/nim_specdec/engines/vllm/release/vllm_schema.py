"""What the launcher knows of each supported vLLM release: its command line and its SpeculativeConfig,
read from vllm_schemas/<version>.json (written from that release by scripts/vllm_schema_gen.py; the
installed one is compared with it by the schema-drift test), so that no vLLM import is needed on the fast
path. Everything here is looked up through a VllmKnowledge, chosen by the version the launcher runs with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

WHOLE = "--speculative-config"
# The snapshot used where no vLLM is installed (a plan made on a machine without it, or a test's Facts):
# the release of the CPU build, the one the project's own server tests run against.
DEFAULT_VERSION = "0.32.0"
# Beside this module in the installed package (wheels install unzipped). Path, not importlib.resources: the
# latter imports zipfile and its readers, a noticeable share of `plan`'s start-up.
_SNAPSHOTS = Path(__file__).resolve().parent / "vllm_schemas"


@lru_cache(maxsize=1)
def known_versions() -> tuple[str, ...]:
    """The versions with a snapshot in this package, oldest first."""
    names = [p.name for p in _SNAPSHOTS.iterdir()]
    found = [n.removesuffix(".json") for n in names if n.endswith(".json")]
    return tuple(sorted(found, key=release_tuple))


def release_tuple(version: str) -> tuple[int, ...]:
    """ "0.33.0+cu129" -> (0, 33, 0); a part that is not a number counts as 0."""
    parts = version.split("+", 1)[0].split(".")
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


@lru_cache(maxsize=None)
def _snapshot(version: str) -> Mapping[str, Any]:
    return json.loads((_SNAPSHOTS / f"{version}.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class VllmKnowledge:
    version: str  # the vLLM version the launcher runs with; "" where none is installed
    snapshot: str  # the snapshot read for it
    exact: bool  # the snapshot is of that very release: the launcher's own validation applies

    @property
    def data(self) -> Mapping[str, Any]:
        return _snapshot(self.snapshot)

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.data["methods"])

    @property
    def mtp_methods(self) -> tuple[str, ...]:
        return tuple(self.data["mtp_methods"])

    def mtp_drafter(self, model_type: Any, architecture: Any, text_model_type: Any = None) -> str | None:
        """The MTP model type this release turns a target into (by its model_type, else its first architecture, else
        the model_type of the text_config a wrapper architecture is promoted to, as SpeculativeConfig.hf_config_override
        matches them): the drafter that serves the target's MTP layers. None where the release has none for it,
        whatever the target's config.json declares."""
        targets = self.data["mtp_targets"]
        names = [n if isinstance(n, str) else "" for n in (model_type, architecture, text_model_type)]
        promoted = targets["text_config_architectures"].get(names[1]) or {}
        return targets["model_types"].get(names[0]) or targets["architectures"].get(names[1]) or promoted.get(names[2])

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.data["fields"])

    def enum(self, key: str) -> list[str]:
        return self.data["enums"][key]

    def release(self) -> str:
        """How a message names the release: "vLLM 0.34.0", or "vLLM 0.35.0 (read as 0.34.0)" without a snapshot."""
        return f"vLLM {self.snapshot}" if self.exact else f"vLLM {self.version} (read as {self.snapshot})"

    def at_least(self, version: str) -> bool:
        return release_tuple(self.snapshot) >= release_tuple(version)

    def unknown_warning(self) -> str | None:
        """The one warning line for a release without a snapshot, else None."""
        if self.exact:
            return None
        return (
            f"vLLM {self.version} is not one this launcher knows (known: {', '.join(known_versions())}): the "
            "speculative config and arguments are left to vLLM's own check (prepare, serve, plan --check-vllm); "
            f"arguments are read with the {self.snapshot} table"
        )


def knowledge_for(version: str | None) -> VllmKnowledge:
    """The knowledge for the vLLM version the launcher will run with (a local suffix such as +cpu ignored)."""
    base = (version or "").split("+", 1)[0].strip()
    known = known_versions()
    if not base:
        return VllmKnowledge("", DEFAULT_VERSION, True)
    if base in known:
        return VllmKnowledge(base, base, True)
    return VllmKnowledge(base, known[-1], False)


DEFAULT = knowledge_for("")


def normalise_flag(flag: str) -> str:
    """vLLM's parser turns underscores into dashes in a long option's name, up to the first dot."""
    if not flag.startswith("--"):
        return flag
    head, dot, tail = flag[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail


def resolve_option(flag: str, known: VllmKnowledge = DEFAULT) -> str | None:
    """The vLLM option a flag (without its value) means: exact, or a unique prefix of a long option
    (argparse accepts abbreviations); None when vLLM has no such option or the prefix is ambiguous."""
    flag = normalise_flag(flag)
    options = known.data["options"]
    if flag in options:
        return flag
    if not flag.startswith("--") or len(flag) < 3:
        return None
    matches = [o for o in options if o.startswith(flag) and o.startswith("--")]
    return matches[0] if len(matches) == 1 else None


def option_dest(flag: str, known: VllmKnowledge = DEFAULT) -> str | None:
    """The argument an option sets (-tp -> tensor_parallel_size), None when vLLM has no such option."""
    option = resolve_option(flag, known)
    return known.data["options"][option] if option else None


def is_negative(flag: str, known: VllmKnowledge = DEFAULT) -> bool:
    """Whether the bare flag sets its boolean to False: --no-X, and 0.33's --disable-X of --enable-X."""
    option = resolve_option(flag, known)
    if option is None:
        return flag.startswith("--no-")
    return option in known.data["negative_options"]


def speculative_role(flag: str, known: VllmKnowledge = DEFAULT) -> tuple[str, str] | None:
    """("whole", option) for --speculative-config and its aliases, ("field", key) for options such as
    --spec-method that fill one speculative_config key, None for any other option."""
    option = resolve_option(flag, known)
    if option is None:
        return None
    if option in known.data["speculative_options"]:
        return "whole", option
    field = known.data["speculative_single_options"].get(option)
    return ("field", field) if field else None
