"""Importers into the end-to-end schema: a hand-made vLLM result and slices of the shared tables."""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from roofline.calibrate.engine.data import build, load_shipped
from roofline.calibrate.engine.importers import ImportOptions, import_file
from roofline.calibrate.engine.schema import COLUMNS, E2EError, read_rows
from roofline.core.errors import OptionError, RooflineError

from .conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "e2e"
H100 = ImportOptions(hardware="h100-sxm")


def shared_measurements() -> Path | None:
    """The shared public tables: $ROOFLINE_SHARED_MEASUREMENTS, ../shared or ./shared."""
    candidates = [
        os.environ.get("ROOFLINE_SHARED_MEASUREMENTS", ""),
        REPO.parent / "shared" / "measurements",
        REPO / "shared" / "measurements",
    ]
    for c in candidates:
        if c and (Path(c) / "published_tables").is_dir() and (Path(c) / "splitwise-sim").is_dir():
            return Path(c)
    return None


SHARED = shared_measurements()
needs_shared = pytest.mark.skipif(
    SHARED is None,
    reason="public tables not found at ../shared/measurements "
    "(set ROOFLINE_SHARED_MEASUREMENTS); the shipped rows are tested instead",
)


def slice_of(rel: str, tmp_path: Path, keep) -> Path:
    """A copy of a shared table with only the rows ``keep(row)`` accepts."""
    src = SHARED / rel
    with open(src, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [r for r in reader if keep(r)]
        header = reader.fieldnames
    out = tmp_path / src.name
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return out


# --------------------------------------------------------------------------- vLLM bench serve


def test_vllm_concurrency_result():
    (row,) = import_file(FIXTURES / "vllm_concurrency16.json", options=H100)
    # The fixture's fields, ms -> s; lengths = totals / completed = 204800 / 200, 25600 / 200.
    assert row.model == "llama-3.1-8b"  # from model_id meta-llama/Llama-3.1-8B-Instruct
    assert (row.hardware, row.tp, row.weight_dtype, row.kv_dtype, row.compute_dtype) == (
        "h100-sxm",
        1,
        "bf16",
        "bf16",
        "bf16",
    )
    assert (row.load, row.concurrency, row.num_requests) == ("concurrency", 16, 200)
    assert (row.input_len, row.output_len) == (1024, 128)
    assert row.ttft_s == pytest.approx(0.0452) and row.ttft_p50_s == pytest.approx(0.0418)
    assert row.ttft_p99_s == pytest.approx(0.0885) and row.ttft_p90_s is None
    assert row.tpot_s == pytest.approx(0.00805) and row.tpot_p99_s == pytest.approx(0.00912)
    assert row.itl_s == pytest.approx(0.00804) and row.e2e_s is None
    assert (row.output_tokens_per_s, row.requests_per_s) == (1910.4, 14.925)
    assert (row.engine, row.source) == ("vllm", "vllm-bench-serve")


def test_vllm_jsonl_rates_and_percentiles():
    opt = ImportOptions(hardware="h200", tp=2, weights="fp8", engine_version="0.10.1", license="CC-BY-4.0")
    rows = import_file(FIXTURES / "vllm_rates.jsonl", "vllm", opt)
    assert [r.id for r in rows] == ["vllm_rates/1", "vllm_rates/2"]
    assert [r.arrival_rate for r in rows] == [2.0, 4.0] and {r.load for r in rows} == {"rate"}
    first = rows[0]
    assert first.model == "qwen3-32b"
    # fp8 weights: KV stays bf16 (vLLM's kv-cache-dtype auto), the matmuls run in fp8.
    assert (first.tp, first.weight_dtype, first.kv_dtype, first.compute_dtype) == (2, "fp8", "bf16", "fp8")
    assert (first.ttft_p50_s, first.ttft_p90_s, first.ttft_p99_s) == pytest.approx((0.110, 0.160, 0.240))
    assert (first.tpot_p50_s, first.tpot_p90_s, first.tpot_p99_s) == pytest.approx((0.0245, 0.027, 0.030))
    assert first.e2e_s == pytest.approx(6.495)
    assert (first.input_len, first.output_len) == (512, 256)
    assert (first.engine_version, first.license) == ("0.10.1", "CC-BY-4.0")


def test_vllm_detailed_lengths_become_a_distribution():
    (row,) = import_file(FIXTURES / "vllm_detailed.json", options=H100)
    assert row.model == "llama-2-7b"  # from the path /models/llama-2-7b-hf
    assert row.lengths == "512:128:3,4096:512:1"
    assert (row.input_len, row.output_len) == (5632 / 4, 896 / 4)


def test_vllm_options_override_the_file():
    opt = ImportOptions(hardware="h100-sxm", model="llama-3-8b", input_len=1000, output_len=100, source="lab")
    (row,) = import_file(FIXTURES / "vllm_concurrency16.json", options=opt)
    assert (row.model, row.input_len, row.output_len, row.source) == ("llama-3-8b", 1000, 100, "lab")


@pytest.mark.parametrize(
    ("name", "opt", "expected"),
    [
        ("vllm_concurrency16.json", ImportOptions(), "does not say which hardware ran it; pass hardware=NAME"),
        ("not_vllm.json", H100, "key 'completed' is None"),
        ("vllm_concurrency16.json", ImportOptions(hardware="h100-sxm", weights="fp9"), "weights is 'fp9'"),
    ],
)
def test_vllm_errors_are_one_line(name: str, opt: ImportOptions, expected: str):
    with pytest.raises(RooflineError) as exc:
        import_file(FIXTURES / name, options=opt)
    assert expected in str(exc.value) and "\n" not in str(exc.value)


def test_vllm_unknown_model_id_asks_for_model(tmp_path: Path):
    path = tmp_path / "r.json"
    path.write_text(
        (FIXTURES / "vllm_concurrency16.json")
        .read_text()
        .replace("meta-llama/Llama-3.1-8B-Instruct", "acme/Widget-9B"),
        encoding="utf-8",
    )
    with pytest.raises(E2EError, match=r"model_id 'acme/Widget-9B' is not a built-in model.*pass model=NAME") as exc:
        import_file(path, options=H100)
    assert exc.value.parameters == ("model",)  # the CLI names its flag instead
    cli = run_cli("e2e", "import", str(path), "--hardware", "h100-sxm", "--out", str(tmp_path / "x.csv"))
    assert cli.returncode == 2 and "pass --model NAME, YAML or config.json" in cli.stderr
    assert not (tmp_path / "x.csv").exists()


def test_malformed_json_and_unknown_csv(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(E2EError, match="malformed JSON at line 1"):
        import_file(bad, options=H100)
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(E2EError, match="cannot tell the format from the header.*; pass fmt=, one of: vllm"):
        import_file(odd)
    with pytest.raises(OptionError, match="^fmt is 'nope'; allowed: auto, vllm"):
        import_file(odd, "nope")


def test_cli_names_the_format_flag(tmp_path: Path):
    # The Python API names import_file's fmt parameter; the CLI shows its --format flag.
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n", encoding="utf-8")
    out = str(tmp_path / "x.csv")
    cli = run_cli("e2e", "import", str(odd), "--out", out)
    assert (
        cli.returncode == 2 and "cannot tell the format from the header (a, b...); pass --format, one of:" in cli.stderr
    )
    cli = run_cli("e2e", "import", str(odd), "--format", "nope", "--out", out)
    assert cli.returncode == 2 and "error: --format is 'nope'; allowed: auto, vllm" in cli.stderr


def test_schema_files_pass_through():
    assert import_file(FIXTURES / "schema_bom.csv") == read_rows(FIXTURES / "schema_bom.csv")


# --------------------------------------------------------------------------- shared tables

STATIC = "published_tables/trtllm_static_batch_throughput_v0.5_v0.6.1.csv"


@needs_shared
def test_trtllm_static_units(tmp_path: Path):
    path = slice_of(STATIC, tmp_path, lambda r: r["model"] in ("LLaMA-70B", "Falcon-180B"))
    rows = {r.id: r for r in import_file(path)}
    # Published: v0.6.1 LLaMA-70B H100 FP8 TP2 batch 1024 128/128: 2657 out tok/s/GPU -> x2 GPUs.
    h100 = rows["trtllm-static/0.6.1/llama-2-70b/h100-sxm/fp8/tp2/b1024/i128-o128"]
    assert h100.output_tokens_per_s == 2 * 2657 and h100.load == "static" and h100.batch == 1024
    assert (h100.weight_dtype, h100.kv_dtype, h100.engine, h100.license) == ("fp8", "fp8", "trtllm", "Apache-2.0")
    # v0.6.1 A100 Falcon-180B TP8 batch 1024: 232 "out tok/s", read as per GPU -> x8.
    a100 = rows["trtllm-static/0.6.1/falcon-180b/a100-80gb/fp16/tp8/b1024/i128-o128"]
    assert a100.output_tokens_per_s == 8 * 232 and a100.weight_dtype == "fp16"
    # v0.5.0 LLaMA-70B H100 TP4 batch 64 128/128: 3317 out tok/s total (not multiplied).
    assert rows["trtllm-static/0.5.0/llama-2-70b/h100-sxm/fp8/tp4/b64/i128-o128"].output_tokens_per_s == 3317


@needs_shared
def test_trtllm_first_token(tmp_path: Path):
    path = slice_of(
        "published_tables/trtllm_first_token_latency_bs1_v0.5.csv", tmp_path, lambda r: r["model"] == "LLaMA-70B"
    )
    rows = {r.id: r for r in import_file(path)}
    assert len(rows) == 4
    # Published: LLaMA-70B H100 FP8 TP4, ISL 2048, batch 1: 109 ms to the first token.
    row = rows["trtllm-first-token/0.5.0/llama-2-70b/h100-sxm/fp8/tp4/b1/i2048"]
    assert row.ttft_s == pytest.approx(0.109) and (row.batch, row.output_len, row.tp) == (1, 1, 4)


@needs_shared
def test_trtllm_perf_overview(tmp_path: Path):
    path = slice_of(
        "published_tables/trtllm_perf_overview_v1.0_total_output_tps.csv",
        tmp_path,
        lambda r: r["model"] == "Llama-3.3-70B" and r["isl"] == "128" and r["osl"] == "128",
    )
    rows = {r.hardware: r for r in import_file(path)}
    assert set(rows) == {"b200", "gb200", "h200", "h100-sxm"}  # gb200 imported; not shipped (no profile)
    # Published: H100 TP2 FP8 128/128: 6378 total output tok/s on 2 GPUs.
    h100 = rows["h100-sxm"]
    assert (h100.output_tokens_per_s, h100.tp, h100.dp, h100.load) == (6378, 2, 1, "rate")
    assert math.isinf(h100.arrival_rate) and h100.engine_version == "1.0"
    assert (rows["b200"].weight_dtype, rows["b200"].compute_dtype) == ("fp4", "fp4")


@needs_shared
def test_splitwise_means_of_repeats(tmp_path: Path):
    path = slice_of(
        "splitwise-sim/data/perf_model.csv",
        tmp_path,
        lambda r: (
            r["model"] == "llama2-70b"
            and r["prompt_size"] == "512"
            and r["token_size"] == "128"
            and r["batch_size"] in ("1", "64")
        ),
    )
    rows = {r.id: r for r in import_file(path)}
    # Five repeats of llama2-70b h100-80gb TP4, prompt 512, batch 1, 128 tokens (prompt_time, token_time ms);
    # the file lists them three times (three sweeps share the point): each counted once.
    prompt = [59.55572199309245, 59.71699999645352, 59.61944203590974, 59.7486529732123, 59.2526649706997]
    token = [29.762305037895818, 29.26659482709081, 29.738654877062828, 29.54404005335321, 29.7180637341418]
    row = rows["splitwise-sim/llama-2-70b/h100-sxm/tp4/b1/i512-o128"]
    assert row.ttft_s == pytest.approx(sum(prompt) / 5 / 1e3)
    assert row.tpot_s == pytest.approx(sum(token) / 5 / 1e3)
    assert (row.batch, row.weight_dtype, row.license) == (1, "fp16", "MIT")
    assert not any("pcap" in i for i in rows)  # derived hardware, not measured
    assert "splitwise-sim/llama-2-70b/h100-sxm/tp2/b64/i512-o128" not in rows  # README: anomalous
    assert "splitwise-sim/llama-2-70b/h100-sxm/tp4/b64/i512-o128" in rows


@needs_shared
def test_shipped_rows_are_the_converted_tables():
    built = build(SHARED)
    shipped = {p: read_rows(Path(__file__).resolve().parent.parent / "roofline" / "data" / "e2e" / p) for p in built}
    assert built == shipped, "rebuild with: python -m roofline.calibrate.engine.data ../shared/measurements"


def test_shipped_rows_have_sources_and_licences():
    rows = load_shipped()
    assert len(rows) == 331  # 25 GB200 perf-overview rows since gb200 is in the catalog; 6 vLLM load stages
    vllm = [r for r in rows if r.source == "vllm-serving-h100"]
    assert len(vllm) == 6 and all("redistributable" in r.license for r in vllm)
    assert all(r.reference and r.license in ("Apache-2.0", "MIT") for r in rows if r not in vllm)
    assert len({r.id for r in rows}) == len(rows)


# --------------------------------------------------------------------------- SGLang, genai-perf, aiperf, inference-perf


def test_sglang_bench_serving_jsonl():
    # Two runs appended by `python -m sglang.bench_serving --output-file` (keys as its bench_serving.py writes):
    # one at concurrency 32 with request_rate Infinity, one at 4 req/s; lengths = total tokens / completed.
    conc, rate = import_file(FIXTURES / "sglang_bench_serving.jsonl", options=replace(H100, model="llama-3.1-8b"))
    assert (conc.engine, conc.load, conc.concurrency, conc.source) == (
        "sglang",
        "concurrency",
        32,
        "sglang-bench-serving",
    )
    assert (rate.load, rate.arrival_rate, rate.engine) == ("rate", 4.0, "sglang")
    assert conc.input_len == 327680 / 320 == 1024 and conc.output_len == 256
    assert conc.ttft_s == pytest.approx(0.1834) and conc.ttft_p50_s == pytest.approx(0.1712)
    assert conc.ttft_p99_s == pytest.approx(0.3015) and conc.tpot_s == pytest.approx(0.01538)
    assert conc.itl_p99_s == pytest.approx(0.0304) and conc.e2e_s == pytest.approx(4.1052)
    assert conc.e2e_p50_s == pytest.approx(4.0987) and conc.output_tokens_per_s == pytest.approx(1988.3)


def test_genai_perf_and_aiperf_exports():
    # genai-perf: metric blocks at the top, the CLI args under input_config (concurrency 4).
    (g,) = import_file(FIXTURES / "genai_perf_profile_export_genai_perf.json", options=H100)
    assert (g.source, g.load, g.concurrency, g.model, g.engine) == (
        "genai-perf",
        "concurrency",
        4,
        "llama-3.1-8b",
        "unknown",
    )
    assert g.ttft_s == pytest.approx(0.0421) and g.ttft_p90_s == pytest.approx(0.0498)
    assert g.itl_s == pytest.approx(0.0106) and g.e2e_p99_s == pytest.approx(1.4329)
    assert (g.input_len, g.output_len, g.output_tokens_per_s) == (550.0, 128.0, 367.4)
    # aiperf: schema_version, the load nested in input_config.loadgen (10 req/s), 3 errored requests.
    (a,) = import_file(FIXTURES / "aiperf_profile_export_aiperf.json", options=replace(H100, engine="vllm"))
    assert (a.source, a.load, a.arrival_rate, a.engine, a.num_requests, a.num_failed) == (
        "aiperf",
        "rate",
        10.0,
        "vllm",
        500,
        3,
    )
    assert a.ttft_p50_s == pytest.approx(0.17505) and a.e2e_s == pytest.approx(2.4135)


@pytest.mark.parametrize(("value", "shown"), [("NaN", "nan"), ("-12.5", "-12.5"), ('"fast"', "'fast'")])
def test_a_bad_latency_names_the_file_object_and_field(tmp_path, value, shown):
    text = (FIXTURES / "sglang_bench_serving.jsonl").read_text().splitlines()
    text[1] = text[1].replace('"mean_ttft_ms": 61.2', f'"mean_ttft_ms": {value}')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(text))
    with pytest.raises(E2EError, match=rf"bad.jsonl: object 2: key 'mean_ttft_ms' is {shown}; allowed: a number > 0"):
        import_file(path, options=replace(H100, model="llama-3.1-8b"))
    run = run_cli(
        "e2e",
        "import",
        str(path),
        "--hardware",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--out",
        str(tmp_path / "x.csv"),
    )
    assert run.returncode == 2 and "mean_ttft_ms" in run.stderr and "object 2" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()


def test_inference_perf_summary_stage_rows_by_hand():
    # The shared vLLM runs' codegen experiment, stage 1: 5 req/s for 600 s, 3000 requests, configured output 247.
    src = SHARED / "vllm-serving-h100" / "llama-2-7b.json" if SHARED else None
    if src is None:
        pytest.skip("shared measurements not found")
    rows = import_file(src)
    assert len(rows) == 6 and {r.engine for r in rows} == {"vllm"} and rows[0].engine_version == "0.15.1"
    r = rows[0]
    assert (r.model, r.hardware, r.tp, r.weight_dtype, r.arrival_rate, r.duration_s) == (
        "llama-2-7b",
        "h100-sxm",
        1,
        "fp16",
        5.0,
        600.0,
    )
    assert (r.max_num_batched_tokens, r.max_num_seqs, r.output_len) == (2048, 128, 247.0)
    # TPOT = (E2E - TTFT) / (247 - 1) = (1810.322 - 25.037) ms / 246 = 7.2573 ms
    assert r.tpot_s == pytest.approx((1.8103224114763325 - 0.025036599272001393) / 246, rel=1e-12)
    # hits: a pool of 11 x 4 = 44 prompts over 3000 requests, 16-token blocks, mean prompt 591.63:
    # (1 - 44/3000) x (1 - 8.5/591.63) = 0.97118; the second stage is warm: 1 - 8.5/591.63 = 0.98563.
    assert r.prefix_hit_rate == pytest.approx((1 - 44 / 3000) * (1 - 8.5 / 591.63), rel=1e-9)
    assert rows[1].prefix_hit_rate == pytest.approx(1 - 8.5 / 591.63, rel=1e-9)
    # the overloaded reasoning run: 732 succeeded, 4068 failed at the client timeout
    over = [x for x in rows if "reasoning" in x.id][0]
    assert (over.num_requests, over.num_failed) == (732, 4068)


def test_old_csv_without_the_new_columns_still_loads(tmp_path):
    old = (REPO / "tests" / "fixtures" / "e2e" / "schema_bom.csv").read_text(encoding="utf-8-sig")
    assert "prefix_hit_rate" not in old.splitlines()[0]
    (row, *_) = read_rows(FIXTURES / "schema_bom.csv")
    assert row.prefix_hit_rate is None and row.max_num_seqs is None and row.num_failed is None


@pytest.mark.parametrize(
    ("model_id", "name"),
    [
        ("meta-llama/Llama-2-7b-hf", "llama-2-7b"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),  # version suffix after the variant
        ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
        ("Qwen/Qwen3-32B", "qwen3-32b"),
    ],
)
def test_hugging_face_ids_name_their_built_in_model(model_id: str, name: str):
    from roofline.calibrate.engine.vllm_results import vllm_model_name

    assert vllm_model_name(model_id, "x.json") == name


@pytest.mark.parametrize(
    ("fixture", "key", "values", "shown"),
    [
        ("vllm_detailed.json", "ttfts", [0.021, math.nan, 0.14, 0.022], "nan"),
        ("vllm_detailed.json", "ttfts", [0.021, -0.02, 0.14, 0.022], "-0.02"),
        ("vllm_detailed.json", "itls", [[0.01], [0.01, -1e-3], [], [0.02]], "-0.001"),
        ("sglang_bench_serving.jsonl", "ttfts", [0.2, math.inf], "inf"),
    ],
)
def test_a_bad_per_request_latency_names_the_key_and_request(tmp_path, fixture, key, values, shown):
    # Detailed results (vLLM --save-detailed, SGLang --output-details) list each request's latencies; a NaN or
    # negative one used to be read without a word.
    obj = json.loads(
        (FIXTURES / fixture).read_text().splitlines()[0]
        if fixture.endswith(".jsonl")
        else (FIXTURES / fixture).read_text()
    )
    obj[key] = values
    path = tmp_path / f"bad{Path(fixture).suffix}"
    path.write_text(json.dumps(obj))  # NaN and Infinity as Python's json writes them (and the tools do)
    out = tmp_path / "x.csv"
    run = run_cli("e2e", "import", str(path), "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--out", str(out))
    assert run.returncode == 2, run.stderr
    assert (
        f"bad{Path(fixture).suffix}: key '{key}' (request 2) is {shown}; allowed: seconds in [0, 1e+07]" in run.stderr
    )
    assert len(run.stderr.strip().splitlines()) == 1 and not out.exists() and not run.stdout.strip()


@pytest.mark.parametrize(
    "command",
    [
        ("e2e", "import", "{rows}", "--out", "{out}"),
        ("validate", "--rows", "{rows}", "--json"),
        ("calibrate", "fit", "{rows}", "--hardware", "h100-sxm", "--out", "{out}"),
    ],
)
def test_a_file_with_a_header_and_no_rows_is_refused(tmp_path, command):
    # e2e import used to blame 'the imported rows: missing column id', validate scored 0 cases and exited 0,
    # calibrate fit said the rows were on no chip.
    rows, out = tmp_path / "runs.csv", tmp_path / "out.yaml"
    rows.write_text(",".join(COLUMNS) + "\n")
    run = run_cli(*(a.format(rows=rows, out=out) for a in command))
    assert run.returncode == 2, (run.stdout[-300:], run.stderr)
    assert f"{rows}: no data rows after the header; allowed: at least one row" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not run.stdout.strip() and not out.exists()
