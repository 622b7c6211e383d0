"""The speculative config's values of the field's own type are decided without pydantic, exactly as pydantic decides.

Every key of every shipped release is tried with values of each JSON type; where the fast path decides, its
answer must be pydantic's, and where pydantic refuses, the fast path must not have accepted.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nim_specdec.engines.vllm.release.vllm_schema import knowledge_for, known_versions
from nim_specdec.engines.vllm.spec import spec_schema

VALUES = [
    0,
    1,
    3,
    -1,
    2**63 - 1,
    2**63,
    2**70,
    True,
    False,
    1.0,
    2.5,
    float("nan"),
    float("inf"),
    "",
    "3",
    "ngram",
    "eagle3",
    "suffix",
    "yes",
    "auto",
    "fp8",
    [],
    [[1, 2, 3]],
    {},
    {"a": 1},
]


def _pydantic(key, value, known):
    from pydantic import ValidationError

    try:
        return ("ok", spec_schema._adapter(key, known).validate_python(value))
    except ValidationError:
        return ("refused", None)


@pytest.mark.parametrize("version", known_versions())
def test_the_fast_path_agrees_with_pydantic_wherever_it_decides(version):
    known = knowledge_for(version)
    decided = 0
    for key in spec_schema.KINDS:
        if key == "attention_backend" or key not in known.fields:
            continue
        for value in VALUES:
            fast = spec_schema._exact(key, value, known)
            if fast is spec_schema._UNDECIDED:
                continue
            decided += 1
            verdict, slow = _pydantic(key, value, known)
            assert verdict == "ok", (key, value)
            assert type(fast) is type(slow) and (fast == slow or fast != fast), (key, value, fast, slow)
    assert decided > 50  # the fast path is used, not a path that never decides


def test_a_guide_ngram_plan_imports_no_pydantic(tmp_path):
    model = tmp_path / "target"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 128}')
    env = {
        **os.environ,
        "NIM_MODEL_PATH": str(model),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_CACHE_PATH": str(tmp_path / "c"),
        "NIM_SPECDEC_ARGS": '{"speculative_config": {"method": "ngram", "num_speculative_tokens": 3, '
        '"prompt_lookup_max": 4, "prompt_lookup_min": 1}}',
    }
    code = (
        "import sys, io, contextlib; from nim_specdec.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): rc = main(['plan'])\n"
        "print(rc, 'pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["0", "False"], done.stderr[-2000:]
