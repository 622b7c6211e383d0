"""The one table of NIM_* variables: parsing follows it, the docs are generated from it, the code names variables
through it, and a NIM_* variable it does not hold is never silently ignored."""

from __future__ import annotations

import ast
import copy
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from core_fixtures import facts
from nim_specdec.config import variables as var
from nim_specdec.config.settings import DEFAULT_PORT, parse_settings
from nim_specdec.config.variable_check import NOT_IMPLEMENTED, UNIMPLEMENTED_NIM_VARIABLES, UNKNOWN, ignored_variables
from nim_specdec.errors import ConfigError
from nim_specdec.launch.resolve import plan_for
from nim_specdec.plan.plan_model import plan_json, plan_schema
from nim_specdec.text.logs import LOG_LEVELS
from nim_specdec.text.redact import PASSTHROUGH_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"  # the launcher and the lab
# Where NIM_* names are spelt as strings on purpose: the table itself, NIM's names it does not implement, and
# text/redact.py (text sits below config; test_constants_agree keeps its one name equal to the table's).
SPELLERS = {
    "nim_specdec/config/variables.py",
    "nim_specdec/config/download_variables.py",
    "nim_specdec/config/variable_check.py",
    "nim_specdec/text/redact.py",
}
NAME = re.compile(r"\bNIM_[A-Z0-9_]*[A-Z0-9]\b")


def _doc_script():
    spec = importlib.util.spec_from_file_location("variables_doc", ROOT / "scripts" / "variables_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_the_table():
    script = _doc_script()
    page = script.DOC.read_text(encoding="utf-8")
    assert script.rewritten(page) == page, "run: python scripts/variables_doc.py"
    for v in var.documented():
        assert f"| `{v.name}` |" in page


def test_constants_agree():
    assert var.TABLE[var.LOG_LEVEL].choices == LOG_LEVELS
    assert PASSTHROUGH_VARIABLE == var.PASSTHROUGH_ARGS
    assert DEFAULT_PORT == var.TABLE[var.SERVER_PORT].default
    for v in var.TABLE.values():
        assert v.kind in ("bool", "int", "number", "choice", "text", "path", "source", "json", "args"), v.name
        assert (v.lo is not None and v.hi is not None) == (v.kind in ("int", "number")), v.name
        assert bool(v.choices) == (v.kind == "choice"), v.name
        assert v.nim in ("", "1.x", "2.x") and v.meaning.strip() and "\n" not in v.meaning, v.name
    assert not set(var.TABLE) & set(UNIMPLEMENTED_NIM_VARIABLES)


def _string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            found.append((node.lineno, str(node.values[0].value)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append((node.lineno, node.value))
    return found


def test_no_module_spells_a_variable_of_its_own():
    """A variable is named through config.variables, in the launcher and the lab alike; a string that starts with
    a NIM_ name (after blanks) is a second spelling."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where in SPELLERS:
            continue
        found += [f"{where}:{line}: {text[:60]}" for line, text in _string_literals(path) if NAME.match(text.lstrip())]
    assert found == []


def test_every_name_the_launcher_mentions_exists():
    """Comments and messages too, the lab's as well: a name that is in neither table is a typo or a variable nobody
    reads."""
    known = set(var.TABLE) | set(UNIMPLEMENTED_NIM_VARIABLES) | {"NIM_SPECDEC_ENABLED"}  # an example typo
    prefixes = {name[: i + 1] for name in known for i, c in enumerate(name) if c == "_"}
    unknown = set()
    for path in SRC.rglob("*.py"):
        for name in NAME.findall(path.read_text(encoding="utf-8")):
            if name not in known and name + "_" not in prefixes:
                unknown.add(f"{path.relative_to(SRC)}: {name}")
    assert sorted(unknown) == []


IGNORED = [
    ("misspelt", {"NIM_SPECDEC_ENABLED": "1"}, [("NIM_SPECDEC_ENABLED", UNKNOWN, "NIM_SPECDEC_ENABLE")]),
    ("one letter short", {"NIM_SPECDEC_ARG": "{}"}, [("NIM_SPECDEC_ARG", UNKNOWN, "NIM_SPECDEC_ARGS")]),
    ("lower case", {"nim_specdec_enable": "1"}, [("nim_specdec_enable", UNKNOWN, "NIM_SPECDEC_ENABLE")]),
    ("mixed case", {"Nim_Cache_Path": "/c"}, [("Nim_Cache_Path", UNKNOWN, "NIM_CACHE_PATH")]),
    ("nothing close", {"NIM_ZZZ": "1"}, [("NIM_ZZZ", UNKNOWN, "")]),
    ("NIM's profile", {"NIM_MODEL_PROFILE": "x"}, [("NIM_MODEL_PROFILE", NOT_IMPLEMENTED, "")]),
    ("NIM's PEFT", {"NIM_PEFT_SOURCE": "/l"}, [("NIM_PEFT_SOURCE", NOT_IMPLEMENTED, "")]),
    ("NIM's remote code", {"NIM_TRUST_CUSTOM_CODE": "1"}, [("NIM_TRUST_CUSTOM_CODE", NOT_IMPLEMENTED, "")]),
    ("known names", {"NIM_SPECDEC_ENABLE": "1", "NIM_TENSOR_PARALLEL_SIZE": "2", "NIM_VLLM_CHECK_CONTEXT": "{}"}, []),
    ("other tools", {"VLLM_USE_V2_MODEL_RUNNER": "1", "HF_TOKEN": "x", "CUDA_VISIBLE_DEVICES": "0", "NIMBLE": "1"}, []),
    ("the image's build argument", {"NIM_UID": "1000"}, [("NIM_UID", NOT_IMPLEMENTED, "")]),
    ("NIM's OpenTelemetry switch", {"NIM_ENABLE_OTEL": "1"}, [("NIM_ENABLE_OTEL", NOT_IMPLEMENTED, "")]),
    ("NIM's tokenizer mode", {"NIM_TOKENIZER_MODE": "mistral"}, [("NIM_TOKENIZER_MODE", NOT_IMPLEMENTED, "")]),
    (
        "sorted, each once",
        {"NIM_WORKSPAC": "/w", "NIM_CORS_ALLOW_ORIGINS": "*"},
        [("NIM_CORS_ALLOW_ORIGINS", NOT_IMPLEMENTED, ""), ("NIM_WORKSPAC", UNKNOWN, "NIM_WORKSPACE")],
    ),
]


@pytest.mark.parametrize("case, env, expected", IGNORED, ids=[c[0] for c in IGNORED])
def test_ignored_variables(case, env, expected):
    found = ignored_variables(env)
    assert [(i.name, i.reason, i.hint if i.reason == UNKNOWN else "") for i in found] == expected
    for item in found:
        line = item.warning()
        assert item.name in line and "\n" not in line
        if item.reason == NOT_IMPLEMENTED:
            assert "not implemented" in line and UNIMPLEMENTED_NIM_VARIABLES[item.name] in line
        elif item.hint:
            assert line.endswith(f"did you mean {item.hint}?")


def test_strict_turns_every_warning_into_one_error():
    env = {"NIM_STRICT_VARIABLES": "1", "NIM_SPECDEC_ENABLED": "1", "NIM_MODEL_PROFILE": "p"}
    with pytest.raises(ConfigError) as err:
        parse_settings(env)
    line = err.value.one_line()
    assert err.value.where == "NIM_STRICT_VARIABLES" and "NIM_SPECDEC_ENABLED" in line and "NIM_MODEL_PROFILE" in line
    assert parse_settings({"NIM_STRICT_VARIABLES": "1", "NIM_SPECDEC_ENABLE": "1"}).speculation.enable is True
    assert [i.name for i in parse_settings({"NIM_STRICT_VARIABLES": "0", "NIM_X": "1"}).ignored] == ["NIM_X"]


ENGINE = [
    ({"NIM_TENSOR_PARALLEL_SIZE": "4"}, ("NIM_TENSOR_PARALLEL_SIZE", "tensor_parallel_size", 4)),
    ({"NIM_PIPELINE_PARALLEL_SIZE": " 2 "}, ("NIM_PIPELINE_PARALLEL_SIZE", "pipeline_parallel_size", 2)),
    ({"NIM_DISABLE_CUDA_GRAPH": "true"}, ("NIM_DISABLE_CUDA_GRAPH", "enforce_eager", True)),
    ({"NIM_ENABLE_KV_CACHE_REUSE": "0"}, ("NIM_ENABLE_KV_CACHE_REUSE", "enable_prefix_caching", False)),
]


@pytest.mark.parametrize("env, expected", ENGINE, ids=[next(iter(e)) for e, _ in ENGINE])
def test_nim_variables_that_set_one_vllm_argument(env, expected):
    assert parse_settings(env).engine_variables.one_argument == (expected,)
    assert parse_settings({next(iter(env)): ""}).engine_variables.one_argument == ()  # empty is unset, as NIM reads it


@pytest.mark.parametrize(
    "env, words",
    [
        ({"NIM_TENSOR_PARALLEL_SIZE": "0"}, "NIM_TENSOR_PARALLEL_SIZE: value 0 is out of range; use an integer from 1"),
        ({"NIM_PIPELINE_PARALLEL_SIZE": "two"}, "NIM_PIPELINE_PARALLEL_SIZE: invalid value 'two' is not an integer"),
        ({"NIM_DISABLE_CUDA_GRAPH": "maybe"}, "NIM_DISABLE_CUDA_GRAPH: invalid value 'maybe'"),
        ({"NIM_STRICT_VARIABLES": "2"}, "NIM_STRICT_VARIABLES: invalid value '2'"),
        ({"NIM_DOWNLOAD_CHUNK_MB": "5000"}, "NIM_DOWNLOAD_CHUNK_MB: '5000' is out of range; set a number from 1 to"),
        (
            {"NIM_HF_RESOLVE_TIMEOUT_S": "0"},
            "NIM_HF_RESOLVE_TIMEOUT_S: '0' is out of range; set a number from 0.5 to 3600",
        ),
        ({"NIM_HF_RESOLVE_TIMEOUT_S": "nan"}, "NIM_HF_RESOLVE_TIMEOUT_S: 'nan' is not a finite number"),
        (
            {"NIM_HF_BRANCH_FOLLOW_S": "-1"},
            "NIM_HF_BRANCH_FOLLOW_S: '-1' is out of range; set a number from 0 to",
        ),
        ({"NIM_HF_BRANCH_FOLLOW_S": "1h"}, "NIM_HF_BRANCH_FOLLOW_S: '1h' is not a number"),
    ],
)
def test_bad_values_name_the_variable_and_the_range(env, words):
    with pytest.raises(ConfigError) as err:
        parse_settings(env)
    assert err.value.one_line().startswith(words)


def test_the_hf_resolution_variables_reach_the_download_settings():
    assert (parse_settings({}).download.hf_resolve_timeout, parse_settings({}).download.hf_branch_follow) == (10, 1800)
    given = parse_settings({"NIM_HF_RESOLVE_TIMEOUT_S": "2.5", "NIM_HF_BRANCH_FOLLOW_S": "0"}).download
    assert (given.hf_resolve_timeout, given.hf_branch_follow) == (2.5, 0)


def _plan(models, env, args=()):
    env = {"NIM_CACHE_PATH": str(models["cache"]), **env}
    return plan_json(plan_for(env, list(args), facts())[1])


def test_nim_variables_sit_below_passthrough_and_the_command_line(models):
    """NIM's order: command line > NIM_PASSTHROUGH_ARGS > NIM_* variables > defaults; engine_origin names each."""
    env = {
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_TENSOR_PARALLEL_SIZE": "2",
        "NIM_PIPELINE_PARALLEL_SIZE": "2",
        "NIM_DISABLE_CUDA_GRAPH": "1",
        "NIM_SERVER_PORT": "9000",
        "NIM_PASSTHROUGH_ARGS": "--pipeline-parallel-size 4",
    }
    p = _plan(models, env, ["--tensor-parallel-size", "8"])
    assert p["engine_args"]["tensor_parallel_size"] == 8 and p["engine_origin"]["tensor_parallel_size"] == "cli"
    assert p["engine_args"]["pipeline_parallel_size"] == 4
    assert p["engine_origin"]["pipeline_parallel_size"] == "NIM_PASSTHROUGH_ARGS"
    assert p["engine_args"]["enforce_eager"] is True and p["engine_origin"]["enforce_eager"] == "NIM_DISABLE_CUDA_GRAPH"
    assert p["engine_origin"]["port"] == "NIM_SERVER_PORT" and p["argv"].count("--tensor-parallel-size") == 1
    assert "--enforce-eager" in p["argv"] and p["argv"].count("--pipeline-parallel-size") == 1
    alone = _plan(models, {"NIM_MODEL_PATH": str(models["target"]), "NIM_TENSOR_PARALLEL_SIZE": "2"})
    assert alone["engine_origin"]["tensor_parallel_size"] == "NIM_TENSOR_PARALLEL_SIZE"
    assert alone["argv"][alone["argv"].index("--tensor-parallel-size") + 1] == "2"


def test_specdec_args_sit_above_the_one_argument_variables(models):
    env = {
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_SPECDEC_ARGS": '{"tensor_parallel_size": 2}',
        "NIM_TENSOR_PARALLEL_SIZE": "4",
    }
    p = _plan(models, env)
    assert p["engine_args"]["tensor_parallel_size"] == 2
    assert p["engine_origin"]["tensor_parallel_size"] == "NIM_SPECDEC_ARGS"


def test_the_plan_lists_ignored_variables(models):
    p = _plan(models, {"NIM_MODEL_PATH": str(models["target"]), "NIM_SPECDEC_ENABLED": "1", "NIM_PEFT_SOURCE": "/a"})
    assert p["ignored_variables"] == [
        {"name": "NIM_PEFT_SOURCE", "reason": NOT_IMPLEMENTED, "hint": UNIMPLEMENTED_NIM_VARIABLES["NIM_PEFT_SOURCE"]},
        {"name": "NIM_SPECDEC_ENABLED", "reason": UNKNOWN, "hint": "NIM_SPECDEC_ENABLE"},
    ]
    assert p["speculative"]["enabled"] is False
    assert sum("NIM_SPECDEC_ENABLED" in w for w in p["warnings"]) == 1
    jsonschema.validate(p, plan_schema())
    wrong = copy.deepcopy(p)  # the session's own check (conftest) validates p itself
    wrong["ignored_variables"][0]["why"] = "a key the schema does not have"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, plan_schema())


def _cli(env: dict, models) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("NIM_")}
    base.update(NIM_CACHE_PATH=str(models["cache"]), NIM_MODEL_PATH=str(models["target"]), **env)
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=base, capture_output=True, text=True, timeout=120
    )


def test_plan_warns_about_a_misspelt_variable_and_strict_stops(models):
    done = _cli({"NIM_SPECDEC_ENABLED": "1"}, models)
    assert done.returncode == 0, done.stderr
    assert "NIM_SPECDEC_ENABLED is not a variable nim-specdec reads" in done.stderr
    assert "did you mean NIM_SPECDEC_ENABLE?" in done.stderr
    strict = _cli({"NIM_SPECDEC_ENABLED": "1", "NIM_STRICT_VARIABLES": "1"}, models)
    lines = strict.stderr.strip().splitlines()
    assert strict.returncode == 2 and len(lines) == 1 and "Traceback" not in strict.stderr
    assert lines[0].startswith("nim-specdec: error: NIM_STRICT_VARIABLES: NIM_SPECDEC_ENABLED")
    assert strict.stdout == ""


def test_the_download_table_of_sources_md_agrees():
    """docs/sources.md's table of the download variables (generated from their rows); defaults are the table's."""
    rows = re.findall(r"^\| `(NIM_[A-Z0-9_]+)` \| ([^|]*) \|", (ROOT / "docs" / "sources.md").read_text(), re.M)
    assert len(rows) >= 8
    for name, default in rows:
        assert name in var.TABLE and default.strip() == var.TABLE[name].default_text, name


@pytest.mark.parametrize(
    "name, use",
    [
        ("NIM_ENABLE_OTEL", "--otlp-traces-endpoint"),
        ("NIM_TOKENIZER_MODE", "--tokenizer-mode"),
        ("NIM_UID", "--user UID:0"),
    ],
)
def test_nim_variables_not_implemented_say_what_to_use(name, use):
    """Each says what to set instead, never an empty hint: the vLLM argument or the runtime's own setting."""
    (item,) = ignored_variables({name: "1"})
    assert item.reason == NOT_IMPLEMENTED and use in item.warning()


def test_the_nim_column_follows_nim_2_1():
    """NIM for LLMs 2.1.x documents the speculative-decoding and capture variables (its Environment Variables
    reference and Speculative Decoding page): the table says so."""
    documented_by_nim = {
        "NIM_SPECDEC_ENABLE",
        "NIM_SPECDEC_ARGS",
        "NIM_DRAFT_MODEL_PATH",
        "NIM_CAPTURE_ENABLE",
        "NIM_CAPTURE_ARGS",
    }
    assert {name: var.TABLE[name].nim for name in documented_by_nim} == dict.fromkeys(documented_by_nim, "2.x")
    assert not set(UNIMPLEMENTED_NIM_VARIABLES) & set(var.TABLE)  # a variable is read or named as not implemented
