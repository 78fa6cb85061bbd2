"""Per-dtype calibration: profile keys, the lookup the step model calls, honest coverage,
multi-start fits that report parameters at a bound, and the CLI's per-dtype contracts."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from roofline.calibrate.kernels.data import load_measurements
from roofline.deploy.rates import chip_rates
from roofline.kernels import forms as models
from roofline.kernels import lookup, lsq
from roofline.kernels.keys import resolve, split_key
from roofline.kernels.predict import evaluate, evaluate_by_dtype, uncovered
from roofline.kernels.schema import CalibrationError, concat, from_records, write_measurements
from roofline.specs import hardware_from_dict, load_hardware
from tests.conftest import run_json

H100 = load_hardware("h100-sxm")
#: H100 SXM dense bf16 peak, FLOP/s (the catalog's figure, from NVIDIA's datasheet).
BF16_PEAK = 989e12


def profile(ops: dict[str, dict]) -> object:
    """h100-sxm with a hand-written calibration block."""
    data = H100.model_dump()
    data["calibration"] = {"source": "test", "ops": ops}
    return hardware_from_dict(data, "<test profile>")


CONSTANT = {
    "compute_efficiency": 0.5,
    "memory_efficiency": 0.8,
    "overhead_s": 1e-5,
    "params": {"compute_efficiency": 0.5, "memory_efficiency": 0.8, "overhead_s": 1e-5},
}


# --------------------------------------------------------------------------- keys


def test_keys_exact_then_legacy_bf16_then_same_width_collectives():
    assert split_key("gemm_fp8_block/fp8") == ("gemm_fp8_block", "fp8")
    assert split_key("gemm") == ("gemm", "bf16")  # profiles written before per-dtype keys
    assert resolve({"gemm/bf16", "gemm"}, "gemm", "bf16") == "gemm/bf16"
    assert resolve({"gemm"}, "gemm", "bf16") == "gemm"
    assert resolve({"gemm"}, "gemm", "fp8") is None  # a legacy key is bf16 only
    assert resolve({"gemm/bf16"}, "gemm", "fp16") is None  # compute: no dtype borrowing
    assert resolve({"allreduce/fp16"}, "allreduce", "bf16") == "allreduce/fp16"  # 2-byte elements
    assert resolve({"allreduce/int8"}, "allreduce", "bf16") is None


# --------------------------------------------------------------------------- lookup


def test_spec_sheet_without_calibration():
    """2 m n k / peak for a compute-bound 8192^3 bf16 GEMM: 1.0995e12 / 989e12 = 1.112 ms."""
    seconds, label = lookup.op_time(H100, "gemm", "bf16", m=8192, n=8192, k=8192)
    assert float(seconds) == pytest.approx(2 * 8192**3 / BF16_PEAK)
    assert label == "spec sheet"
    assert lookup.entry_for(H100, "gemm", "bf16") is None and lookup.covered(H100) == {}


def test_calibrated_entry_label_and_value():
    hw = profile({"gemm/bf16": {**CONSTANT, "rows": 1234, "dtypes": ["bf16"]}})
    seconds, label = lookup.op_time(hw, "gemm", m=[8192, 8192], n=8192, k=8192)
    # constant efficiencies: max(2mnk / (peak 0.5), bytes / (BW 0.8)) + 10 us
    np.testing.assert_allclose(seconds, 2 * 8192**3 / (BF16_PEAK * 0.5) + 1e-5)
    assert seconds.shape == (2,)
    assert label == ("calibrated profile (gemm/bf16, 1,234 rows, constant efficiencies + overhead)")
    assert lookup.entry_for(hw, "gemm", "bf16").rows == 1234


def test_uncovered_dtype_raises_or_falls_back_by_name():
    hw = profile({"gemm/bf16": CONSTANT, "attention_decode/bf16": CONSTANT})
    with pytest.raises(CalibrationError) as info:
        lookup.entry_for(hw, "gemm", "fp8")
    message = str(info.value)
    assert "no gemm/fp8 entry" in message and "covers attention_decode/bf16, gemm/bf16" in message
    assert "\n" not in message
    assert lookup.entry_for(hw, "gemm", "fp8", fallback=True) is None
    with pytest.raises(CalibrationError, match="gemm_fp8_block/fp8"):
        lookup.op_time(hw, "gemm", "fp8", impl="fp8_block", fallback=False, m=1, n=8, k=8)
    seconds, label = lookup.op_time(hw, "gemm", "fp8", m=8192, n=8192, k=8192)
    assert label == "spec sheet (profile has no gemm/fp8 entry)"
    assert float(seconds) == pytest.approx(2 * 8192**3 / H100.flops_for("fp8"))


def test_legacy_key_reads_as_bf16_only():
    hw = profile({"gemm": CONSTANT})
    assert lookup.op_time(hw, "gemm", m=1, n=8, k=8)[1] == (
        "calibrated profile (gemm, a key without dtype, read as bf16, constant efficiencies + overhead)"
    )
    assert lookup.op_time(hw, "gemm", "fp8", m=1, n=8, k=8)[1].startswith("spec sheet")
    assert lookup.covered(hw) == {"gemm": ["bf16"]}


def test_collective_of_the_same_width_is_named_in_the_label():
    params = {"latency_s": 1e-5, "bandwidth_bytes_per_s": 1e11, "small_message_bytes": 1.0}
    hw = profile(
        {"allreduce/fp16": {"params": params, "rows": 63}, "allreduce_custom/bf16": {"params": params, "rows": 69}}
    )
    seconds, label = lookup.op_time(hw, "allreduce", message_bytes=2**20, num_devices=8)
    assert label == "calibrated profile (allreduce/fp16 for bf16, 63 rows)"
    # latency + 2 (n-1)/n S / bandwidth (1 + small / (bus + small))
    bus = 2 * 7 / 8 * 2**20
    assert float(seconds) == pytest.approx(1e-5 + bus / 1e11 * (1 + 1 / (bus + 1)))
    assert (
        lookup.op_time(hw, "allreduce", impl="custom", message_bytes=2**20, num_devices=8)[1]
        == "calibrated profile (allreduce_custom/bf16, 69 rows)"
    )
    assert lookup.covered(hw) == {"allreduce": ["fp16"], "allreduce_custom": ["bf16"]}


def test_bad_shapes_and_ops_are_one_line_errors():
    with pytest.raises(CalibrationError, match="gemm needs shape 'k'"):
        lookup.op_time(H100, "gemm", m=1, n=8)
    with pytest.raises(CalibrationError, match="unknown shape 'rows'"):
        lookup.op_time(H100, "gemm", m=1, n=8, k=8, rows=3)
    with pytest.raises(CalibrationError, match="unknown op 'matmul'"):
        lookup.op_time(H100, "matmul", m=1, n=8, k=8)


def test_chip_rates_read_the_dtype_entry():
    hw = profile({"gemm/bf16": CONSTANT})
    rates = chip_rates(hw, "bf16")
    # The peaks stay the spec sheet's; the fitted GEMM entry supplies the gemm term, named in sources.
    assert rates.flops_per_s == pytest.approx(BF16_PEAK)
    assert rates.uses("gemm") and "gemm/bf16" in rates.sources["gemm"]
    fp8 = chip_rates(hw, "fp8")
    assert fp8.flops_per_s == pytest.approx(H100.flops_for("fp8"))
    assert not fp8.uses("gemm") and fp8.sources["gemm"] == "spec sheet (profile has no gemm/fp8 entry)"


# --------------------------------------------------------------------------- models and fit


def test_quantize_term_hand_derivation():
    """1e-5 s + m k (2 + 1) bytes / 1e12 B/s for m=1024, k=4096 in fp8: 10 + 12.58 us."""
    s = {"m": np.array(1024.0), "k": np.array(4096.0), "width": np.array(1.0)}
    p = {"quantize_floor_s": 1e-5, "quantize_bandwidth_bytes_per_s": 1e12}
    assert float(models.quantize_time(s, p)) == pytest.approx(1e-5 + 1024 * 4096 * 3 / 1e12)
    # quantized GEMMs write bf16: (mk + kn) 1 + mn 2 bytes
    assert models.gemm_bytes(2.0, 2.0, 2.0, 1.0, 2.0) == 16.0


def test_parameter_pushed_past_its_bound_is_reported():
    spec = (lsq.Param("c", 2.0, 1.0, 10.0), lsq.Param("d", 1.0, 0.1, 10.0))
    x = np.linspace(1.0, 2.0, 20)
    measured = 100.0 * x  # needs c = 100: outside [1, 10]
    fitted = lsq.fit_params(spec, lambda p: p["c"] * x ** p["d"], measured)
    assert fitted["c"] == pytest.approx(10.0, rel=0.03) and lsq.at_bound(spec, fitted) == ["c"]


def test_more_starting_points_never_fit_worse():
    """Start 0 is always the stated initial value, so the best of several is no worse."""
    spec = (lsq.Param("f", 1.0, 0.1, 100.0),)
    x = np.linspace(0.0, 3.0, 200)
    measured = np.exp(np.sin(23.0 * x))

    def cost(p):
        return float(np.mean(np.abs(np.sin(p["f"] * x) - np.sin(23.0 * x))))

    one = lsq.fit_params(spec, lambda p: np.exp(np.sin(p["f"] * x)), measured, starts=1)
    many = lsq.fit_params(spec, lambda p: np.exp(np.sin(p["f"] * x)), measured, starts=8)
    assert cost(many) <= cost(one)


# --------------------------------------------------------------------------- coverage, CLI


@pytest.fixture(scope="module")
def small_table():
    """300 rows each of bf16, fp8 per-tensor and fp8 block-scaled H100 GEMMs (seeded)."""
    table = load_measurements("builtin:h100-sxm").where(op="gemm")
    rng = np.random.default_rng(0)
    parts = []
    for dtype, impl in (("bf16", ""), ("fp8", ""), ("fp8", "fp8_block")):
        sub = table.take((table["dtype"] == dtype) & (table["impl"] == impl))
        parts.append(sub.take(np.sort(rng.choice(len(sub), 300, replace=False))))
    return concat(parts)


@pytest.mark.slow
def test_uncovered_rows_are_counted_not_scored(small_table):
    hw = profile({"gemm/bf16": CONSTANT})
    assert uncovered(hw, small_table) == {"gemm/fp8": 300, "gemm_fp8_block/fp8": 300}
    assert evaluate(hw, small_table)["gemm"]["n"] == 300
    assert set(evaluate_by_dtype(hw, small_table)) == {"gemm"}
    assert set(evaluate_by_dtype(hw, small_table)["gemm"]) == {"bf16"}
    assert uncovered(H100, small_table) == {}  # a spec sheet claims no calibration


@pytest.mark.slow
def test_cli_fit_every_dtype_and_evaluate_by_dtype(small_table, tmp_path):
    rows = write_measurements(small_table, tmp_path / "gemm.csv.gz")
    out = run_json(
        "calibrate",
        "fit",
        str(rows),
        "--hardware",
        "h100-sxm",
        "--out",
        str(tmp_path / "all.yaml"),
        "--max-rows",
        "200",
    )
    assert set(out["ops"]["gemm"]["by_dtype"]) == {"bf16", "fp8"}
    assert set(out["ops"]["gemm_fp8_block"]["by_dtype"]) == {"fp8"}
    assert out["ops"]["gemm"]["dtype"] == "bf16" and "random_split" in out["ops"]["gemm"]
    assert isinstance(out["ops"]["gemm"]["by_dtype"]["fp8"]["at_bound"], list)
    saved = yaml.safe_load((tmp_path / "all.yaml").read_text())["calibration"]["ops"]
    assert set(saved) == {"gemm/bf16", "gemm/fp8", "gemm_fp8_block/fp8"}
    assert saved["gemm/fp8"]["rows"] == 300 and saved["gemm/fp8"]["dtypes"] == ["fp8"]
    assert saved["gemm_fp8_block/fp8"]["kernels"] == ["fp8_block"]
    assert "quantize_floor_s" in saved["gemm/fp8"]["params"]

    ev = run_json("calibrate", "evaluate", "--profile", str(tmp_path / "all.yaml"), str(rows))
    assert ev["uncovered"] == {} and ev["ops"]["gemm"]["n"] == 600
    for dtype in ("bf16", "fp8"):
        stats = ev["ops"]["gemm"]["by_dtype"][dtype]
        assert stats["n"] == 300 and {"mape", "median_ape", "p90_ape"} <= set(stats)
        assert stats["mape"] < stats["spec_mape"]

    run_json(
        "calibrate",
        "fit",
        str(rows),
        "--hardware",
        "h100-sxm",
        "--out",
        str(tmp_path / "bf16.yaml"),
        "--max-rows",
        "200",
        "--dtype",
        "bf16",
    )
    ev = run_json("calibrate", "evaluate", "--profile", str(tmp_path / "bf16.yaml"), str(rows))
    assert ev["uncovered"] == {"gemm/fp8": 300, "gemm_fp8_block/fp8": 300}
    assert set(ev["ops"]) == {"gemm"} and set(ev["ops"]["gemm"]["by_dtype"]) == {"bf16"}


def test_profile_without_new_fields_still_loads():
    old = {"gemm": {"compute_efficiency": 0.7, "memory_efficiency": 0.8, "overhead_s": 2e-6, "params": {}, "fit": {}}}
    entry = profile(old).calibration.ops["gemm"]
    assert entry.rows == 0 and entry.dtypes == [] and entry.at_bound == []


def test_from_records_rows_are_covered_by_their_own_dtype_only():
    table = from_records(
        [
            {"hardware": "h100-sxm", "op": "gemm", "dtype": d, "m": 64, "n": 64, "k": 64, "time_s": 1e-5}
            for d in ("bf16", "fp16", "int8")
        ]
    )
    hw = profile({"gemm/bf16": CONSTANT})
    assert uncovered(hw, table) == {"gemm/fp16": 1, "gemm/int8": 1}
