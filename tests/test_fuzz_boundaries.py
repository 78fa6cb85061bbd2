"""Property-based tests, one per input boundary of issue 28: whatever arrives, the result is a clean
value or one RooflineError line naming where (never another exception, never nan/inf).

Boundaries: trace and lengths files, e2e rows, vLLM result JSON, JSON text, text decoding, the
component lists of --weights/--compute-dtype, the simulator's work ceilings and context check, and
the Python API's entry points.  The CLI end of each is in tests/test_boundary_cli.py and the
~1,250-case harness in benchmarks/boundaries.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.checks import MAX_COUNT
from roofline.core.errors import OptionError, RooflineError
from roofline.core.files import decode_text
from roofline.core.jsontext import load_json
from tests.profiles import at_most

#: Text a hostile cell may hold: numbers of every kind, words, huge digits, control characters.
CELLS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e300", "1e400", "true", "abc", "", " ", "0x10", "1_0", "4k", "1,5"]),
    st.text(max_size=12),
    st.integers(min_value=300, max_value=600).map(lambda n: "9" * n),
)


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _one_line(exc: BaseException, *needles: str) -> str:
    message = str(exc)
    assert message and "\n" not in message and len(message) < 700, message
    for needle in needles:
        assert needle in message, (needle, message)
    return message


# --------------------------------------------------------------------------- trace and lengths files


@at_most(40)
@given(column=st.sampled_from(["arrival_time_s", "input_len", "output_len"]), cell=CELLS)
def test_trace_cell_is_read_or_refused_with_its_line_and_column(tmp_path_factory, column, cell):
    from roofline.analyses.simulate import read_trace

    row = {"arrival_time_s": "0.5", "input_len": "64", "output_len": "8", column: cell}
    path = tmp_path_factory.mktemp("t") / "t.csv"
    path.write_text("arrival_time_s,input_len,output_len\n" + ",".join(_csv_cell(row[c]) for c in row) + "\n")
    try:
        trace = read_trace(path)
    except RooflineError as exc:
        _one_line(exc, "t.csv")
        return
    assert np.all(np.isfinite(trace.arrival_s)) and np.all(trace.arrival_s >= 0)
    assert np.all((trace.input_len >= 1) & (trace.input_len <= MAX_COUNT))
    assert np.all((trace.output_len >= 1) & (trace.output_len <= MAX_COUNT))


@at_most(40)
@given(column=st.sampled_from(["input_len", "output_len", "count"]), cell=CELLS)
def test_lengths_cell_is_read_or_refused(tmp_path_factory, column, cell):
    from roofline.analyses.lengths import read_lengths_csv

    row = {"input_len": "64", "output_len": "8", "count": "3", column: cell}
    path = tmp_path_factory.mktemp("l") / "l.csv"
    path.write_text("input_len,output_len,count\n" + ",".join(_csv_cell(row[c]) for c in row) + "\n")
    try:
        dist = read_lengths_csv(path)
    except RooflineError as exc:
        _one_line(exc, "l.csv")
        return
    assert np.all(np.isfinite(dist.weight)) and math.isclose(float(dist.weight.sum()), 1.0)
    assert np.all(dist.input_len >= 1) and np.all(dist.output_len >= 1)


# --------------------------------------------------------------------------- e2e rows and vendor JSON

E2E_ROW = {
    "id": "r/1",
    "source": "mine",
    "model": "llama-3-8b",
    "hardware": "h100-sxm",
    "weight_dtype": "bf16",
    "kv_dtype": "bf16",
    "compute_dtype": "bf16",
    "engine": "vllm",
    "load": "concurrency",
    "concurrency": "8",
    "input_len": "512",
    "output_len": "64",
    "ttft_s": "0.05",
    "tpot_s": "0.01",
}
NUMERIC = ["tp", "pp", "ep", "dp", "batch", "concurrency", "arrival_rate", "num_requests", "input_len", "output_len"]


@given(column=st.sampled_from([*NUMERIC, "ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"]), cell=CELLS)
def test_e2e_row_cell_is_parsed_or_refused_naming_the_column(column, cell):
    from roofline.calibrate.engine.schema import E2EError, parse_row

    try:
        row = parse_row({**E2E_ROW, column: cell}, "r.csv", 2)
    except E2EError as exc:
        _one_line(exc, "r.csv: row 2")
        return
    for name in NUMERIC:
        value = getattr(row, name)
        assert value is None or (value > 0 and (math.isfinite(value) or name == "arrival_rate")), (name, value)
    assert row.tp <= MAX_COUNT and row.concurrency is not None and row.concurrency <= MAX_COUNT


VLLM = {
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "completed": 200,
    "max_concurrency": 16,
    "request_rate": "inf",
    "total_input_tokens": 204800,
    "total_output_tokens": 25600,
    "mean_ttft_ms": 45.2,
    "mean_tpot_ms": 8.05,
    "output_throughput": 1910.4,
}
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@given(key=st.sampled_from([*VLLM, "input_lens", "median_ttft_ms", "mean_e2el_ms"]), value=JSON_VALUES)
def test_vllm_result_key_is_imported_or_refused_naming_the_key(tmp_path_factory, key, value):
    from roofline.calibrate.engine.schema import E2EError
    from roofline.calibrate.engine.vllm_results import ImportOptions, import_vllm

    path = tmp_path_factory.mktemp("v") / "v.json"
    path.write_text(json.dumps({**VLLM, key: value}, allow_nan=True))
    try:
        rows = import_vllm(path, ImportOptions(hardware="h100-sxm"))
    except E2EError as exc:
        _one_line(exc, "v.json")
        return
    (row,) = rows
    for name in ("ttft_s", "tpot_s", "output_tokens_per_s", "input_len", "output_len"):
        value = getattr(row, name)
        assert value is None or (math.isfinite(value) and value > 0), (name, value)


# --------------------------------------------------------------------------- JSON text and decoding


@given(st.text(max_size=60))
def test_json_text_is_a_value_or_one_line(text):
    try:
        load_json(text, "x.json", lines=True)
    except RooflineError as exc:
        _one_line(exc, "x.json")


@given(depth=st.integers(min_value=0, max_value=3000), opener=st.sampled_from(["[", '{"a":']))
def test_any_nesting_depth_is_a_value_or_one_line(depth, opener):
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "1" + closer * depth
    try:
        load_json(text, "deep.json")
    except RooflineError as exc:
        _one_line(exc, "deep.json", "nested deeper than 32")
        assert depth > 32
    else:
        assert depth <= 32


@given(st.binary(max_size=200))
def test_any_bytes_decode_to_text_or_one_line(data):
    try:
        text = decode_text(data, "f.csv", RooflineError)
    except RooflineError as exc:
        _one_line(exc, "f.csv")
    else:
        assert "\x00" not in text


@given(st.text(max_size=40), st.sampled_from(["utf-16", "utf-32"]))
def test_utf16_and_utf32_are_named(text, encoding):
    with pytest.raises(RooflineError) as err:
        decode_text(text.encode(encoding), "f.csv", RooflineError)
    _one_line(err.value, "UTF-")  # FF FE 00 00 starts both UTF-32 and the UTF-16 of a NUL: either name


# --------------------------------------------------------------------------- component lists

COMPONENTS = ("attention", "mlp", "experts", "embeddings", "lm_head")


@given(
    st.lists(
        st.one_of(
            st.sampled_from(["bf16", "fp8", "int4", "", "bf17"]),
            st.tuples(
                st.sampled_from([*COMPONENTS, "MLP", "router", ""]), st.sampled_from(["fp8", "mxfp4", "", "fp9"])
            ).map("=".join),
        ),
        min_size=1,
        max_size=4,
    ).map(",".join)
)
def test_component_list_parses_once_or_refuses(text):
    from roofline.views.cli.values import component_items, dtype

    try:
        default, items = component_items(text, "--weights", COMPONENTS, dtype, "bf16,experts=mxfp4")
    except OptionError as exc:
        _one_line(exc, "--weights")
        return
    parts = text.split(",")
    assert all(parts), "an empty item was accepted"
    assert sum("=" not in p for p in parts) == (default is not None) <= 1
    assert len(items) == sum("=" in p for p in parts)  # no component twice
    assert set(items) <= set(COMPONENTS)


# --------------------------------------------------------------------------- simulator ceilings


@given(
    requests=st.integers(min_value=1, max_value=10**6),
    replicas=st.integers(min_value=1, max_value=8192),
    mean_in=st.floats(min_value=1, max_value=1e6),
    mean_out=st.floats(min_value=1, max_value=1e5),
)
def test_work_ceiling_refuses_exactly_over_the_figures(requests, replicas, mean_in, mean_out):
    from roofline.analyses.simulate.bounds import (
        MAX_REQUEST_REPLICAS,
        MAX_SIMULATED_TOKENS,
        check_work,
        simulated_tokens,
    )

    over = (
        requests * replicas > MAX_REQUEST_REPLICAS
        or simulated_tokens(requests, mean_in, mean_out, 8192) > MAX_SIMULATED_TOKENS
    )
    try:
        tokens = check_work(requests, replicas, mean_in, mean_out, 8192)
    except OptionError as exc:
        assert over
        _one_line(exc, "ceiling")
    else:
        assert not over and tokens <= MAX_SIMULATED_TOKENS


@given(st.lists(st.integers(min_value=1, max_value=20_000), min_size=1, max_size=10))
def test_context_window_check(lengths):
    from roofline.analyses.lengths import check_within_context

    inputs = np.array(lengths)
    try:
        check_within_context("llama-3-8b", 8192, inputs, np.ones_like(inputs), "--trace t.csv", np.arange(2, 12))
    except OptionError as exc:
        first = int(np.argmax(inputs + 1 > 8192))
        _one_line(exc, f"line {first + 2}", "8192")
        assert np.any(inputs + 1 > 8192)
    else:
        assert np.all(inputs + 1 <= 8192)


# --------------------------------------------------------------------------- the Python API

ARGUMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(max_magnitude=10),
    st.lists(st.integers(min_value=0, max_value=2**20), min_size=1, max_size=3),
    st.lists(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=2), min_size=1, max_size=2),
    st.just(np.array(["8"])),
    st.just(np.ones((2, 2))),
)


@pytest.fixture(scope="module")
def llama():
    import roofline as rl

    return rl.load_model("llama-3-8b"), rl.load_hardware("h100-sxm")


def _finite(result: object) -> None:
    for key, value in result.as_dict().items():  # type: ignore[attr-defined]
        arr = np.asarray(value) if not isinstance(value, dict) else np.zeros(0)
        if arr.dtype.kind in "fc":
            assert np.all(np.isfinite(arr)), key


@at_most(30)
@given(name=st.sampled_from(["input_len", "output_len", "batch", "chips", "mfu"]), value=ARGUMENTS)
def test_request_arguments_give_a_finite_result_or_name_the_argument(llama, name, value):
    import roofline as rl

    model, chip = llama
    kwargs = {"input_len": 128, "output_len": 16, "batch": 1, "chips": 1, "mfu": 1.0, name: value}
    try:
        result = rl.request(model, chip, **kwargs)
    except OptionError as exc:
        assert name in exc.parameters or name in str(exc), (name, str(exc))
        _one_line(exc)
        return
    _finite(result)


@at_most(20)
@given(name=st.sampled_from(["batch", "context", "chips"]), value=ARGUMENTS)
def test_decode_step_arguments_give_a_finite_result_or_name_the_argument(llama, name, value):
    import roofline as rl

    model, chip = llama
    kwargs = {"batch": 8, "context": 2048, "chips": 1, name: value}
    try:
        result = rl.decode_step(model, chip, **kwargs)
    except OptionError as exc:
        assert name in str(exc), (name, str(exc))
        return
    _finite(result)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda rl, m, h: rl.decode_step(None, h), "model: must be a ModelSpec"),
        (lambda rl, m, h: rl.decode_step("llama-3-8b", h), "model: must be a ModelSpec"),
        (lambda rl, m, h: rl.request(m, "h100-sxm", 10, 10), "hw: must be a HardwareSpec"),
        (lambda rl, m, h: rl.decode_sweep(m, h, batch=[1]), "hardware: must be a non-empty list"),
        (lambda rl, m, h: rl.plan_capacity(m, [h], qps=1, lengths=(10, 10)), "lengths: must be a LengthDistribution"),
        (lambda rl, m, h: rl.request(m, h, 2**31, 4), "input_len: must be numbers in [1, 2147483647]"),
        (lambda rl, m, h: rl.request(m, h, 20, 0.5), "output_len: must be numbers in [1, 2147483647] (got 0.5)"),
        (lambda rl, m, h: rl.request(m, h, 20, 4, mfu=np.ones((2, 2))), "mfu: must be one number"),
        (lambda rl, m, h: rl.request(m, h, [1, 2, 3], [1, 2]), "input_len, output_len: array shapes do not broadcast"),
        (
            lambda rl, m, h: rl.decode_step(m, h, batch=np.array([1 + 2j])),
            "batch: must be numbers in [1, 2147483647], not complex",
        ),
        (lambda rl, m, h: rl.deployment(m, h, 1, precision="fp8"), "precision: must be a Precision"),
        (lambda rl, m, h: rl.Precision(weights="bf17"), "weights: unknown dtype 'bf17'"),
        (lambda rl, m, h: rl.from_points(["a"], [2], [1]), "input_len: must be numbers"),
    ],
)
def test_api_misuse_is_one_named_line(llama, call, needle):
    import roofline as rl

    model, chip = llama
    with pytest.raises(RooflineError) as err:
        call(rl, model, chip)
    _one_line(err.value, needle)


def test_request_at_the_count_limit_is_finite(llama):
    """input_len = 2**31 - 1 is the largest accepted count: every field stays finite."""
    import roofline as rl

    model, chip = llama
    _finite(rl.request(model, chip, input_len=MAX_COUNT, output_len=MAX_COUNT, chips=MAX_COUNT, batch=MAX_COUNT))
