"""CLI contract of `roofline collective`, `shard`, `serve` and `step --tp`: keys, numbers, bad input."""

from __future__ import annotations

import re
import shlex

import pytest

from roofline.views.cli.collective import collective_command
from roofline.views.cli.serve import serve_command
from roofline.views.cli.shard import shard_command
from tests.conftest import run_cli, run_json

COLLECTIVE_KEYS = {"time_s", "time_upper_s", "bandwidth_time_s", "latency_time_s", "latency_bound"}


def test_collective_json_contract_and_the_books_threshold():
    # 8-way v5e ring (no wraparound below 16 chips): 360 kB -> 7 us either way; 131 kB latency-bound.
    out = run_json("collective", "--op", "allgather", "--bytes", "360 kB", "--hardware", "tpu-v5e", "--devices", "8")
    assert COLLECTIVE_KEYS <= set(out)
    assert out["bandwidth_time_s"] == pytest.approx(7e-6) and out["latency_time_s"] == pytest.approx(7e-6)
    assert out["latency_bound_below_bytes"] == pytest.approx(360e3)
    small = run_json("collective", "--op", "allreduce", "--bytes", "131072", "--hardware", "tpu-v5e", "--devices", "8")
    assert small["latency_bound"] is True and small["latency_time_s"] == pytest.approx(14e-6)


def test_collective_dcn_override():
    # 16 H100 = 2 NVLink domains; at 25e9 B/s per GPU the cross-node AllGather of 1e8/8 B over 2 nodes
    # takes 1.25e7·1/2 / 25e9 = 250 us, on top of 1e8·7/8 / 4.5e11 = 194.4 us inside the node.
    out = run_json(
        "collective",
        "--op",
        "allgather",
        "--bytes",
        "1e8",
        "--hardware",
        "h100-sxm",
        "--devices",
        "16",
        "--dcn-bandwidth",
        "25 GB/s",
    )
    assert out["bandwidth_time_s"] == pytest.approx(1e8 * 7 / 8 / 4.5e11 + 1.25e7 / 2 / 25e9)
    assert out["sources"]["dcn"] == "command line"


def test_collective_over_topology_axes():
    # 4x4x4 v5p (all axes wrap): AllGather of 64 MB over axis 0 only = 4 chips, 2 links of 9e10 B/s:
    # 64e6·3/4 / 1.8e11 = 266.7 us; 1.5 steps × 1 us.
    out = run_json(
        "collective",
        "--op",
        "allgather",
        "--bytes",
        "64e6",
        "--hardware",
        "tpu-v5p",
        "--topology",
        "4x4x4",
        "--axes",
        "0",
    )
    assert out["devices"] == 4
    assert out["bandwidth_time_s"] == pytest.approx(64e6 * 0.75 / 1.8e11)
    assert out["latency_time_s"] == pytest.approx(1.5e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (("--op", "gather", "--bytes", "1e6", "--hardware", "tpu-v5e", "--devices", "8"), "--op"),
        (("--op", "allgather", "--bytes", "lots", "--hardware", "tpu-v5e", "--devices", "8"), "--bytes"),
        (("--op", "allgather", "--bytes", "1e6", "--hardware", "h100-sxm", "--topology", "2x4"), "--topology"),
        (("--op", "allgather", "--bytes", "-5", "--hardware", "tpu-v5e", "--devices", "8"), "--bytes"),
    ],
)
@pytest.mark.slow
def test_collective_bad_input_is_one_line(args, message):
    proc = run_cli("collective", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_step_tp_and_topology_keys():
    out = run_json(
        "step",
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
    assert out["tp"] == 16
    assert out["comms_time_s"] == pytest.approx(2.304e-3)  # answer-key row p4-step-comms, derived there
    assert out["step_time_lower_s"] <= out["step_time_upper_s"]
    assert out["step_time_upper_s"] == pytest.approx(out["step_time_s"] + out["comms_time_upper_s"])
    proc = run_cli("step", "--model", "book-exercise", "--hardware", "tpu-v5e", "--chips", "8", "--tp", "3")
    assert proc.returncode == 2 and "--tp 3" in proc.stderr and proc.stdout == ""


def test_shard_json():
    out = run_json(
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
    )
    # β = 8.2e11 / (2 links · 4.5e10) = 9.11; F/(B·β) = 16384/(32·9.11) = 56.2.
    assert out["beta"] == pytest.approx(9.111, rel=1e-3)
    assert out["max_tp_decode"] == pytest.approx(56.2, rel=1e-3)
    assert out["kv_head_shards"] == 8 and out["kv_batch_shards"] == 2
    assert out["weight_stationary_2d_crossover_chips"] == pytest.approx(72)
    assert out["moe"] is None
    moe = run_json(
        "shard",
        "--model",
        "book-exercise-moe",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "128",
        "--batch",
        "32",
        "--weights",
        "int8",
        "--expert-ways",
        "16",
    )
    assert moe["moe"]["smallest_slice_chips"] == 16 and moe["moe"]["model_ways"] == 8


def test_serve_json_modes_and_extras():
    out = run_json(
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--mode",
        "disaggregated",
        "-i",
        "1024",
        "-o",
        "256",
        "-b",
        "32",
        "--arrival-rate",
        "10",
        "--prefix-len",
        "512",
        "--draft-model",
        "qwen2.5-0.5b",
        "--draft-len",
        "4",
        "--acceptance",
        "0.7",
    )
    assert {"ttft_s", "tpot_s", "tokens_per_s_per_chip", "prefill_to_decode_ratio"} <= set(out)
    assert out["continuous"]["chips_needed"] >= 2
    assert out["prefix_cache"]["ttft_with_cache_s"] < out["prefix_cache"]["ttft_without_cache_s"]
    # α = 0.7, γ = 4: (1 - 0.7^5)/0.3 = 2.7731.
    assert out["speculative"]["tokens_per_target_step"] == pytest.approx(2.7731, rel=1e-4)
    proc = run_cli(
        "serve", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--mode", "batched", "-i", "10", "-o", "10"
    )
    assert proc.returncode == 2 and "--mode" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("func", [collective_command, shard_command, serve_command])
def test_help_example_runs_as_shown(func):
    # The docstring is the --help text; its Example line must run as written.
    match = re.search(r"Example: (roofline [^\n]+)", func.__doc__ or "")
    assert match, func.__doc__
    args = shlex.split(match.group(1))[1:]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr


def test_collective_uses_the_profiles_fitted_collective():
    # A calibrated profile's fitted NCCL/custom all-reduce replaces the spec sheet's ring estimate;
    # the spec-sheet figure stays in spec_time_s.  8-GPU all-reduce of 1 MB on H100.
    spec = run_json("collective", "--op", "allreduce", "--bytes", "1e6", "--devices", "8", "--hardware", "h100-sxm")
    cal = run_json("collective", "--op", "allreduce", "--bytes", "1e6", "--devices", "8", "--hardware", "h100-sxm-cal")
    assert spec["sources"]["hardware"].startswith("spec sheet")
    assert cal["sources"]["hardware"].startswith("calibrated profile (allreduce")
    assert cal["time_s"] != spec["time_s"] and cal["spec_time_s"] == pytest.approx(spec["time_upper_s"])
    # Measured (shared/measurements aiconfigurator h100 NCCL): an 8-GPU 1 MB all-reduce takes tens of us.
    assert 5e-6 < cal["time_s"] < 1e-4


def test_request_and_serve_report_tp_collectives_and_fit():
    req = run_json(
        "request",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--chips",
        "8",
        "--tp",
        "8",
        "-i",
        "2048",
        "-o",
        "128",
    )
    assert req["prefill_comms_s"] > 0 and req["decode_comms_s"] > 0 and req["fits"] is True
    assert {"gemm", "attention_decode", "attention_prefill", "collective", "overhead"} <= set(req["sources"])
    srv = run_json(
        "serve",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--chips",
        "8",
        "--tp",
        "8",
        "--mode",
        "interleaved",
        "-i",
        "2048",
        "-o",
        "128",
        "-b",
        "16",
    )
    assert srv["prefill_comms_s"] > 0 and srv["decode_comms_s"] > 0 and srv["fits"] is True
    # Llama-3-8B at batch 1024 and 2048+512 tokens needs 16.1 GB + 1024 x 0.34 GB: no throughput on one H100.
    big = run_json(
        "serve",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--mode",
        "interleaved",
        "-i",
        "2048",
        "-o",
        "512",
        "-b",
        "1024",
    )
    assert big["fits"] is False and big["tokens_per_s_per_chip"] is None
