"""The launcher's import graph: it never reaches the lab, no stage imports a higher one, there is no cycle, and a
package that names its modules in `__all__` is used through those; the lab's packages import each other in one
direction only.

Read from the source with `ast`, so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
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
    "engines",
    "capture",
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
PLAN_LAYERS = ("engine", "schedule", "argv", "method")
PLAN = "nim_specdec.plan"


def _plan_layer(module: str) -> int | None:
    """The rank of a plan module (its sub-package's, or one above them all for the front door); None outside plan
    and for the package itself, which holds no code."""
    if not module.startswith(PLAN + "."):
        return None
    parts = module[len(PLAN) + 1 :].split(".")
    return PLAN_LAYERS.index(parts[0]) if parts[0] in PLAN_LAYERS else len(PLAN_LAYERS)


def test_the_contract_sees_every_plan_sub_package():
    """A sub-package added to plan/ or renamed must be given its place in PLAN_LAYERS."""
    on_disk = {p.parent.name for p in (LAUNCHER / "plan").glob("*/__init__.py")}
    assert on_disk == set(PLAN_LAYERS)


def test_no_plan_sub_package_imports_a_higher_one():
    upward = []
    for module, targets in LAUNCHER_GRAPH.items():
        own = _plan_layer(module)
        if own is None:
            continue
        upward += [f"{module} -> {t}" for t in sorted(targets) if (_plan_layer(t) or 0) > own]
    assert upward == []


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
# parts (`launch.vllm_check.download_child` is started by `while_downloading`, never imported elsewhere).
FEATURE_FOLDERS = ("nim_specdec.launch.vllm_check", "nim_specdec.launch.compile_cache")


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
    # A lab module's package (`nim_specdec_lab.tune.runner` -> `tune`); a top-level module stands for itself.
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


def test_the_checker_finds_a_cycle_and_an_upward_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _stage("nim_specdec.plan.build") == "plan"
    assert _plan_layer("nim_specdec.plan.engine.vllm_schema") < _plan_layer("nim_specdec.plan.method.draft")
    assert _plan_layer("nim_specdec.plan.build") == len(PLAN_LAYERS) and _plan_layer("nim_specdec.plan") is None
    assert _behind_a_face(
        {"a.x": {"a.pkg.face", "a.pkg.inner"}, "a.pkg.face": {"a.pkg.inner"}}, {"a.pkg": {"face"}}
    ) == ["a.x -> a.pkg.inner"]
    two_way = {"lab.tune.a": {"lab.bench.b"}, "lab.bench.b": {"lab.tune.c"}, "lab.tune.c": set()}
    assert _cycles(_package_graph(two_way)) == [["bench", "tune"]]
