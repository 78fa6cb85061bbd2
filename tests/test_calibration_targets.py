"""Calibration acceptance: shipped H100 data meets the held-out targets; public tables import
with the right units when ../shared is present; the local CPU calibrates end to end."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from roofline.calibrate.kernels import fit
from roofline.calibrate.kernels.data import build_h100, load_measurements
from roofline.calibrate.kernels.importers import import_file
from roofline.kernels import lookup
from roofline.kernels.schema import COLLECTIVE_OPS, read_measurements
from roofline.specs import load_hardware
from tests.conftest import REPO, run_json

pytestmark = pytest.mark.slow  # fits or validates whole profiles: only in the full run

#: Held-out MAPE targets of issue 9, per profile entry: (entry, split) -> bound.  GEMM: bf16
#: 6%, fp8 per-tensor 8%, fp8 block-scaled 10% on the random split; the shape-range split
#: within 1.5x of those.
TARGETS = {
    ("gemm/bf16", "random"): 0.06,
    ("gemm/bf16", "range"): 1.5 * 0.06,
    ("gemm/fp8", "random"): 0.08,
    ("gemm/fp8", "range"): 1.5 * 0.08,
    ("gemm_fp8_block/fp8", "random"): 0.10,
    ("gemm_fp8_block/fp8", "range"): 1.5 * 0.10,
    ("attention_decode/bf16", "random"): 0.15,
    ("attention_decode/bf16", "range"): 0.20,
    ("allreduce/fp16", "random"): 0.10,
}


def shared_measurements() -> Path | None:
    """The shared public tables: $ROOFLINE_SHARED_MEASUREMENTS, ../shared or ./shared."""
    candidates = [
        os.environ.get("ROOFLINE_SHARED_MEASUREMENTS", ""),
        REPO.parent / "shared" / "measurements",
        REPO / "shared" / "measurements",
    ]
    for c in candidates:
        if c and (Path(c) / "aiconfigurator").is_dir():
            return Path(c)
    return None


SHARED = shared_measurements()
needs_shared = pytest.mark.skipif(
    SHARED is None,
    reason="public measurement tables not found at ../shared/measurements "
    "(set ROOFLINE_SHARED_MEASUREMENTS); the shipped subsample is tested instead",
)
H100 = "aiconfigurator/systems/data/h100_sxm"


@pytest.fixture(scope="module")
def h100_calibrated():
    table = load_measurements("builtin:h100-sxm")  # bf16 and fp8 rows: every dtype is fitted
    return fit.calibrate(
        table,
        load_hardware("h100-sxm"),  # the README's settings
        ops=["gemm", "gemm_fp8_block", "attention_decode", "allreduce"],
    )


@pytest.fixture(scope="module")
def h100_fits(h100_calibrated):
    return h100_calibrated[1]


@pytest.mark.parametrize(
    ("op", "shape", "measured_ms", "tolerance"),
    [
        ("gemm", {"m": 1, "n": 8192, "k": 8192}, 0.049184, 0.1),  # the README's example rows
        ("gemm", {"m": 1024, "n": 8192, "k": 8192}, 0.190693, 0.1),
        ("gemm", {"m": 8192, "n": 8192, "k": 8192}, 1.40478, 0.1),
        (
            "attention_decode",
            {"batch": 64, "kv_len": 4096, "num_heads": 32, "num_kv_heads": 8, "head_dim": 128},
            0.3653,
            0.1,
        ),
        ("allreduce", {"message_bytes": 2**26, "num_devices": 8}, 0.325, 0.15),
    ],
)
def test_profile_predicts_readme_rows(h100_calibrated, op, shape, measured_ms, tolerance):
    """Rows quoted in ../shared/measurements/README.md (aiconfigurator H100 tables)."""
    profile = h100_calibrated[0]
    predicted = float(fit.op_time(profile, op, **shape))
    assert predicted == pytest.approx(measured_ms * 1e-3, rel=tolerance)
    if op != "allreduce":  # the spec happens to land within 11% on this one all-reduce row
        spec = float(fit.op_time(load_hardware("h100-sxm"), op, **shape))
        assert abs(spec / (measured_ms * 1e-3) - 1) > abs(predicted / (measured_ms * 1e-3) - 1)


def test_fp8_gemm_row_through_the_lookup(h100_calibrated):
    """H100 fp8 8192^3 GEMM measured 0.884912 ms (../shared/measurements/README.md)."""
    seconds, label = lookup.op_time(h100_calibrated[0], "gemm", "fp8", m=8192, n=8192, k=8192)
    assert float(seconds) == pytest.approx(0.884912e-3, rel=0.1)
    assert label == "calibrated profile (gemm/fp8, 35,700 rows)"


@pytest.mark.parametrize(("key", "split"), sorted(TARGETS))
def test_shipped_h100_meets_held_out_targets(h100_fits, key, split):
    held_out = h100_fits[key].random if split == "random" else h100_fits[key].shape_range
    assert held_out["after_n"] >= 10
    assert held_out["after_mape"] <= TARGETS[(key, split)]
    assert held_out["after_mape"] < 0.5 * held_out["before_mape"]  # far better than the spec


def test_every_dtype_present_is_its_own_entry(h100_calibrated):
    profile, fits = h100_calibrated
    assert {"gemm/bf16", "gemm/fp8", "gemm_fp8_block/fp8", "allreduce/fp16", "allreduce/int8"} <= set(fits)
    for key, entry in profile.calibration.ops.items():
        assert entry.dtypes == [key.split("/")[1]] and entry.rows == fits[key].rows > 0
    assert profile.calibration.ops["gemm_fp8_block/fp8"].kernels == ["fp8_block"]
    # per-tensor and block-scaled fp8 rows of the aiconfigurator table (NOTICE.md)
    assert fits["gemm/fp8"].rows == 35_700 and fits["gemm_fp8_block/fp8"].rows == 29_268


def test_fp8_quantize_kernel_is_its_own_fitted_term(h100_calibrated):
    """The fitted activation-quantize floor matches the tables: fp8 (m=1, n=4096, k=32) takes
    12.25 us against 2.78 us in bf16, so per-tensor quantization costs ~10 us; the 1x128 block
    kernel's is a few us.  bf16 GEMMs have no quantize term."""
    ops = h100_calibrated[0].calibration.ops
    per_tensor = ops["gemm/fp8"].params["quantize_floor_s"]
    block = ops["gemm_fp8_block/fp8"].params["quantize_floor_s"]
    assert 7e-6 < per_tensor < 16e-6 and 1.5e-6 < block < 7e-6 and block < per_tensor
    assert 1e11 < ops["gemm/fp8"].params["quantize_bandwidth_bytes_per_s"] < 1e13
    assert "quantize_floor_s" not in ops["gemm/bf16"].params


def test_fp8_without_the_quantize_term_is_far_worse():
    """The same fp8 rows fitted with the bf16 GEMM model (no quantize kernel): the term matters."""
    rows = load_measurements("builtin:h100-sxm-fp8").where(impl="")
    rows = rows.take(np.random.default_rng(0).choice(len(rows), 3000, replace=False))
    hw = load_hardware("h100-sxm")
    with_term = fit.fit_op("gemm/fp8", rows, hw, max_rows=3000)
    without = fit.fit_op("gemm/bf16", rows, hw, max_rows=3000)  # the bf16 key's model

    def mape(key, params):
        return float(np.mean(np.abs(fit.predict_op(key, rows, hw, params) / rows["time_s"] - 1)))

    assert mape("gemm/fp8", with_term) < 0.06 and mape("gemm/bf16", without) > 0.09


def test_shipped_data_is_compact_and_attributed():
    data = REPO / "roofline" / "data" / "measurements"
    # H100 bf16/fp8, A100 and B200 kernel tables plus the fused MoE/MLA rows of H100 and B200 (gzip)
    assert sum(p.stat().st_size for p in data.iterdir()) < 4e6
    notice = (data / "NOTICE.md").read_text()
    assert "095f58a51c4ca8e61b66ec108d86f223f8d559ce" in notice and "Apache" in notice


@needs_shared
def test_public_tables_units_against_readme_examples():
    gemm = import_file(SHARED / H100 / "gemm/trtllm/1.3.0rc20/gemm_perf.csv")
    row = (gemm["m"] == 1) & (gemm["n"] == 8192) & (gemm["k"] == 8192) & (gemm["dtype"] == "bf16")
    assert gemm["time_s"][row][0] == pytest.approx(0.049184e-3)
    nccl = import_file(SHARED / H100 / "comm/nccl/2.29.2/nccl_perf.csv")
    row = (nccl["op"] == "allreduce") & (nccl["num_devices"] == 8) & (nccl["dtype"] == "fp16")
    sizes = nccl["message_bytes"][row]
    assert sizes.min() == 512 and sizes.max() == 512 * 2**20  # 256 .. 268M half elements
    custom = import_file(SHARED / H100 / "comm/trtllm/1.3.0rc20/custom_allreduce_perf.csv")
    assert custom["message_bytes"].min() == 256  # 128 bf16 elements
    vidur = import_file(SHARED / "vidur/data/profiling/network/h100_dgx/all_reduce.csv")
    big = (vidur["num_devices"] == 8) & (vidur["message_bytes"] == 64 * 2**20)
    assert vidur["time_s"][big][0] == pytest.approx(0.322e-3)  # README cross-check
    decode = import_file(SHARED / H100 / "attention/trtllm/1.3.0rc20/generation_attention_perf.csv")
    assert decode["kv_len"].min() == 2 and decode["q_len"].max() == 1


@needs_shared
def test_shipped_subsample_matches_a_rebuild():
    rebuilt = build_h100(SHARED, only="comm/")
    shipped = read_measurements(REPO / "roofline/data/measurements/h100-sxm-bf16.csv.gz")
    shipped = shipped.take(np.isin(shipped["op"], list(COLLECTIVE_OPS)))
    assert len(rebuilt) == len(shipped) == 4 * 126 + 69
    np.testing.assert_allclose(rebuilt["time_s"], shipped["time_s"], rtol=1e-6)


@needs_shared
def test_h100_profile_transfers_to_vidur_all_reduce(tmp_path):
    profile = tmp_path / "h100.yaml"
    run_json(
        "calibrate", "fit", "builtin:h100-sxm", "--hardware", "h100-sxm", "--out", str(profile), "--op", "allreduce"
    )
    out = run_json(
        "calibrate",
        "evaluate",
        "--profile",
        str(profile),
        str(SHARED / "vidur/data/profiling/network/h100_dgx/all_reduce.csv"),
    )
    assert out["ops"]["allreduce"]["median_ape"] < 0.15
    assert out["ops"]["allreduce"]["mape"] < out["ops"]["allreduce"]["spec_mape"]


def test_cpu_end_to_end_from_real_local_measurements(tmp_path):
    measured = tmp_path / "local.csv"
    out = run_json("measure", "--out", str(measured), "--device", "cpu")
    assert out["rows"] >= 20 and read_measurements(measured).unique("hardware") == ["local-cpu"]
    profile = tmp_path / "local-cpu.yaml"
    fitted = run_json("calibrate", "fit", str(measured), "--out", str(profile), "--report", str(tmp_path / "cpu.html"))
    spec = load_hardware(profile)
    assert spec.kind == "cpu" and spec.calibration is not None and "gemm" in fitted["ops"]
    ev = run_json("calibrate", "evaluate", "--profile", str(profile), str(measured))
    assert ev["ops"]["gemm"]["n"] == out["rows"]
    gemm = ev["ops"]["gemm"]  # timings on a shared CI machine are noisy: no accuracy bound
    assert np.isfinite(gemm["mape"]) and np.isfinite(gemm["spec_mape"])
    assert (tmp_path / "cpu.html").read_text().count("<html") == 1
