"""Fuzzing the spec boundary: every hardware/model field, quantities with units, bad YAML files.

Each bad value must give one :class:`SpecError` line naming the file (or origin) and the
field, with the value shortened; the CLI (in-process) exits 2 with that line and prints
nothing else.  Fields are read from the pydantic schemas, so a field added later is fuzzed too.
"""

from __future__ import annotations

import math
import tempfile
import types
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.checks import MAX_COUNT, MAX_VALUE
from roofline.core.errors import OptionError, RooflineError, SpecError
from roofline.core.units import GiB, parse_quantity
from roofline.specs import (
    HardwareSpec,
    ModelSpec,
    dimension_of,
    hardware_from_dict,
    load_hardware,
    load_model,
    model_from_dict,
)
from roofline.specs import files as spec_files
from tests.inprocess import assert_one_line, assert_refused, run_roofline
from tests.profiles import at_most

FUZZ = at_most(40)
FEW = at_most(10)

HARDWARE = load_hardware("h100-sxm").model_dump(exclude_none=True)
MODEL = load_model("llama-3-8b").model_dump(exclude_none=True)

# --------------------------------------------------------------------------- strategies

NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
HUGE_INTS = st.sampled_from([10**400, -(10**400), 2**64, 10**30])
CONTAINERS = st.one_of(
    st.lists(st.integers(1, 9), min_size=1, max_size=3),
    st.dictionaries(st.sampled_from("abc"), st.integers(), min_size=1, max_size=2),
)
WORDS = st.text(alphabet="abcxyz!?- ", min_size=1, max_size=12).filter(lambda t: t.strip() != "")
OTHER_DIMENSION = {
    "bytes": ["80 ms", "2 GB/s", "1 TFLOP/s", "16 G", "3 us"],
    "bytes/s": ["80 GB", "5 ms", "1 TFLOP/s", "819 G"],
    "FLOP/s": ["80 GB", "1 s", "819 GB/s", "197 T"],
    "seconds": ["2 GB", "1 GB/s", "1 TFLOP/s", "3 ks"],
    "dimensionless": ["80 GB", "2 ms", "5 GB/s"],
}


def _kind(field: str, schema: type) -> tuple[object, bool]:
    annotation = schema.model_fields[field].annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0], True
    return annotation, False


def _minimum(field: str, schema: type) -> float:
    for item in schema.model_fields[field].metadata:
        if hasattr(item, "gt"):
            return item.gt
        if hasattr(item, "ge"):
            return item.ge
    return 0


def bad_int(minimum: float) -> st.SearchStrategy[object]:
    """Not a whole number in [minimum (>= 1 for gt=0), MAX_COUNT]."""
    low = int(minimum) + 1 if minimum == 0 else int(minimum)
    return st.one_of(
        st.booleans(),
        NOT_FINITE,
        HUGE_INTS,
        CONTAINERS,
        WORDS,
        st.floats(1.01, 1e6).filter(lambda x: not x.is_integer()),
        st.integers(max_value=low - 1 if low > 0 else -1),
        st.integers(min_value=MAX_COUNT + 1),
        st.sampled_from(["1e400", "nan", "4096.7", "32 GB", ""]),
    )


def bad_float(field: str) -> st.SearchStrategy[object]:
    """Not a finite number of the field's dimension in its range."""
    dimension = dimension_of(field)
    return st.one_of(
        st.booleans(),
        NOT_FINITE,
        CONTAINERS,
        WORDS,
        st.just(10**400),
        st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
        st.floats(min_value=MAX_VALUE[dimension] * 10, allow_infinity=False),
        st.sampled_from(["1e400", "nan", ".inf", "-5", "", *OTHER_DIMENSION[dimension]]),
    )


def bad_value(field: str, schema: type) -> st.SearchStrategy[object]:
    """Values the checked field must refuse."""
    base, _ = _kind(field, schema)
    if base is bool:
        return st.one_of(st.sampled_from(["no", "yes", "false", "off", "1"]), st.integers(), st.floats(), CONTAINERS)
    if base is int:
        return bad_int(_minimum(field, schema))
    if base is float:
        return bad_float(field)
    if field == "name":
        return st.one_of(st.sampled_from(["", "   ", "a\nb", "x" * 201]), st.integers(), CONTAINERS)
    if field == "source":
        return st.one_of(st.integers(), st.floats(), CONTAINERS, st.just("s" * 20_001))
    if field == "kind":
        return st.one_of(WORDS.filter(lambda w: w not in ("tpu", "gpu", "cpu")), st.integers())
    if field == "flops_per_s":
        return st.one_of(
            st.just({}),
            st.integers(),
            WORDS,
            st.dictionaries(st.just("bf16"), bad_float("flops_per_s"), min_size=1),
            st.dictionaries(st.sampled_from(["bf17", "fp64", "int2"]), st.just(1e14), min_size=1),
        )
    if field == "ici_topology":
        return st.one_of(WORDS, st.integers())
    return st.one_of(st.integers(), WORDS)


def fuzzed_fields(schema: type) -> list[str]:
    return [f for f in schema.model_fields if f != "calibration"]


# --------------------------------------------------------------------------- one bad field


def _refused(load: typing.Callable[[], object], *needles: str) -> str:
    with pytest.raises(SpecError) as err:
        load()
    assert_one_line(str(err.value), *needles)
    return str(err.value)


@FUZZ
@given(st.data())
def test_bad_hardware_field_refused_naming_it(data):
    field = data.draw(st.sampled_from(fuzzed_fields(HardwareSpec)))
    value = data.draw(bad_value(field, HardwareSpec))
    _refused(lambda: hardware_from_dict({**HARDWARE, field: value}, "chip.yaml"), "chip.yaml", repr(field)[:-1])


@FUZZ
@given(st.data())
def test_bad_model_field_refused_naming_it(data):
    field = data.draw(st.sampled_from(fuzzed_fields(ModelSpec)))
    value = data.draw(bad_value(field, ModelSpec))
    _refused(lambda: model_from_dict({**MODEL, field: value}, "m.yaml"), "m.yaml", repr(field)[:-1])


@FEW
@given(st.data())
def test_bad_field_in_a_yaml_file_names_file_and_field(data):
    kind, schema, base = data.draw(st.sampled_from([("hardware", HardwareSpec, HARDWARE), ("model", ModelSpec, MODEL)]))
    field = data.draw(st.sampled_from(fuzzed_fields(schema)))
    value = data.draw(bad_value(field, schema))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spec.yaml"
        path.write_text(yaml.safe_dump({**base, field: value}))
        load = load_hardware if kind == "hardware" else load_model
        _refused(lambda: load(str(path)), str(path), repr(field)[:-1])


def test_issue_cases_named_with_allowed_values(tmp_path):
    # The cases of issue 12, each with what the message must say.
    cases = [
        (HARDWARE, "hbm_bytes", "80 ms", "is seconds, not bytes; allowed units: B, kB"),
        (HARDWARE, "ici_hop_latency_s", "2 GB", "is bytes, not seconds; allowed units: s, ms, us, ns"),
        (HARDWARE, "hbm_bytes", math.inf, "finite"),
        (HARDWARE, "hbm_bytes", "1e400", "not a finite number"),
        (HARDWARE, "hbm_bytes", 10**400, "out of range"),
        (HARDWARE, "price_per_chip_hour", math.nan, "finite"),
        (HARDWARE, "flops_per_s", {"bf16": math.nan}, "finite"),
        (MODEL, "num_layers", True, "whole number"),
        (MODEL, "d_model", 4096.7, "not a fraction"),
        (MODEL, "tie_embeddings", "no", "true or false"),
        (MODEL, "name", "", "must not be empty"),
    ]
    for base, field, value, needle in cases:
        build = hardware_from_dict if base is HARDWARE else model_from_dict
        _refused(lambda b=build, d=base, f=field, v=value: b({**d, f: v}, "spec.yaml"), repr(field)[:-1], needle)


def test_calibration_parameters_must_be_finite():
    profile = {**HARDWARE, "calibration": {"ops": {"gemm": {"params": {"eff": math.nan}}}}}
    _refused(lambda: hardware_from_dict(profile), "calibration.ops.gemm.params.eff", "finite")


# --------------------------------------------------------------------------- valid values pass


@FUZZ
@given(st.data())
def test_valid_values_accepted_exactly(data):
    field = data.draw(
        st.sampled_from(
            ["hbm_bytes", "hbm_bandwidth_bytes_per_s", "ici_hop_latency_s", "price_per_chip_hour", "ici_links"]
        )
    )
    if field == "ici_links":
        value = expected = data.draw(st.integers(1, MAX_COUNT))
    elif field == "hbm_bytes":
        gib = data.draw(st.integers(1, 10**6))
        value, expected = f"{gib} GiB", gib * GiB  # binary prefix: 2**30
    elif field == "hbm_bandwidth_bytes_per_s":
        gbs = data.draw(st.integers(1, 10**6))
        value, expected = f"{gbs} GB/s", gbs * 1e9
    elif field == "ici_hop_latency_s":
        us = data.draw(st.integers(1, 10**6))
        value, expected = f"{us} us", us * 1e-6
    else:
        value = expected = data.draw(st.floats(1e-6, 1e6))
    hw = hardware_from_dict({**HARDWARE, field: value})
    assert getattr(hw, field) == pytest.approx(expected, rel=1e-12)


def test_every_builtin_spec_still_loads():
    from roofline.specs import hardware_names, model_names

    assert all(load_hardware(n).hbm_bytes > 0 for n in hardware_names())
    assert all(load_model(n).num_layers > 0 for n in model_names())


# --------------------------------------------------------------------------- quantities


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("16 GiB", "bytes", 16 * 2**30),
        ("80 GB", "bytes", 80e9),
        ("819 GB/s", "bytes/s", 819e9),
        ("197 TFLOP/s", "FLOP/s", 197e12),
        ("2 us", "seconds", 2e-6),
        ("50 ms", "seconds", 0.05),
        ("3 ns", "seconds", 3e-9),
        ("5", "seconds", 5.0),
        ("4k", "dimensionless", 4000.0),
        (8.2e11, "FLOP/s", 8.2e11),
        ("8.2e11", "FLOP/s", 8.2e11),
    ],
)
def test_parse_quantity_units_of_each_dimension(text, dimension, expected):
    assert parse_quantity(text, dimension) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("value", "dimension", "needle"),
    [
        ("80 ms", "bytes", "is seconds, not bytes"),
        ("2 GB", "seconds", "is bytes, not seconds"),
        ("360 ms", "bytes", "allowed units: B"),
        ("50 GB", "seconds", "allowed units: s, ms"),
        ("16 G", "bytes", "prefix but no unit"),
        ("1e400", None, "not a finite number"),
        (10**400, None, "not a finite number"),
        (math.nan, "bytes", "not a finite number"),
        (True, None, "expected a number"),
        ("3 ks", "seconds", "unknown unit 'ks'"),
        ("x" * 10_000, "bytes", "cannot read"),
    ],
)
def test_parse_quantity_refusals_name_the_parameter(value, dimension, needle):
    with pytest.raises(OptionError) as err:
        parse_quantity(value, dimension, name="--bytes")
    assert_one_line(str(err.value), "--bytes", needle, max_chars=200)
    assert isinstance(err.value, ValueError) and isinstance(err.value, RooflineError)


@FUZZ
@given(
    st.one_of(st.text(max_size=30), st.floats(), st.integers(), st.booleans()),
    st.sampled_from(["bytes", "seconds", "bytes/s", "FLOP/s", "dimensionless", None]),
)
def test_parse_quantity_finite_or_one_line_error(value, dimension):
    try:
        result = parse_quantity(value, dimension)
    except OptionError as exc:
        assert_one_line(str(exc), max_chars=300)
    else:
        assert math.isfinite(result)


# --------------------------------------------------------------------------- bad files

V5E = (
    "name: chip\nflops_per_s: {bf16: 1.97e14}\nhbm_bytes: 16 GiB\nhbm_bandwidth_bytes_per_s: 819 GB/s\n"
    "ici_bandwidth_bytes_per_s: 4.5e+10\nici_links: 4\nici_hop_latency_s: 1 us\nprice_per_chip_hour: 1.2\n"
)
ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    + "name: *i\n"
)
BAD_FILES: dict[str, tuple[bytes, str]] = {
    "alias_bomb.yaml": (ALIAS_BOMB.encode(), "aliases"),
    "alias_in_source.yaml": ((V5E + ALIAS_BOMB.replace("name: *i", "source: *i")).encode(), "aliases"),
    "duplicate.yaml": ((V5E + "hbm_bytes: 32 GiB\n").encode(), "duplicate key 'hbm_bytes'"),
    "deep_flow.yaml": (("name: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(), "malformed YAML"),
    "deep_block.yaml": (("name:\n" + "".join(" " * i + "- \n" for i in range(1, 60))).encode(), "nested"),
    "binary.yaml": (bytes(range(256)) * 4, "binary file"),
    "latin1.yaml": (V5E.replace("chip", "chïp").encode("latin-1"), "not UTF-8"),
    "list.yaml": (b"- a\n- b\n", "expected a mapping"),
    "empty.yaml": (b"", "expected a mapping"),
    "key.yaml": ((V5E + "[a, b]: 1\n").encode(), "key must be a plain name"),
    "int_key.yaml": ((V5E + "1: x\n").encode(), "must be text"),
    "long_int.yaml": (
        (V5E + "ici_links: " + "9" * 5000 + "\n").replace("ici_links: 4\n", "").encode(),
        "malformed YAML",
    ),
    "tabs.yaml": (b"name:\tchip\n\tx: 1\n", "malformed YAML"),
    "python_tag.yaml": (b"name: !!python/object:os.system [ls]\n", "malformed YAML"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_structurally_bad_spec_file_one_line(tmp_path, name):
    data, needle = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    _refused(lambda: load_hardware(str(path)), str(path), needle)


@pytest.mark.parametrize("name", ["alias_bomb.yaml", "binary.yaml", "duplicate.yaml", "deep_flow.yaml"])
def test_bad_spec_file_cli_exit_2(tmp_path, name):
    data, needle = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    assert_refused(run_roofline("hardware", "show", str(path)), str(path), needle)
    assert_refused(run_roofline("model", "show", str(path)), str(path), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing written beside it


def test_spec_file_size_limit(tmp_path, monkeypatch):
    path = tmp_path / "big.yaml"
    path.write_text(V5E + "#" * (spec_files.MAX_SPEC_FILE_BYTES + 1))
    _refused(lambda: load_hardware(str(path)), str(path), "limited to 1 MiB")
    monkeypatch.setattr(spec_files, "MAX_SPEC_FILE_BYTES", 100)
    small = tmp_path / "small.yaml"
    small.write_text(V5E)
    with pytest.raises(SpecError, match="limited"):
        spec_files.read_yaml(small)


def test_utf8_bom_and_valid_file_accepted(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + V5E.encode())
    assert load_hardware(str(path)).hbm_bytes == 16 * 2**30


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_never_a_traceback(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.yaml"
        path.write_bytes(data)
        with pytest.raises(SpecError) as err:
            load_hardware(str(path))
        assert_one_line(str(err.value), str(path))


@FUZZ
@given(st.text(alphabet="ab:-[]{}&*!#'\"\n ,1.e|>?", max_size=120))
def test_random_yaml_text_never_a_traceback(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.yaml"
        path.write_text(text)
        with pytest.raises(SpecError) as err:
            load_model(str(path))
        assert_one_line(str(err.value), str(path))
