"""config.json as the facts step hands it on: read-only everywhere it is shared, plain again when copied."""

import copy
import json
import pickle

import pytest

from nim_specdec.plan.plan_facts import SourceFacts
from nim_specdec.text.frozen_json import FrozenArray, FrozenObject, freeze, thaw

CONFIG = {"architectures": ["LlamaForCausalLM"], "text_config": {"hidden_size": 64, "rope": {"type": None}}, "n": 1}

CHANGES = [
    ("set a key", lambda c: c.__setitem__("n", 2)),
    ("delete a key", lambda c: c.__delitem__("n")),
    ("update", lambda c: c.update(n=2)),
    ("setdefault", lambda c: c.setdefault("new", 1)),
    ("pop", lambda c: c.pop("n")),
    ("popitem", lambda c: c.popitem()),
    ("clear", lambda c: c.clear()),
    ("merge in place", lambda c: c.__ior__({"n": 2})),
    ("nested object", lambda c: c["text_config"].__setitem__("hidden_size", 1)),
    ("two levels down", lambda c: c["text_config"]["rope"].update(type="yarn")),
    ("append to an array", lambda c: c["architectures"].append("X")),
    ("replace in an array", lambda c: c["architectures"].__setitem__(0, "X")),
    ("sort an array", lambda c: c["architectures"].sort()),
    ("extend an array in place", lambda c: c["architectures"].__iadd__(["X"])),
]


@pytest.mark.parametrize("what, change", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_shared_config_refuses_every_change(what, change):
    facts = SourceFacts("/models/t", copy.deepcopy(CONFIG))
    with pytest.raises(TypeError, match="read-only"):
        change(facts.config)
    assert facts.config == CONFIG


def test_the_facts_keep_their_own_copy():
    given = copy.deepcopy(CONFIG)
    facts = SourceFacts("/models/t", given)
    given["n"] = 99
    given["text_config"]["hidden_size"] = 1
    assert facts.config["n"] == 1 and facts.config["text_config"]["hidden_size"] == 64


def test_shape_checks_and_json_see_the_plain_types():
    frozen = freeze(CONFIG)
    assert isinstance(frozen, dict) and isinstance(frozen["architectures"], list)
    assert isinstance(frozen["text_config"], FrozenObject) and isinstance(frozen["architectures"], FrozenArray)
    assert json.dumps(frozen, sort_keys=True) == json.dumps(CONFIG, sort_keys=True)
    assert frozen == CONFIG and freeze(frozen) is frozen


@pytest.mark.parametrize("copier", [copy.deepcopy, thaw], ids=["deepcopy", "thaw"])
def test_a_deep_copy_is_plain_and_editable(copier):
    copied = copier(freeze(CONFIG))
    copied["text_config"]["rope"]["type"] = "yarn"
    copied["architectures"].append("X")
    assert type(copied) is dict and type(copied["text_config"]) is dict and type(copied["architectures"]) is list
    assert CONFIG["text_config"]["rope"]["type"] is None


def test_it_crosses_a_process_boundary_frozen():
    back = pickle.loads(pickle.dumps(SourceFacts("/models/t", CONFIG)))
    assert back.config == CONFIG
    with pytest.raises(TypeError):
        back.config["text_config"]["hidden_size"] = 1
