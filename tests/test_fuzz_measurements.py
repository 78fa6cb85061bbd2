"""Fuzzing measurement tables: every number column of the schema and of each public format,
plus structurally bad files (truncated gzip, BOM, header only, binary, oversize).

A bad cell must give one CalibrationError line naming the file, the row and the column; the
CLI (``calibrate import``, in-process) exits 2 and writes no output file.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.calibrate.kernels.fit import calibrate
from roofline.calibrate.kernels.importers import import_file
from roofline.core.errors import MeasurementError, OptionError
from roofline.kernels import schema
from roofline.kernels.schema import NUMBER_COLUMNS, CalibrationError, check_fit_request
from roofline.specs import load_hardware
from tests.conftest import REPO
from tests.inprocess import assert_one_line, assert_refused, run_roofline
from tests.profiles import at_most

FUZZ = at_most(50)
FIXTURES = REPO / "tests" / "fixtures" / "measurements"
SCHEMA = (FIXTURES / "schema_small.csv").read_text()
#: Public tables (fixture path) and the number columns their importer reads from the first row.
PUBLIC = {
    "aiconfigurator/h100_sxm/gemm_perf.csv": ("m", "n", "k", "latency"),
    "aiconfigurator/h100_sxm/generation_attention_perf.csv": (
        "batch_size",
        "isl",
        "num_heads",
        "num_key_value_heads",
        "head_dim",
        "step",
        "latency",
        "window_size",
        "beam_width",
    ),
    "aiconfigurator/h100_sxm/context_attention_perf.csv": (
        "batch_size",
        "isl",
        "num_heads",
        "num_key_value_heads",
        "head_dim",
        "latency",
    ),
    "aiconfigurator/h100_sxm/nccl_perf.csv": ("num_gpus", "message_size", "latency"),
    "aiconfigurator/h100_sxm/custom_allreduce_perf.csv": ("num_gpus", "message_size", "latency"),
    "vidur/h100/mlp.csv": (
        "n_head",
        "n_kv_head",
        "n_embd",
        "n_expanded_embd",
        "num_tokens",
        "num_tensor_parallel_workers",
        "time_stats.mlp_up_proj.median",
    ),
    "vidur/h100_dgx/all_reduce.csv": (
        "num_workers",
        "rank",
        "devices_per_node",
        "size",
        "time_stats.all_reduce.median",
    ),
}
#: (an empty window_size / beam_width means none / 1, as in the public tables)
BAD_CELLS = st.sampled_from(["nan", "inf", "-inf", "-1", "abc", "1e400", "", "0x10", "1,5"])


def _write(folder: Path, relative: str, text: str | bytes) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _with_cell(text: str, row: int, column: str, value: str) -> str:
    lines = text.splitlines()
    header = lines[0].split(",")
    cells = lines[row - 1].split(",")
    cells[header.index(column)] = value if "," not in value else f'"{value}"'
    lines[row - 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


def _refused(path: Path, *needles: str) -> str:
    with pytest.raises(CalibrationError) as err:
        import_file(path)
    assert isinstance(err.value, MeasurementError)
    assert_one_line(str(err.value), str(path), *needles)
    return str(err.value)


@FUZZ
@given(
    st.sampled_from([c for c in NUMBER_COLUMNS if c in SCHEMA.splitlines()[0].split(",")]),
    st.integers(2, 6),
    BAD_CELLS | st.just("1e300"),
)
def test_bad_schema_cell_names_row_and_column(column, row, value):
    text = _with_cell(SCHEMA, row, column, value)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "t.csv", text)
        try:
            import_file(path)
        except CalibrationError as exc:
            assert_one_line(str(exc), str(path), f"row {row}", f"column {column!r}")
        else:  # only an empty cell of a column this op does not use is fine
            assert value == ""


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("op", "matmul", "column 'op' is 'matmul'"),
        ("dtype", "bf17", "column 'dtype' is 'bf17'"),
        ("hardware", "", "column 'hardware' is empty"),
        ("m", "1e300", "column 'm' must be a finite number"),
        ("time_s", "0", "column 'time_s' must be a positive number"),
    ],
)
def test_bad_schema_text_and_range(tmp_path, column, value, needle):
    _refused(_write(tmp_path, "t.csv", _with_cell(SCHEMA, 2, column, value)), "row 2", needle)


@FUZZ
@given(st.sampled_from(sorted(PUBLIC)), st.data())
def test_bad_public_cell_names_the_source_column(relative, data):
    column = data.draw(st.sampled_from(PUBLIC[relative]))
    value = data.draw(BAD_CELLS.filter(lambda v: v or column not in ("window_size", "beam_width")))
    text = _with_cell((FIXTURES / relative).read_text(), 2, column, value)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), relative, text)
        with pytest.raises(CalibrationError) as err:
            import_file(path)
        assert_one_line(str(err.value), str(path), "row 2", repr(column))


@pytest.mark.parametrize("column", ["n_head", "num_tensor_parallel_workers"])
def test_vidur_zero_divisors_refused(tmp_path, column):
    text = _with_cell((FIXTURES / "vidur/h100/mlp.csv").read_text(), 2, column, "0")
    _refused(_write(tmp_path, "vidur/h100/mlp.csv", text), f"column '{column}' must be a finite number > 0")


def _gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


STRUCTURAL = {
    "empty.csv": (b"", "empty file"),
    "header_only.csv": (SCHEMA.splitlines()[0].encode() + b"\n", "a header only"),
    "truncated.csv.gz": (_gz(SCHEMA)[:-12], "truncated or corrupt gzip"),
    "not_gzip.csv.gz": (SCHEMA.encode(), "truncated or corrupt gzip"),
    "nul.csv": (SCHEMA.encode()[:40] + b"\x00" + SCHEMA.encode()[40:], "binary file"),
    "latin1.csv": (SCHEMA.replace("fixture", "fïxture").encode("latin-1"), "not UTF-8"),
    "extra_field.csv": (SCHEMA.replace(",fixture,\n", ",fixture,,surplus\n", 1).encode(), "more fields"),
    "repeated.csv": (SCHEMA.replace("hardware,op,", "hardware,op,op,", 1).encode(), "repeated column"),
    "unknown_format.csv": (b"a,b\n1,2\n", "unrecognised measurement columns"),
    "skipped.csv": (b"kernel_source,gemm_dtype,m,n,k,latency\nx,int4_wo,1,2,3,0.1\n", "none of its 1 rows"),
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_structurally_bad_measurement_file(tmp_path, name):
    data, needle = STRUCTURAL[name]
    _refused(_write(tmp_path, name, data), needle)


def test_utf8_bom_accepted(tmp_path):
    table = import_file(_write(tmp_path, "bom.csv", b"\xef\xbb\xbf" + SCHEMA.encode()))
    assert len(table) == 5 and table.unique("hardware") == ["h100-sxm"]


def test_size_limit_counts_decompressed_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "MAX_MEASUREMENT_FILE_BYTES", 4096)
    bomb = _write(tmp_path, "bomb.csv.gz", _gz(SCHEMA + SCHEMA.splitlines()[1] * 10_000))
    assert bomb.stat().st_size < 4096
    _refused(bomb, "measurement files are limited")
    _refused(_write(tmp_path, "big.csv", SCHEMA + "#" * 5000), "measurement files are limited")


def test_row_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "MAX_ROWS", 3)
    _refused(_write(tmp_path, "t.csv", SCHEMA), "more than 3 rows")


@FUZZ
@given(st.integers(0, 400))
def test_gzip_cut_anywhere(cut):
    data = _gz(SCHEMA)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "t.csv.gz", data[: min(cut, len(data) - 1)])
        with pytest.raises(CalibrationError) as err:
            import_file(path)
        assert_one_line(str(err.value), str(path))


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["x.csv", "x.csv.gz"]))
def test_random_bytes_never_a_traceback(data, name):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), name, data)
        with pytest.raises(CalibrationError) as err:
            import_file(path)
        assert_one_line(str(err.value), str(path))


@pytest.mark.parametrize("name", ["truncated.csv.gz", "header_only.csv", "nul.csv"])
def test_calibrate_import_cli_exit_2_writes_nothing(tmp_path, name):
    data, needle = STRUCTURAL[name]
    path = _write(tmp_path, name, data)
    out = tmp_path / "out.csv.gz"
    assert_refused(run_roofline("calibrate", "import", str(path), "--out", str(out)), str(path), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_bad_cell_cli_exit_2(tmp_path):
    path = _write(tmp_path, "t.csv", _with_cell(SCHEMA, 3, "m", "1e300"))
    out = tmp_path / "out.csv"
    assert_refused(run_roofline("calibrate", "import", str(path), "--out", str(out)), "row 3", "'m'")
    assert not out.exists()


# --------------------------------------------------------------------------- calibration requests


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"max_rows": 0}, "max_rows: must be a whole number in [10, "),
        ({"max_rows": True}, "max_rows"),
        ({"max_rows": 10**30}, "max_rows"),
        ({"seed": -1}, "seed"),
        ({"dtype": "bf17"}, "dtype: unknown dtype 'bf17'"),
    ],
)
def test_impossible_calibration_requests(kwargs, needle):
    with pytest.raises(OptionError) as err:
        check_fit_request(**{"dtype": None, "max_rows": 4000, "seed": 0, **kwargs})
    assert_one_line(str(err.value), needle)
    with pytest.raises(OptionError):
        calibrate(import_file(FIXTURES / "schema_small.csv"), load_hardware("h100-sxm"), **kwargs)
