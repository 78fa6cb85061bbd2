"""CLI audit: results that do not fit carry no cost, flags that would be ignored are refused, and
every refusal is one line naming the flag or the file, the field and what is allowed (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.inprocess import assert_refused, run_roofline

M8, H100 = ("--model", "llama-3-8b"), ("--hardware", "h100-sxm")


def run_json(*args: str) -> dict:
    run = run_roofline(*args, "--json")
    assert run.code == 0, run.stderr
    return json.loads(run.stdout)


def test_diff_says_which_side_fits_and_prices_only_those():
    # 70B on 4 H100 at batch 64, context 8192: 141 GB of bf16 weights + 172 GB of bf16 KV > 4 x 80 GB x 0.9;
    # int8 KV halves the KV to 86 GB, which fits.  step gives the fitting rule; diff must agree with it.
    args = ("--model", "llama-3-70b", *H100, "--chips", "4", "--batch", "64")
    step_a = run_json("step", *args)
    step_b = run_json("step", *args, "--kv-dtype", "int8")
    assert (step_a["fits"], step_b["fits"]) == (False, True)
    diff = run_json("diff", *args, "--b", "kv_dtype=int8")
    assert (diff["fits_a"], diff["fits_b"]) == (False, True)
    assert diff["cost_a"] is None and step_a["cost_per_million_tokens"] is None
    assert diff["cost_b"] == step_b["cost_per_million_tokens"]
    assert diff["cost_delta_from_price_chips_batch"] is None
    assert all(t["cost_delta"] is None for t in diff["terms"])
    assert diff["step_a_s"] > diff["step_b_s"] > 0  # step times are still reported, as step does
    table = run_roofline("diff", *args, "--b", "kv_dtype=int8")
    assert table.code == 0 and "A does not fit" in table.stdout and "$1.2" not in table.stdout


def test_diff_both_fit_keeps_the_costs():
    diff = run_json("diff", *M8, *H100, "--b", "chips=2")
    assert diff["fits_a"] is True and diff["fits_b"] is True
    assert diff["cost_a"] > 0 and diff["cost_b"] > 0
    assert all(isinstance(t["cost_delta"], float) for t in diff["terms"])


SERVE = ("serve", *M8, *H100, "-i", "10", "-o", "10")


@pytest.mark.parametrize(
    "partial",
    [
        ("--draft-model", "qwen2.5-0.5b"),
        ("--acceptance", "0.5"),
        ("--draft-len", "4"),
        ("--draft-model", "qwen2.5-0.5b", "--draft-len", "4"),
        ("--draft-len", "4", "--acceptance", "0.5"),
        ("--draft-model", "qwen2.5-0.5b", "--acceptance", "0.5"),
    ],
)
def test_serve_refuses_any_partial_set_of_speculative_flags(partial):
    assert_refused(run_roofline(*SERVE, *partial), "--draft-model", "--draft-len", "--acceptance", "together")


def test_serve_all_three_speculative_flags_work():
    out = run_json(*SERVE, "--draft-model", "qwen2.5-0.5b", "--draft-len", "4", "--acceptance", "0.5")
    # E[tokens per target step] = (1 - α^(γ+1)) / (1 - α) = (1 - 0.5^5) / 0.5 = 1.9375 (Leviathan et al. 2023)
    assert out["speculative"]["tokens_per_target_step"] == pytest.approx(1.9375)


SIMULATE = ("simulate", *M8, *H100, "-i", "64", "-o", "8", "--requests", "20")


@pytest.mark.parametrize(
    "args, flag, needed",
    [
        ((*SERVE, "--prefix-hit-rate", "0.3"), "--prefix-hit-rate", "--prefix-len"),
        ((*SERVE, "--num-prefixes", "5"), "--num-prefixes", "--prefix-len"),
        ((*SERVE, "--prefix-store", "host"), "--prefix-store", "--prefix-len"),
        ((*SERVE, "--prefix-hit-rate", "1"), "--prefix-hit-rate", "--prefix-len"),  # the default value, but given
        ((*SIMULATE, "--qps", "1", "--think-time", "1"), "--think-time", "--concurrency"),
        ((*SIMULATE, "--qps", "1", "--think-time", "0"), "--think-time", "--concurrency"),
        ((*SIMULATE, "--concurrency", "2", "--cv", "3"), "--cv", "--arrival-rate"),
        (
            ("shard", "--model", "book-exercise", "--hardware", "tpu-v5e", "--chips", "16", "--expert-ways", "4"),
            "--expert-ways",
            "MoE",
        ),
    ],
)
def test_a_flag_that_would_be_ignored_is_refused(args, flag, needed):
    assert_refused(run_roofline(*args), flag, needed)


def test_flags_left_at_their_defaults_are_not_refused():
    assert run_json(*SERVE)["prefix_cache"] is None
    with_prefix = run_json(*SERVE, "--prefix-len", "5")["prefix_cache"]
    assert with_prefix["hit_rate"] == 1.0 and with_prefix["cache_store"] == "hbm"  # the defaults still apply
    assert run_json(*SIMULATE, "--qps", "1", "--cv", "2")["completed"] == 20
    assert run_json(*SIMULATE, "--concurrency", "2", "--think-time", "0.1")["completed"] == 20
    assert run_json("shard", "--model", "book-exercise", "--hardware", "tpu-v5e", "--chips", "16")["moe"] is None


@pytest.mark.parametrize("overrides", ["batch=2,batch=4", "kv_dtype=int8,kv-dtype=fp8"])
def test_diff_refuses_a_key_given_twice(overrides):
    assert_refused(run_roofline("diff", *M8, *H100, "--b", overrides), "--with", "twice", "once")


@pytest.mark.parametrize("command", ["sweep", "pareto"])
def test_sweep_refuses_chips_that_disagree_with_the_topology(command):
    # The same rule and words as step's: a 2x2 slice has 4 chips, so --chips 8 cannot also be meant.
    args = ("--model", "llama-3-8b", "--hardware", "tpu-v5e", "--batch", "1")
    step = run_roofline("step", *args, "--chips", "8", "--topology", "2x2")
    assert_refused(step, "--topology 2x2 has 4 chips, not --chips 8")
    assert_refused(
        run_roofline(command, *args, "--chips", "8", "--topology", "2x2"), "--topology 2x2 has 4 chips, not --chips 8"
    )
    assert_refused(run_roofline(command, *args, "--chips", "4,8", "--topology", "2x2"), "--topology", "--chips 4,8")
    agreeing = run_json(command, *args, "--chips", "4", "--topology", "2x2")
    alone = run_json(command, *args, "--topology", "2x2")
    assert agreeing["evaluated"] == alone["evaluated"] == 1


def test_sweep_default_chips_without_topology_are_unchanged():
    out = run_json("sweep", *M8, *H100, "--batch", "1")
    assert sorted({p["chips"] for p in out["points"]}) == [1, 2, 4, 8]


PROFILE = Path(__file__).resolve().parent.parent / "roofline" / "data" / "profiles" / "h100-sxm-cal.yaml"


def edited_profile(tmp_path: Path, old: str, new: str) -> str:
    """The shipped H100 profile with the first ``old`` replaced by ``new``, as a file."""
    text = PROFILE.read_text()
    assert old in text
    path = tmp_path / "edited-cal.yaml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def test_a_profile_param_key_with_a_bad_device_count_names_the_file_and_field(tmp_path):
    path = edited_profile(tmp_path, "latency_s@2:", "latency_s@x:")
    run = run_roofline("step", *M8, "--hardware", path, "--chips", "2", "--tp", "2")
    assert_refused(run, path, "calibration.ops.", ".params", "'latency_s@x'", "device count", "whole number")
    assert "invalid literal" not in run.stderr


def test_a_long_field_path_is_shown_whole(tmp_path):
    # allreduce/fp16's memory_efficiency is the first one in the file; the path must not be cut.
    path = edited_profile(tmp_path, "memory_efficiency: 0.8054739727756677", "memory_efficiency: 7")
    run = run_roofline("step", *M8, "--hardware", path)
    assert_refused(run, path, "'calibration.ops.allreduce/fp16.memory_efficiency'", "1.5", "7")


def profile_with_engine(tmp_path: Path, fused: str) -> str:
    """The shipped H100 profile plus an engine entry trtllm/0.5.0 whose fused_parallel_block is ``fused``
    (the shipped profiles hold no engine entries: the built-in ones live in roofline/data/engines/)."""
    path = tmp_path / "edited-cal.yaml"
    path.write_text(PROFILE.read_text() + f"engine:\n  trtllm/0.5.0:\n    fused_parallel_block: {fused}\n")
    return str(path)


def test_a_long_value_is_what_gets_shortened(tmp_path):
    path = profile_with_engine(tmp_path, "x" * 300)
    run = run_roofline("step", *M8, "--hardware", path)
    assert_refused(run, "'engine.trtllm/0.5.0.fused_parallel_block'", "true or false")
    assert "x" * 60 not in run.stderr


@pytest.mark.parametrize("text", ['"no"', "no_thanks", "0", '"false"'])
def test_fused_parallel_block_is_strict_like_gated_mlp(tmp_path, text):
    path = profile_with_engine(tmp_path, text)
    assert_refused(run_roofline("step", *M8, "--hardware", path), path, "fused_parallel_block", "true or false")


def test_the_edited_profile_loads_when_the_edit_is_valid(tmp_path):
    path = profile_with_engine(tmp_path, "true")
    assert run_json("step", *M8, "--hardware", path)["fits"] is True


@pytest.mark.parametrize("command", ["step", "sweep", "pareto", "shard"])
@pytest.mark.parametrize("chips", [(), ("--chips", "4")])
def test_a_topology_on_a_switched_chip_names_this_commands_flags(command, chips):
    # These commands size a slice with --chips (and --tp); only `collective` has --devices.
    run = run_roofline(command, *M8, *H100, "--topology", "2x2", *chips)
    assert_refused(run, "--topology", "switched", "--chips")
    assert "--devices" not in run.stderr


def test_collective_still_asks_for_devices():
    run = run_roofline("collective", "--op", "allgather", "--bytes", "1e6", *H100, "--topology", "2x4")
    assert_refused(run, "--topology", "switched", "--devices")


@pytest.mark.parametrize(
    "command, extra",
    [
        ("step", ()),
        ("request", ("-i", "8", "-o", "8")),
        ("serve", ("-i", "8", "-o", "8")),
        ("shard", ()),
        ("simulate", ("--qps", "1", "-i", "8", "-o", "8", "--requests", "5")),
        ("sweep", ("--batch", "1")),
        ("pareto", ("--batch", "1")),
        ("diff", ("--b", "chips=2")),
    ],
)
def test_a_compute_dtype_the_chip_lacks_names_the_flag_and_lists_its_dtypes(command, extra):
    # The H100 datasheet lists FP32, TF32, BF16, FP16, FP8 and INT8 tensor rates: no INT4.
    run = run_roofline(command, *M8, *H100, "--compute-dtype", "int4", *extra)
    assert_refused(
        run, "--compute-dtype int4", "--hardware h100-sxm", "no int4 FLOP/s", "fp32, tf32, bf16, fp16, fp8, int8"
    )


def test_a_hardware_file_without_the_default_compute_dtype_is_named(tmp_path):
    source = Path(__file__).resolve().parent.parent / "hardware" / "h100-sxm.yaml"
    lines = [line for line in source.read_text().splitlines() if not line.startswith("  bf16:")]
    path = tmp_path / "no-bf16.yaml"
    path.write_text("\n".join(lines) + "\n")
    run = run_roofline("step", *M8, "--hardware", str(path))
    assert_refused(run, "--compute-dtype bf16", f"--hardware {path}", "no bf16 FLOP/s", "fp32, tf32, fp16, fp8, int8")
    run = run_roofline("report", "--models", "llama-3-8b", "--hardware", str(path), "--out", str(tmp_path / "r.html"))
    assert_refused(run, "--compute-dtype bf16", f"--hardware {path}", "no bf16 FLOP/s", "fp32, tf32, fp16")
    assert not (tmp_path / "r.html").exists()
    # Commands without --compute-dtype compute in bf16: they name the file and themselves, not a flag.
    for command, extra in (("plan", ("--qps", "1", "-i", "512", "-o", "128")), ("inverse", ("--tpot-slo", "50ms"))):
        run = run_roofline(command, *M8, "--hardware", str(path), *extra)
        assert_refused(run, f"--hardware {path}", "no bf16 FLOP/s", f"`{command}` computes", "fp32, tf32, fp16")
        assert "--compute-dtype" not in run.stderr


def test_simulate_help_shows_the_whole_trace_description_at_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    run = run_roofline("simulate", "--help")
    assert run.code == 0
    text = " ".join(run.stdout.replace("│", " ").split())
    assert "…" not in run.stdout
    assert "arrival_time_s, input_len, output_len" in text


def test_sweep_and_pareto_take_a_profiles_engine_as_step_does(tmp_path):
    # The same configuration with the same engine entry: sweep's point is step's step time, and
    # the engine's terms make it slower than the kernels alone.
    common = ("--model", "llama-3-8b", "--hardware", "h100-sxm-cal")
    step = run_json("step", *common, "--batch", "8", "--context", "1024", "--engine", "trtllm/1.0")
    csv_path = tmp_path / "points.csv"
    proc = run_roofline(
        "sweep",
        *common,
        "--chips",
        "1",
        "--batch",
        "8",
        "--context",
        "1024",
        "--engine",
        "trtllm/1.0",
        "--csv",
        str(csv_path),
    )
    assert proc.code == 0, proc.stderr
    import csv

    (row,) = list(csv.DictReader(csv_path.open()))
    assert float(row["step_time_s"]) == pytest.approx(step["step_time_s"], rel=1e-9)
    bare = run_json("step", *common, "--batch", "8", "--context", "1024")
    assert step["step_time_s"] > bare["step_time_s"]
    front = run_roofline(
        "pareto", *common, "--chips", "1", "--batch", "8", "--context", "1024", "--engine", "trtllm/1.0", "--json"
    )
    assert front.code == 0, front.stderr
    assert_refused(
        run_roofline(
            "sweep",
            "--model",
            "llama-3-8b",
            "--hardware",
            "h100-sxm",
            "--chips",
            "1",
            "--batch",
            "8",
            "--engine",
            "tgi/2.0",
        ),
        "no such engine entry",
    )
    # A built-in entry works on a spec sheet too (issue 25): no refusal for trtllm/1.0 on h100-sxm.
    spec = run_roofline("sweep", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--chips", "1", "--batch", "8",
                        "--engine", "trtllm/1.0")  # fmt: skip
    assert spec.code == 0, spec.stderr


def test_diff_takes_an_engine_on_either_side():
    # B = A with the profile's trtllm/1.0 entry: B's step is step --engine's, A's the kernels alone.
    common = ("--model", "llama-3-8b", "--hardware", "h100-sxm-cal", "--batch", "8", "--context", "1024")
    out = run_json("diff", *common, "--with", "engine=trtllm/1.0")
    assert out["b"]["engine"] == "trtllm/1.0" and out["a"]["engine"] is None
    assert out["step_b_s"] == pytest.approx(run_json("step", *common, "--engine", "trtllm/1.0")["step_time_s"])
    assert out["step_a_s"] == pytest.approx(run_json("step", *common)["step_time_s"])
    assert_refused(run_roofline("diff", *common, "--with", "engine=vllm/9"), "configuration B", "vllm/9")


REPORT_SMALL = (
    "--models",
    "llama-2-70b",
    "--chips",
    "4",
    "--tp",
    "4",
    "--batch",
    "1,8,64",
    "--weights",
    "fp8",
    "--kv-dtype",
    "fp8",
    "--context",
    "2048",
    "--traces",
    "prediction",
)


def test_report_takes_an_engine_and_a_compute_dtype_as_sweep_does(tmp_path):
    # Without --engine the report prices no engine; --engine trtllm/1.0 prices the built-in entry's terms
    # (its source is named; its host time per step is no kernel, so the per-op section is unchanged, and the
    # cheapest deployment costs more), with fp8 matmuls from --compute-dtype.
    runs = {}
    for name, extra in (
        ("plain", ("--compute-dtype", "fp8")),
        ("engine", ("--engine", "trtllm/1.0", "--compute-dtype", "fp8")),
    ):
        run = run_roofline(
            "report", *REPORT_SMALL, "--hardware", "h100-sxm-cal", "--out", str(tmp_path / name), *extra, "--json"
        )
        assert run.code == 0, run.stderr
        runs[name] = json.loads(run.stdout)
    assert "built-in engine trtllm/1.0" in runs["engine"]["sources"]["engine:h100-sxm-cal"]
    assert runs["plain"]["sources"]["engine:h100-sxm-cal"].startswith("none (kernel times only")
    ops = {k: v["models"]["llama-2-70b"]["ops"]["decode:calibrated profile"]["local_s"] for k, v in runs.items()}
    assert ops["engine"] == ops["plain"]
    cost = {k: v["models"]["llama-2-70b"]["cheapest"]["cost_per_million_tokens"] for k, v in runs.items()}
    assert cost["engine"] > cost["plain"]
    assert "fp8" in (tmp_path / "engine").read_text()
    # An engine no entry has (built-in or the profile's) is refused, and nothing is written.
    out = tmp_path / "refused.html"
    run = run_roofline(
        "report", *REPORT_SMALL, "--hardware", "h100-sxm-cal,h100-sxm", "--out", str(out), "--engine", "tgi/2.0"
    )
    assert_refused(run, "'tgi/2.0'", "no such engine entry", "entries: sglang/0.5, trtllm/0.5.0")
    assert not out.exists()
