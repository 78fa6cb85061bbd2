"""The end-to-end measurement schema: reading, writing, and one-line errors."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pytest

from roofline.calibrate.engine.rows_out import rows_csv, write_rows
from roofline.calibrate.engine.schema import COLUMNS, E2EError, E2ERow, read_rows

FIXTURES = Path(__file__).parent / "fixtures" / "e2e"
HEADER = "id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,input_len,output_len,ttft_s"
GOOD = "r1,mine,llama-3-8b,h100-sxm,bf16,bf16,bf16,vllm,static,8,1024,128,0.09"


def write(tmp_path: Path, *lines: str, name: str = "rows.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bom_file_reads_with_defaults_and_units():
    rows = read_rows(FIXTURES / "schema_bom.csv")
    assert [r.id for r in rows] == ["mine/1", "mine/2"]  # the BOM is not part of the first column name
    first, second = rows
    assert (first.tp, first.pp, first.ep, first.dp, first.batch) == (1, 1, 1, 1, 8)
    assert first.ttft_s == 0.09 and first.tpot_s == 0.0075 and first.output_tokens_per_s == 950
    assert second.load == "concurrency" and second.concurrency == 32 and second.chips == 2
    assert second.output_tokens_per_s is None


def test_round_trip_csv_and_gzip(tmp_path: Path):
    rows = read_rows(FIXTURES / "schema_bom.csv")
    for name in ("out.csv", "out.csv.gz"):
        path = write_rows(rows, tmp_path / name)
        assert read_rows(path) == rows
    assert gzip.decompress((tmp_path / "out.csv.gz").read_bytes()).decode().splitlines()[0] == ",".join(COLUMNS)


def test_lengths_distribution_gives_the_means(tmp_path: Path):
    header = "id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,lengths,tpot_s"
    line = 'r1,mine,llama-3-8b,h100-sxm,bf16,bf16,bf16,vllm,static,4,"512:128:3,4096:512:1",0.01'
    path = write(tmp_path, header, line)
    row = read_rows(path)[0]
    # Weights 3:1 -> mean input (3*512 + 4096)/4 = 1408, mean output (3*128 + 512)/4 = 224.
    assert (row.mean_input_len, row.mean_output_len) == (1408.0, 224.0)


def test_rate_inf_is_allowed(tmp_path: Path):
    header = (
        "id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,arrival_rate,input_len,"
        "output_len,output_tokens_per_s"
    )
    row = read_rows(write(tmp_path, header, "r1,mine,llama-3-8b,h100-sxm,fp8,fp8,fp8,trtllm,rate,inf,128,128,2e4"))[0]
    assert math.isinf(row.arrival_rate) and "rate inf req/s" in row.conditions()
    assert "inf" in rows_csv([row]).splitlines()[1]


@pytest.mark.parametrize(
    ("header", "line", "expected"),
    [
        (
            HEADER,
            GOOD.replace(",bf16,bf16,bf16,", ",bf15,bf16,bf16,"),
            "row 2: column 'weight_dtype' is 'bf15'; allowed: fp32, tf32, bf16",
        ),
        (
            HEADER,
            GOOD.replace(",static,", ",burst,"),
            "row 2: column 'load' is 'burst'; allowed: static, concurrency, rate",
        ),
        (HEADER, GOOD.replace(",static,8,", ",static,,"), "row 2: column 'batch' is empty; load 'static' needs it"),
        (HEADER, GOOD.replace(",static,8,", ",static,8.5,"), "row 2: column 'batch' is '8.5'; allowed: a whole number"),
        (HEADER, GOOD.replace(",0.09", ",fast"), "row 2: column 'ttft_s' is 'fast'; allowed: a number > 0"),
        (HEADER, GOOD.replace(",0.09", ",-1"), "row 2: column 'ttft_s' is '-1'; allowed: a number > 0"),
        (HEADER, GOOD.replace(",0.09", ","), "row 2: no measured value"),
        (HEADER, GOOD.replace(",1024,", ",,"), "row 2: column 'input_len' is empty"),
        (HEADER, GOOD.replace("r1,", ","), "row 2: column 'id' is empty (required)"),
        (HEADER + ",speed", GOOD + ",3", "unknown column 'speed'"),
        (HEADER.replace("engine,", ""), GOOD.replace("vllm,", ""), "missing column 'engine'"),
    ],
)
def test_bad_rows_give_one_line(tmp_path: Path, header: str, line: str, expected: str):
    path = write(tmp_path, header, line)
    with pytest.raises(E2EError) as exc:
        read_rows(path)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_duplicate_id_names_both_rows(tmp_path: Path):
    with pytest.raises(E2EError, match=r"row 3: column 'id' is 'r1', already used in row 2"):
        read_rows(write(tmp_path, HEADER, GOOD, GOOD))


def test_bad_lengths_text(tmp_path: Path):
    header = "id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,lengths,tpot_s"
    path = write(tmp_path, header, "r1,mine,llama-3-8b,h100-sxm,bf16,bf16,bf16,vllm,static,4,512-128,0.01")
    with pytest.raises(E2EError, match=r"column 'lengths' is '512-128'; allowed: input:output\[:weight\]"):
        read_rows(path)


def test_missing_and_empty_files(tmp_path: Path):
    with pytest.raises(E2EError, match="cannot read file"):
        read_rows(tmp_path / "nope.csv")
    with pytest.raises(E2EError, match="empty file"):
        read_rows(write(tmp_path, ""))


def test_every_column_is_a_row_field():
    fields = set(E2ERow.__dataclass_fields__)
    assert fields == set(COLUMNS)
    assert {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p99_s", "itl_s", "e2e_s", "requests_per_s"} <= fields
