"""The launcher's import graph: it never reaches the lab, no stage imports a higher one, there is no cycle, and a
package that names its modules in `__all__` is used through those; the lab's packages import each other in one
direction only.

Read from the source with `ast`, so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
LAUNCHER = SRC / "nim_specdec"
LAB = SRC / "nim_specdec_lab"

# Lowest first: a module may import its own stage and any stage listed before it.
STAGES = (
    "errors",
    "asgi_types",
    "text",
    "files",
    "processes",
    "config",
    "capture",
    "engines",
    "plan",
    "fetchers",
    "preflight",
    "observe",
    "launch",
    "server",
    "cli",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _graph(root: Path) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(path) if m in modules and m != name}
    return graph


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


LAUNCHER_GRAPH = _graph(LAUNCHER)


@pytest.mark.parametrize("module", sorted(LAUNCHER_GRAPH))
def test_launcher_module_never_imports_the_lab(module):
    path = SRC / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = SRC / module.replace(".", "/") / "__init__.py"
    lab = sorted(m for m in _imports(path) if m == "nim_specdec_lab" or m.startswith("nim_specdec_lab."))
    assert lab == [], f"{module} imports the lab: {lab}"


def test_the_contract_sees_every_stage():
    """If a stage folder is added or renamed, the order above must say where it sits."""
    stages = {_stage(m) for m in LAUNCHER_GRAPH} - {"__init__", "__main__"}
    assert stages <= set(STAGES), sorted(stages - set(STAGES))
    assert {"text", "files", "processes", "config", "plan", "fetchers", "launch", "cli"} <= stages


def test_no_stage_imports_a_higher_one():
    upward = []
    for module, targets in LAUNCHER_GRAPH.items():
        stage = _stage(module)
        if stage not in STAGES:
            continue
        for target in targets:
            other = _stage(target)
            if other in STAGES and STAGES.index(other) > STAGES.index(stage):
                upward.append(f"{module} -> {target}")
    assert upward == []


# The planner's sub-packages, lowest first: a plan module imports its own sub-package and those listed before it;
# the plan's front door (the modules directly in plan/: build, plan_front, plan_input, plan_facts, plan_model,
# plan_sections) sits above them all and no sub-package imports it.
PLAN_LAYERS = ("method",)
PLAN = "nim_specdec.plan"
# vLLM's package the same way (engines/vllm/__init__.py's map), lowest first.
VLLM_LAYERS = ("release", "schedule", "argv", "spec", "observe", "check", "boot")
VLLM = "nim_specdec.engines.vllm"
LAYERED = {PLAN: PLAN_LAYERS, VLLM: VLLM_LAYERS}


def _layer(module: str, package: str = PLAN) -> int | None:
    """The rank of a module of a layered package (its sub-package's, or one above them all for the modules directly
    in the package); None outside it and for the package itself, which holds no code."""
    if not module.startswith(package + "."):
        return None
    layers = LAYERED[package]
    parts = module[len(package) + 1 :].split(".")
    return layers.index(parts[0]) if parts[0] in layers else len(layers)


def _plan_layer(module: str) -> int | None:
    return _layer(module, PLAN)


@pytest.mark.parametrize("package", sorted(LAYERED))
def test_the_contract_sees_every_sub_package(package):
    """A sub-package added to a layered package or renamed must be given its place in its layers."""
    on_disk = {p.parent.name for p in (SRC / package.replace(".", "/")).glob("*/__init__.py")}
    assert on_disk == set(LAYERED[package])


@pytest.mark.parametrize("package", sorted(LAYERED))
def test_no_sub_package_imports_a_higher_one(package):
    upward = []
    for module, targets in LAUNCHER_GRAPH.items():
        own = _layer(module, package)
        if own is None:
            continue
        upward += [f"{module} -> {t}" for t in sorted(targets) if (_layer(t, package) or 0) > own]
    assert upward == []


# The fetchers' sub-packages, lowest first; those in one tuple share a rank and never import each other (the scheme
# packages). The modules directly in fetchers/ (the registry, the one-module schemes, the context) sit above them all
# and no sub-package imports them.
FETCHER_LAYERS = (("integrity",), ("transfer",), ("volume",), ("download",), ("hub", "buckets"))
FETCHERS = "nim_specdec.fetchers"


def _fetcher_place(module: str) -> tuple[int, str] | None:
    """The rank and sub-package of a fetchers module (one rank above them all for the top modules); None outside
    fetchers and for the package itself."""
    if not module.startswith(FETCHERS + "."):
        return None
    first = module[len(FETCHERS) + 1 :].split(".")[0]
    for rank, names in enumerate(FETCHER_LAYERS):
        if first in names:
            return rank, first
    return len(FETCHER_LAYERS), ""


def _fetcher_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        own = _fetcher_place(module)
        if own is None:
            continue
        for target in sorted(targets):
            other = _fetcher_place(target)
            if other is None:
                continue
            sideways = other[0] == own[0] < len(FETCHER_LAYERS) and other[1] != own[1]
            if other[0] > own[0] or sideways:
                found.append(f"{module} -> {target}")
    return found


def test_the_contract_sees_every_fetchers_sub_package():
    on_disk = {p.parent.name for p in (LAUNCHER / "fetchers").glob("*/__init__.py")}
    assert on_disk == {name for names in FETCHER_LAYERS for name in names}


def test_fetchers_import_down_and_never_sideways():
    assert _fetcher_violations(LAUNCHER_GRAPH) == []


def _map_entries(package: Path) -> set[str]:
    """The names a package's docstring maps: lines `name.py  what it decides` or `name/  what it holds`."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return {m.group(1) for m in re.finditer(r"^([a-z0-9_]+(?:\.py|/)) {2,}\S", doc, re.M)}


def _package_members(package: Path) -> set[str]:
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    return modules | {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}


@pytest.mark.parametrize(
    "package",
    sorted({LAUNCHER / "fetchers", *(p.parent for p in (LAUNCHER / "fetchers").glob("*/__init__.py"))}),
    ids=lambda p: p.name,
)
def test_each_fetchers_map_names_exactly_its_modules(package):
    assert _map_entries(package) == _package_members(package)


ENGINES = "nim_specdec.engines"
# What every engine shares: the protocol the planner sees, and the registry the shell picks one by name from.
ENGINE_NEUTRAL = ("protocol", "registry")


def _engine_of(module: str) -> str | None:
    """The engine package a module belongs to (`vllm` for nim_specdec.engines.vllm.argv.user_args); None outside
    an engine's package (the protocol, the registry, the rest of the launcher)."""
    if not module.startswith(ENGINES + "."):
        return None
    name = module[len(ENGINES) + 1 :].split(".")[0]
    return None if name in ENGINE_NEUTRAL else name


def _plan_reaches_past_the_protocol(graph: dict[str, set[str]]) -> list[str]:
    allowed = f"{ENGINES}.protocol"
    return sorted(
        f"{m} -> {t}"
        for m, ts in graph.items()
        if m == PLAN or m.startswith(PLAN + ".")
        for t in ts
        if t.startswith(ENGINES + ".") and not (t == allowed or t.startswith(allowed + "."))
    )


def _engines_importing_another(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, ts in graph.items()
        if _engine_of(m) is not None
        for t in ts
        if _engine_of(t) not in (None, _engine_of(m))
    )


def test_the_planner_imports_the_engine_protocol_only():
    """plan/ asks an engine through engines.protocol; an engine's own package (or the registry that names them)
    is the shell's to pick and hand over."""
    assert _plan_reaches_past_the_protocol(LAUNCHER_GRAPH) == []


def test_no_engine_imports_another():
    assert _engines_importing_another(LAUNCHER_GRAPH) == []


def test_the_engine_rules_catch_a_crossing():
    graph = {
        "nim_specdec.plan.build": {"nim_specdec.engines.protocol.engine", "nim_specdec.engines.vllm.engine"},
        "nim_specdec.plan.x": {"nim_specdec.engines.registry"},
        "nim_specdec.engines.sglang.flags": {"nim_specdec.engines.vllm.spec.x", "nim_specdec.engines.protocol"},
        "nim_specdec.engines.vllm.spec.x": {"nim_specdec.engines.vllm.release.y"},
    }
    assert _plan_reaches_past_the_protocol(graph) == [
        "nim_specdec.plan.build -> nim_specdec.engines.vllm.engine",
        "nim_specdec.plan.x -> nim_specdec.engines.registry",
    ]
    assert _engines_importing_another(graph) == ["nim_specdec.engines.sglang.flags -> nim_specdec.engines.vllm.spec.x"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components; any component of two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _without_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    # `from pkg import mod` names the package too; a package's __init__ re-exporting its modules is not a cycle.
    packages = {m for m in graph if (SRC / m.replace(".", "/") / "__init__.py").exists()}
    return {m: {t for t in ts if t not in packages} for m, ts in graph.items() if m not in packages}


@pytest.mark.parametrize("root", [LAUNCHER, LAB], ids=["launcher", "lab"])
def test_no_import_cycle(root):
    assert _cycles(_without_packages(_graph(root))) == []


# Feature folders: each names in `__all__` the modules the rest of the launcher uses; its other modules are its own
# parts (`launch.early_check.download_child` is started by `while_downloading`, never imported elsewhere).
FEATURE_FOLDERS = (
    "nim_specdec.engines.vllm.check",
    "nim_specdec.launch.early_check",
    "nim_specdec.launch.compile_cache",
)


def _faces() -> dict[str, set[str]]:
    faces: dict[str, set[str]] = {}
    for package in FEATURE_FOLDERS:
        init = SRC / package.replace(".", "/") / "__init__.py"
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                faces[package] = set(ast.literal_eval(node.value))
    return faces


def _behind_a_face(graph: dict[str, set[str]], faces: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in graph.items():
        for package, names in faces.items():
            if module.startswith(package + "."):
                continue
            found += [
                f"{module} -> {t}"
                for t in targets
                if t.startswith(package + ".") and t[len(package) + 1 :] not in names
            ]
    return sorted(found)


def test_a_package_is_used_through_the_modules_it_names():
    faces = _faces()
    assert set(faces) == set(FEATURE_FOLDERS)
    for package, names in faces.items():
        assert all((SRC / package.replace(".", "/") / f"{name}.py").is_file() for name in names), package
    assert _behind_a_face(LAUNCHER_GRAPH, faces) == []


def _lab_part(module: str) -> str:
    # A lab module's package (`nim_specdec_lab.tune.runs.rounds` -> `tune`); a top-level module stands for itself.
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        own = _lab_part(module)
        packages.setdefault(own, set()).update(t for t in map(_lab_part, targets) if t not in (own, "__init__"))
    return packages


def test_the_labs_packages_import_each_other_one_way():
    assert _cycles(_package_graph(_graph(LAB))) == []


# tune's sub-packages, lowest first: a tune module imports its own sub-package and those listed before it; the
# modules directly in tune/ (session, session_result, servers) sit above them all and no sub-package imports them.
TUNE_LAYERS = ("runs", "model", "lineup", "deciding", "engines", "reporting", "studies")
TUNE = "nim_specdec_lab.tune"


def _tune_layer(module: str) -> int | None:
    """The rank of a tune module (its sub-package's, or one above them all for the modules directly in tune/); None
    outside tune and for the package itself."""
    if not module.startswith(TUNE + "."):
        return None
    parts = module[len(TUNE) + 1 :].split(".")
    return TUNE_LAYERS.index(parts[0]) if parts[0] in TUNE_LAYERS else len(TUNE_LAYERS)


def test_the_contract_sees_every_tune_sub_package():
    """A sub-package added to tune/ or renamed must be given its place in TUNE_LAYERS."""
    on_disk = {p.parent.name for p in (LAB / "tune").glob("*/__init__.py")}
    assert on_disk == set(TUNE_LAYERS)


def test_no_tune_sub_package_imports_a_higher_one():
    upward = []
    for module, targets in _graph(LAB).items():
        own = _tune_layer(module)
        if own is None:
            continue
        upward += [f"{module} -> {t}" for t in sorted(targets) if (_tune_layer(t) or 0) > own]
    assert upward == []


def test_the_checker_finds_a_cycle_and_an_upward_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _stage("nim_specdec.plan.build") == "plan"
    assert _stage("nim_specdec.engines.vllm.release.vllm_schema") == "engines"
    assert _layer("nim_specdec.engines.vllm.release.vllm_schema", VLLM) < _layer(
        "nim_specdec.engines.vllm.spec.x", VLLM
    )
    assert _plan_layer("nim_specdec.plan.build") == len(PLAN_LAYERS) and _plan_layer("nim_specdec.plan") is None
    assert _behind_a_face(
        {"a.x": {"a.pkg.face", "a.pkg.inner"}, "a.pkg.face": {"a.pkg.inner"}}, {"a.pkg": {"face"}}
    ) == ["a.x -> a.pkg.inner"]
    assert _fetcher_violations(
        {
            "nim_specdec.fetchers.volume.cache": {"nim_specdec.fetchers.download.base"},
            "nim_specdec.fetchers.hub.hf": {"nim_specdec.fetchers.buckets.s3", "nim_specdec.fetchers.volume.cache"},
            "nim_specdec.fetchers.download.materialize": {"nim_specdec.fetchers.registry"},
            "nim_specdec.fetchers.registry": {"nim_specdec.fetchers.ngc", "nim_specdec.fetchers.download.base"},
        }
    ) == [
        "nim_specdec.fetchers.volume.cache -> nim_specdec.fetchers.download.base",
        "nim_specdec.fetchers.hub.hf -> nim_specdec.fetchers.buckets.s3",
        "nim_specdec.fetchers.download.materialize -> nim_specdec.fetchers.registry",
    ]
    two_way = {"lab.tune.a": {"lab.bench.b"}, "lab.bench.b": {"lab.tune.c"}, "lab.tune.c": set()}
    assert _cycles(_package_graph(two_way)) == [["bench", "tune"]]
    assert _tune_layer("nim_specdec_lab.tune.runs.rounds") < _tune_layer("nim_specdec_lab.tune.deciding.decide")
    assert _tune_layer("nim_specdec_lab.tune.session") == len(TUNE_LAYERS) and _tune_layer(TUNE) is None
