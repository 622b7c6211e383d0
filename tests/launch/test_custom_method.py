"""A custom speculative method on vLLM 0.34 (`method` naming one a vLLM general plugin registers): accepted where
such a plugin is installed and its module can be found, which is checked without running any of its code; its
name in the plan; refused in one line (exit 2) before any download where none is. Each case is a fresh
launcher with a stand-in vLLM 0.34.0 and, where the case has one, a plugin distribution on its PYTHONPATH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.test_installed_vllm import _run, _site
from nim_specdec.launch.custom_method import findable

SPEC = {"method": "my_speculator", "num_speculative_tokens": 3}


def _plugin(root: Path, module: bool = True, name: str = "my_spec") -> Path:
    """A distribution `my-spec-plugin` with a vllm.general_plugins entry point; its module, where present, leaves
    a file behind when imported."""
    info = root / "my_spec_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-spec-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[vllm.general_plugins]\n{name} = my_spec_plugin.plugin:register\n")
    if module:
        (root / "my_spec_plugin").mkdir()
        marker = root / "imported"
        (root / "my_spec_plugin" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
        (root / "my_spec_plugin" / "plugin.py").write_text("def register():\n    pass\n")
    return root


def _plan(tmp_path: Path, version: str, plugin: Path | None, command: str = "plan", **env: str):
    site = _site(tmp_path / "site", "vllm", version)
    sites = [site, *([plugin] if plugin else [])]
    base = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target", **env}
    return _run(sites, "-m", "nim_specdec", command, "--speculative-config", json.dumps(SPEC), env=base)


def test_accepted_with_its_plugin_installed_and_named_in_the_plan(tmp_path):
    plugin = _plugin(tmp_path / "plugin")
    proc = _plan(tmp_path, "0.34.0", plugin)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["speculative"]["custom_method"] == "my_speculator" == plan["speculative"]["method"]
    assert plan["draft"] is None and plan["model_runner"]["runner"] == "v2"
    assert any("my_spec (my_spec_plugin.plugin)" in w for w in plan["warnings"])
    assert not (plugin / "imported").exists()  # found, never imported


@pytest.mark.parametrize(
    "case, env, named",
    [
        ("no plugin", {}, "no vLLM general plugin that could register it is installed"),
        ("its module is missing", {}, "no vLLM general plugin that could register it is installed"),
        ("VLLM_PLUGINS leaves it out", {"VLLM_PLUGINS": "other"}, "no vLLM general plugin allowed by VLLM_PLUGINS"),
    ],
)
def test_refused_in_one_line_where_no_plugin_could_register_it(case, env, named, tmp_path):
    plugin = None if case == "no plugin" else _plugin(tmp_path / "plugin", module=case != "its module is missing")
    for command in ("plan", "prepare"):
        proc = _plan(tmp_path / command, "0.34.0", plugin, command, **env)
        assert proc.returncode == 2, proc.stderr
        (line,) = [x for x in proc.stderr.splitlines() if "error" in x]
        assert "'my_speculator' is no built-in method of vLLM 0.34.0" in line and named in line
        assert not (tmp_path / command / "cache" / "workspace").exists()


def test_033_has_no_custom_methods(tmp_path):
    proc = _plan(tmp_path, "0.33.0", _plugin(tmp_path / "plugin"))
    assert proc.returncode == 2
    assert "speculative_config.method = 'my_speculator' is not one of:" in proc.stderr


def test_a_typo_of_a_built_in_method_is_named(tmp_path):
    site = _site(tmp_path / "site", "vllm", "0.34.0")
    spec = {"method": "eagel3", "num_speculative_tokens": 3}
    base = {"NIM_CACHE_PATH": str(tmp_path / "cache"), "NIM_MODEL_PATH": "hf://org/target", "VLLM_PLUGINS": ""}
    proc = _run([site], "-m", "nim_specdec", "plan", "--speculative-config", json.dumps(spec), env=base)
    assert proc.returncode == 2 and "did you mean 'eagle3'?" in proc.stderr


def test_findable_runs_nothing(tmp_path, monkeypatch):
    package = tmp_path / "noisy_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise SystemExit('imported')\n")
    (package / "inner.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert findable("noisy_pkg.inner") and not findable("noisy_pkg.absent") and not findable("no_such_top_level")
