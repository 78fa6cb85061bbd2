"""The wrong answers of issue 14, each against a value derived by hand (not from the code's output).

LLaMA-3-8B: 8,030,261,248 parameters (Meta's model card), so 16,060,522,496 bytes in bf16; KV per
token 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes.  H100 SXM: 80 GB of
HBM at 3.35 TB/s, 989 TFLOP/s dense bf16 (NVIDIA datasheet), so a critical batch of 295.
"""

from __future__ import annotations

import json

import pytest

from roofline.core.fmt import format_seconds
from tests.inprocess import run_roofline

LLAMA3_8B_BYTES = 8_030_261_248 * 2
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def run_json(*args: str) -> dict:
    run = run_roofline(*args, "--json")
    assert run.code == 0, run.stderr
    return json.loads(run.stdout)


def test_serve_refuses_throughput_when_the_batch_does_not_fit():
    # Batch 1024 at the final context 1024 + 256 = 1280 tokens: 1024 x 1280 x 131,072 B = 171.8 GB of KV
    # on one 80 GB H100.  With all of HBM usable, max batch = floor((80e9 - 16.06e9) / (1280 x 131,072)) = 381.
    args = (
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "-i",
        "1024",
        "-o",
        "256",
        "-b",
        "1024",
        "--memory-utilization",
        "1",
    )
    data = run_json(*args)
    assert data["fits"] is False and data["tokens_per_s_per_chip"] is None
    assert data["max_batch"] == (80e9 - LLAMA3_8B_BYTES) // (1280 * KV_PER_TOKEN) == 381
    table = run_roofline(*args).stdout
    assert "none: batch 1024 does not fit" in table and "max batch 381" in table


def test_speculative_decoding_stops_paying_above_the_critical_batch():
    # gamma = 4 drafts at alpha = 0.7: (1 - 0.7^5) / 0.3 = 2.7731 tokens per target step.  The verify step
    # runs 5 tokens per sequence, so it stays memory-bound (about one plain step) below 295 / 5 = 59 and
    # speculation pays there; above the critical batch 295 the plain step is compute-bound and the verify
    # costs at least 5x its FLOPs, so the speedup is below 2.7731 / 5 x (plain / compute) < 1.  The batch
    # where it stops paying is therefore in (59, 295], and at 1024 it no longer pays.
    data = run_json(
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "-i",
        "64",
        "-o",
        "1",
        "-b",
        "1024",
        "--memory-utilization",
        "1",
        "--draft-model",
        "qwen2.5-0.5b",
        "--draft-len",
        "4",
        "--acceptance",
        "0.7",
    )
    spec = data["speculative"]
    assert spec["tokens_per_target_step"] == pytest.approx((1 - 0.7**5) / 0.3)
    assert spec["speedup"] < 1.0
    assert 989e12 / 3.35e12 / 5 < spec["break_even_batch"] <= 989e12 / 3.35e12
    assert "inf" not in spec["break_even_note"]
    small = run_json(
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "-i",
        "64",
        "-o",
        "1",
        "-b",
        "1",
        "--draft-model",
        "qwen2.5-0.5b",
        "--draft-len",
        "4",
        "--acceptance",
        "0.7",
    )
    assert small["speculative"]["speedup"] > 1.0


def test_shard_local_step_is_the_books_step_without_comms():
    # The book's problem 4 (book exercise model, int8, v5e 4x4, batch 32, 8192 context): the step without
    # communication is 6.64 ms and the activation collectives 2.304 ms; the local row must be the former.
    data = run_json(
        "shard",
        "--model",
        "book-exercise",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "16",
        "--topology",
        "4x4",
        "--batch",
        "32",
        "--context",
        "8192",
        "--weights",
        "int8",
        "--kv-dtype",
        "int8",
        "--compute-dtype",
        "int8",
    )
    assert data["local_step_time_s"] == pytest.approx(6.64e-3, rel=0.01)
    assert data["comms_time_s"] == pytest.approx(2.304e-3, rel=0.01)
    assert data["step_time_s"] == pytest.approx(max(data["local_step_time_s"], data["comms_time_s"]))


def test_network_bound_line_quotes_the_numbers_of_the_json():
    # tp 16 on H100s spans two 8-GPU NVLink domains.  Local work per chip at batch 1, context 8192:
    # (16.06e9 B of weights + 8192 x 131,072 B of KV) / 16 / 3.35e12 B/s = 0.3197 ms.
    data = run_json("step", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--chips", "16", "--tp", "16")
    local = (LLAMA3_8B_BYTES + 8192 * KV_PER_TOKEN) / 16 / 3.35e12
    assert data["local_step_time_s"] == pytest.approx(local, rel=1e-3)
    assert data["bound"] == "network" and data["comms_time_upper_s"] > data["local_step_time_s"]
    assert data["why"] == (
        f"network-bound: {format_seconds(data['comms_time_upper_s'])} of tp-16 activation "
        f"collectives exceed the {format_seconds(local)} of HBM and FLOPs work"
    )


def test_step_gives_no_throughput_when_it_does_not_fit():
    # LLaMA-2-13B on one 16 GiB v5e: 26.03 GB of weights + 6.71 GB of KV (8192 tokens) = 32.74 GB, over
    # 17.18 GB of HBM by 15.56 GB (the book's table: 26 GB + 6.7 GB).
    args = ("step", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--memory-utilization", "1")
    data = run_json(*args)
    assert data["fits"] is False
    assert data["overflow_bytes"] == pytest.approx(32.74e9 - 2**34, rel=1e-3)
    assert data["tokens_per_s"] is None and data["cost_per_million_tokens"] is None
    table = run_roofline(*args).stdout
    assert "none: does not fit" in table and "$ per million" not in table


def test_defaults_are_the_same_everywhere_and_said():
    # One context default (8192, the book's tables) in step, shard, diff and sweep; MFU and the serving
    # mode are said under the table.
    step = run_json("step", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    sweep = run_json("sweep", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "1", "--chips", "1")
    assert step["context"] == sweep["points"][0]["context"] == 8192
    shard = run_json("shard", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    assert shard["context"] == 8192
    out = run_roofline("request", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "128", "-o", "8").stdout
    assert "MFU 1 in prefill (the default, --mfu)" in " ".join(out.split())
    out = run_roofline("serve", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "128", "-o", "8").stdout
    assert "disaggregated (the default --mode)" in " ".join(out.split())
    for command in (
        ("step", "--model", "llama-3-8b", "--hardware", "h100-sxm"),
        ("sweep", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "1"),
        ("pareto", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "1"),
        ("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--qps", "1", "-i", "64", "-o", "8"),
        ("diff", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--with", "chips=2"),
    ):
        assert "assumes:" in run_roofline(*command).stdout, command


def test_aliases_keep_old_flags_working():
    base = ("--model", "llama-3-8b", "--hardware", "h100-sxm")
    a = run_json("diff", *base, "--b", "chips=2")
    b = run_json("diff", *base, "--with", "chips=2")
    assert a == b
    plan = ("plan", *base, "-i", "64", "-o", "8")
    assert run_json(*plan, "--qps", "2") == run_json(*plan, "--arrival-rate", "2")
    serve = ("serve", *base, "-i", "64", "-o", "8")
    assert run_json(*serve, "--arrival-rate", "2") == run_json(*serve, "--qps", "2")
    pareto = ("pareto", *base, "--batch", "1,8")
    assert run_json(*pareto, "-o", "cost-latency") == run_json(*pareto, "--objective", "cost-latency")
    version = run_roofline("--version")
    assert version.code == 0 and version.stdout.startswith("roofline ")
    assert "<bool>" not in run_roofline("step", "--help").stdout


def test_plan_and_pareto_write_csv(tmp_path):
    import csv

    plan_csv, pareto_csv = tmp_path / "plan.csv", tmp_path / "frontier.csv"
    base = ("--model", "llama-3-8b", "--hardware", "h100-sxm")
    plan = run_json("plan", *base, "--qps", "2", "-i", "64", "-o", "8", "--top", "3", "--csv", str(plan_csv))
    rows = list(csv.DictReader(plan_csv.open()))
    assert len(rows) == len(plan["candidates"]) == 3
    assert [float(r["dollars_per_hour"]) for r in rows] == [c["dollars_per_hour"] for c in plan["candidates"]]
    pareto = run_json("pareto", *base, "--batch", "1,8,64", "--csv", str(pareto_csv))
    rows = list(csv.DictReader(pareto_csv.open()))
    points = [p for groups in pareto["frontiers"].values() for pts in groups.values() for p in pts]
    assert len(rows) == len(points) and rows[0]["objective"] == "latency-throughput"
    assert {int(r["batch"]) for r in rows} == {p["batch"] for p in points}
