"""Fuzzing config.json import: every key the mappers read, with values of the wrong type or range.

The configs are the released ones of tests/test_hf_config.py.  A bad value must give one
SpecError line naming the key and showing the value shortened; random JSON never gives a
traceback; the CLI (in-process) exits 2.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.checks import MAX_COUNT
from roofline.core.errors import SpecError
from roofline.specs import load_model, model_from_dict
from roofline.specs.hf.checks import KEY_KINDS
from roofline.specs.hf.config import model_dict_from_hf_config
from tests import test_hf_config as released
from tests.inprocess import assert_one_line, assert_refused, run_roofline
from tests.profiles import at_most

FUZZ = at_most(60)
CONFIGS = {
    name: getattr(released, name)
    for name in (
        "LLAMA_31_8B",
        "MIXTRAL_8X7B",
        "DEEPSEEK_V3",
        "QWEN3_8B",
        "QWEN3_30B_A3B",
        "QWEN15_MOE_A27B",
        "GEMMA2_9B",
        "GEMMA3_1B",
        "GEMMA3_4B_IT",
        "MISTRAL_7B_V01",
        "QWEN25_05B",
        "GPT2",
        "OPT_125M",
    )
}
#: (config, key) pairs whose value the import reads and checks.
CHECKED = sorted(
    (name, key) for name, cfg in CONFIGS.items() for key in cfg if key in KEY_KINDS and cfg[key] is not None
)

CONTAINERS = st.one_of(
    st.lists(st.integers(1, 9), min_size=1, max_size=3),
    st.dictionaries(st.sampled_from("ab"), st.integers(), min_size=1, max_size=2),
)


def bad_for(kind: tuple[object, ...]) -> st.SearchStrategy[object]:
    """JSON values a key of this kind must refuse."""
    if kind[0] == "int":
        return st.one_of(
            st.booleans(),
            st.sampled_from([math.nan, math.inf, -math.inf, 10**400, "4096", "abc"]),
            st.floats(1.01, 1e6).filter(lambda x: not x.is_integer()),
            CONTAINERS,
            st.integers(max_value=int(kind[1]) - 1),
            st.integers(min_value=MAX_COUNT + 1),
        )
    if kind[0] == "flag":
        return st.one_of(st.sampled_from(["no", "yes", "false", "true", ""]), st.integers(), st.floats(), CONTAINERS)
    if kind[0] == "text":
        return st.one_of(st.integers(), st.booleans(), CONTAINERS)
    if kind[0] == "names":
        return st.one_of(
            st.integers(),
            st.text(max_size=5),
            st.dictionaries(st.just("a"), st.integers()),
            st.lists(st.lists(st.text(max_size=3), max_size=2), min_size=1, max_size=2),
            st.lists(st.integers(), min_size=1, max_size=2),
        )
    if kind[0] == "ints":
        return st.one_of(
            st.integers(),
            st.text(max_size=5),
            st.lists(st.one_of(st.text(max_size=2), st.floats(), st.integers(max_value=-1)), min_size=1, max_size=2),
        )
    return st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2))


def _map(cfg: object) -> object:
    return model_from_dict(model_dict_from_hf_config(cfg, "m", "config.json"), "config.json")  # type: ignore[arg-type]


@FUZZ
@given(st.data())
def test_bad_value_of_every_read_key_names_it(data):
    name, key = data.draw(st.sampled_from(CHECKED))
    value = data.draw(bad_for(KEY_KINDS[key]))
    with pytest.raises(SpecError) as err:
        _map({**CONFIGS[name], key: value})
    assert_one_line(str(err.value), "config.json", f"'{key}'", max_chars=400)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("architectures", {"a": 1}),
        ("architectures", 5),
        ("architectures", [["LlamaForCausalLM"]]),
        ("num_attention_heads", 0),
        ("hidden_size", math.inf),
        ("hidden_size", [4096]),
        ("hidden_size", 4096.7),
        ("tie_word_embeddings", "no"),
        ("num_hidden_layers", True),
    ],
)
def test_issue_cases(key, value):
    with pytest.raises(SpecError) as err:
        _map({**CONFIGS["LLAMA_31_8B"], key: value})
    assert_one_line(str(err.value), f"config field '{key}'", "(got ")


def test_text_config_as_a_list_and_nested_keys_checked():
    with pytest.raises(SpecError, match="config field 'text_config' must be a mapping"):
        _map({**CONFIGS["GEMMA3_4B_IT"], "text_config": [1, 2]})
    nested = {**CONFIGS["GEMMA3_4B_IT"]["text_config"], "num_attention_heads": 0}
    with pytest.raises(SpecError, match="text_config.*'num_attention_heads'"):
        _map({**CONFIGS["GEMMA3_4B_IT"], "text_config": nested})


def test_hidden_size_not_a_multiple_of_heads_refused():
    cfg = {k: v for k, v in CONFIGS["LLAMA_31_8B"].items() if k != "head_dim"}
    with pytest.raises(SpecError, match="not a multiple of num_attention_heads"):
        _map({**cfg, "num_attention_heads": 3})


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)


@FUZZ
@given(st.sampled_from(sorted(CONFIGS)), st.data())
def test_random_json_values_never_a_traceback(name, data):
    cfg = dict(CONFIGS[name])
    key = data.draw(st.sampled_from(sorted(cfg)))
    cfg[key] = data.draw(JSON)
    try:
        spec = _map(cfg)
    except SpecError as exc:
        assert_one_line(str(exc), "config.json", max_chars=700)
    else:
        assert spec.num_layers >= 1  # an ignored key (dropout, token ids ...) may take any value


BAD_JSON = {
    "deep.json": (("[" * 100_000 + "]" * 100_000).encode(), "nested deeper"),
    "deep_object.json": (('{"a":' * 40 + "1" + "}" * 40).encode(), "nested deeper than 32"),
    "latin1.json": ('{"model_type": "llamä"}'.encode("latin-1"), "not UTF-8"),
    "binary.json": (b"\x00\x01\x02{", "binary file"),
    "truncated.json": (b'{"hidden_size": 40', "malformed JSON"),
    "list.json": (b"[1, 2]", "expected a JSON object"),
    "duplicate.json": (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
    "long_int.json": (
        b'{"hidden_size": ' + b"9" * 5000 + b"}",
        "'hidden_size': number out of range (got <a 5000-digit",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_JSON))
def test_structurally_bad_config_json_one_line(tmp_path, name):
    data, needle = BAD_JSON[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SpecError) as err:
        load_model(str(path))
    assert_one_line(str(err.value), str(path), needle)


def test_config_json_cli_exit_2_no_output_file(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps({**CONFIGS["LLAMA_31_8B"], "num_attention_heads": 0}))
    assert_refused(run_roofline("model", "show", str(path)), str(path), "'num_attention_heads'")
    out = tmp_path / "imported.yaml"
    assert_refused(run_roofline("model", "import", str(path), "--out", str(out)), "'num_attention_heads'")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.json", "model"]


@at_most(30)
@given(st.binary(max_size=200))
def test_random_bytes_as_config_json(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_bytes(data)
        with pytest.raises(SpecError) as err:
            load_model(str(path))
        assert_one_line(str(err.value), str(path))
