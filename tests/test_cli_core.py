"""The core CLI contract: JSON keys, the book's numbers, bad input -> one line and exit 2."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, run_json

STEP_KEYS = {
    "param_count",
    "active_param_count",
    "param_bytes",
    "kv_bytes_per_token",
    "kv_bytes",
    "total_bytes",
    "hbm_capacity_bytes",
    "fits",
    "max_batch",
    "min_chips",
    "critical_batch",
    "step_time_s",
    "min_step_time_s",
    "tokens_per_s",
    "tokens_per_s_per_chip",
    "bound",
    # added by the step model: usable memory and the parallelism, both bounds always present
    "usable_hbm_bytes",
    "pp",
    "ep",
    "step_time_lower_s",
    "step_time_upper_s",
    "sources",
}
TERM_SOURCES = {"gemm", "attention_decode", "attention_prefill", "collective", "overhead"}


def test_step_json_contract_and_book_numbers(tmp_path):
    out = run_json(
        "step",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "8",
        "--batch",
        "16",
        "--context",
        "8192",
        "--memory-utilization",
        "1",
        cwd=tmp_path,
    )
    assert STEP_KEYS <= set(out) and TERM_SOURCES <= set(out["sources"])
    assert all(out["sources"][k].startswith(("spec sheet", "none")) for k in TERM_SOURCES)
    assert out["usable_hbm_bytes"] == out["hbm_capacity_bytes"]  # the book's accounting: all of HBM
    assert out["step_time_s"] == pytest.approx(20.3e-3, rel=0.005)  # the book's table
    assert out["tokens_per_s"] == pytest.approx(788, rel=0.005)
    assert out["tokens_per_s_per_chip"] == pytest.approx(788 / 8, rel=0.005)
    assert out["bound"] == "memory" and out["fits"] is True and out["critical_batch"] == pytest.approx(240, rel=0.01)


def test_step_not_fitting_is_reported_not_an_error():
    out = run_json(
        "step",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "8",
        "--batch",
        "64",
        "--context",
        "8192",
        "--memory-utilization",
        "1",
    )
    assert out["fits"] is False
    assert out["overflow_bytes"] == pytest.approx(out["total_bytes"] - out["hbm_capacity_bytes"])


def test_default_memory_utilization_is_what_an_engine_can_use():
    # Hand derivation: 8 x 16 GiB = 137.44 GB physical; x 0.9 = 123.69 GB, minus activations of 16 tokens
    # 16·((2·5120 + 2·13824)·2 B + 32000·4 B) = 3.26 MB.  Weights 26.03 GB + KV 16 x 6.71 GB = 133.4 GB
    # fit the whole HBM (the book's table) but not the 0.9 an engine may use.
    out = run_json(
        "step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--chips", "8", "--batch", "16", "--context", "8192"
    )
    assert out["usable_hbm_bytes"] == pytest.approx(
        8 * 16 * 2**30 * 0.9 - 16 * (2 * 5120 + 2 * 13824) * 2 - 16 * 32000 * 4
    )
    assert out["fits"] is False and out["tokens_per_s"] is None  # no throughput for what does not fit
    assert out["max_batch"] == 14  # floor((123.69 GB - 26.03 GB) / (6.71 GB + 0.2 MB)) = 14


def test_step_int8_weights_halve_critical_batch():
    out = run_json("step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--weights", "int8")
    assert out["critical_batch"] == pytest.approx(120, rel=0.01)


def test_textbook_json_all_pass():
    rows = run_json("textbook")
    assert rows and all(r["pass"] for r in rows)
    assert {"id", "description", "expected", "computed", "unit", "rel_error", "tolerance", "pass"} <= set(rows[0])


def test_request_json():
    out = run_json(
        "request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--input-len", "2048", "--output-len", "256"
    )
    assert out["latency_s"] == pytest.approx(out["ttft_s"] + out["decode_time_s"])
    assert out["no_cache_latency_s"] > out["latency_s"]


def test_catalog_commands(tmp_path):
    names = {h["name"] for h in run_json("hardware", "list", cwd=tmp_path)}
    assert {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "a100-80gb", "h100-sxm", "h200", "b200"} <= names
    shown = run_json("model", "show", "llama-2-13b")
    assert shown["derived"]["kv_bytes_per_token_bf16"] == 819_200


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("step", "--model", "llama-2-31b", "--hardware", "tpu-v5e"), "did you mean"),
        (("step", "--model", "llama-2-13b", "--hardware", "tpu-v5x"), "tpu-v5e"),
        (("step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--weights", "int3"), "--weights"),
        (("step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--batch", "-4"), "--batch"),
        (("step", "--model", "llama-2-13b", "--hardware", "h100-sxm", "--compute-dtype", "fp4"), "fp4"),
        (("step", "--model", "missing.yaml", "--hardware", "tpu-v5e"), "no such file"),
    ],
)
@pytest.mark.slow
def test_bad_input_one_line_exit_2(args, fragment):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_malformed_model_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnum_layers: -3\n")
    proc = run_cli("model", "show", str(bad))
    assert proc.returncode == 2 and "num_layers" in proc.stderr and str(bad) in proc.stderr
