"""Calibration: schema, importers (units!), models, fit, CLI contract, shipped H100 targets."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from roofline.calibrate.kernels import fit
from roofline.calibrate.kernels.data import load_measurements
from roofline.calibrate.kernels.importers import import_file
from roofline.kernels import forms as models
from roofline.kernels.schema import (
    COLUMNS,
    CalibrationError,
    concat,
    from_records,
    read_measurements,
    write_measurements,
)
from roofline.specs import load_hardware
from roofline.views.report.calibration import write_calibration_report
from tests.conftest import REPO, run_cli, run_json

FIXTURES = REPO / "tests" / "fixtures" / "measurements"
AIC = FIXTURES / "aiconfigurator" / "h100_sxm"


# --------------------------------------------------------------------------- importers


def test_gemm_import_converts_ms_to_seconds():
    table = import_file(AIC / "gemm_perf.csv")
    assert len(table) == 40 and table.unique("op") == ["gemm"] and table.unique("dtype") == ["bf16"]
    assert table.unique("hardware") == ["h100-sxm"]
    first = (AIC / "gemm_perf.csv").read_text().splitlines()[1].split(",")
    assert table["time_s"][0] == pytest.approx(float(first[5]) * 1e-3)
    assert (table["m"][0], table["n"][0], table["k"][0]) == tuple(float(v) for v in first[2:5])


def test_decode_attention_import_kv_len_is_step_plus_one():
    table = import_file(AIC / "generation_attention_perf.csv")
    first = dict(
        zip(
            (AIC / "generation_attention_perf.csv").read_text().splitlines()[0].split(","),
            (AIC / "generation_attention_perf.csv").read_text().splitlines()[1].split(","),
            strict=True,
        )
    )
    assert table.unique("op") == ["attention_decode"]
    assert table["kv_len"][0] == float(first["step"]) + 1 and table["q_len"][0] == 1
    assert table["num_kv_heads"][0] == float(first["num_key_value_heads"])
    assert table["time_s"][0] == pytest.approx(float(first["latency"]) * 1e-3)


def test_nccl_message_size_is_elements_of_the_dtype():
    table = import_file(AIC / "nccl_perf.csv")
    lines = (AIC / "nccl_perf.csv").read_text().splitlines()[1:]
    for i, line in enumerate(lines):
        op, _, dtype, gpus, size, latency = line.split(",")
        width = 2 if dtype == "half" else 1
        assert table["message_bytes"][i] == float(size) * width
        assert table["num_devices"][i] == float(gpus)
        assert table["time_s"][i] == pytest.approx(float(latency) * 1e-3)
        assert table["op"][i] == op.replace("_", "")


def test_custom_allreduce_is_bf16_elements_and_tagged():
    table = import_file(AIC / "custom_allreduce_perf.csv")
    first = (AIC / "custom_allreduce_perf.csv").read_text().splitlines()[1].split(",")
    assert table["message_bytes"][0] == 2 * float(first[3])
    assert set(table["impl"]) == {"custom"}
    assert set(fit.row_keys(table)) == {"allreduce_custom"}


def test_vidur_tables_bytes_and_projection_shapes():
    ar = import_file(FIXTURES / "vidur" / "h100_dgx" / "all_reduce.csv")
    assert ar.unique("hardware") == ["h100-sxm"] and ar.unique("op") == ["allreduce"]
    assert ar["message_bytes"].min() >= 2048  # vidur sizes are bytes already
    mlp = import_file(FIXTURES / "vidur" / "h100" / "mlp.csv")
    assert len(mlp) == 8 and mlp.unique("dtype") == ["fp16"]
    up = mlp.take(mlp["impl"] == "vidur:mlp_up_proj")
    assert set(up["k"]) == {4096.0} and set(up["n"]) == {2 * 11008.0}  # gated, TP 1


def test_schema_round_trip_gzip(tmp_path):
    table = read_measurements(FIXTURES / "schema_small.csv")
    out = write_measurements(table, tmp_path / "t.csv.gz")
    assert gzip.open(out, "rt").readline().strip() == ",".join(COLUMNS)
    back = read_measurements(out)
    assert len(back) == len(table)
    np.testing.assert_allclose(back["time_s"], table["time_s"], rtol=1e-6)
    assert list(back["op"]) == list(table["op"])


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("missing_time.csv", "missing column 'time_s'"),
        ("bad_op.csv", "column 'op' is 'matmul'; allowed: gemm"),
        ("bad_number.csv", "column 'n' is not a number"),
    ],
)
def test_malformed_measurements_one_line(name, needle):
    with pytest.raises(CalibrationError) as info:
        import_file(FIXTURES / name)
    message = str(info.value)
    assert needle in message and name in message and "\n" not in message


# --------------------------------------------------------------------------- models and fit


def test_soft_max_limits():
    a, b = np.array([1.0, 3.0]), np.array([2.0, 1.0])
    np.testing.assert_allclose(models.soft_max(a, b, exponent=1.0), a + b)
    np.testing.assert_allclose(models.soft_max(a, b, exponent=60.0), np.maximum(a, b), rtol=0.02)


def test_bus_bytes_ring_factors():
    assert models.bus_bytes("allreduce", np.array(8.0), np.array(8.0)) == pytest.approx(14.0)
    assert models.bus_bytes("allgather", np.array(8.0), np.array(8.0)) == pytest.approx(7.0)


def test_constant_fit_recovers_known_efficiencies():
    hw = load_hardware("h100-sxm")
    rng = np.random.default_rng(0)
    m, n, k = (2.0 ** rng.integers(0, 14, 200) for _ in range(3))
    flops, nbytes = models.gemm_flops(m, n, k), models.gemm_bytes(m, n, k, 2.0)
    truth = flops / (hw.flops_for("bf16") * 0.7)
    truth = np.maximum(truth, nbytes / (hw.hbm_bandwidth_bytes_per_s * 0.9)) + 4e-6
    table = from_records(
        [
            {"hardware": "h100-sxm", "op": "gemm", "dtype": "bf16", "m": a, "n": b, "k": c, "time_s": t}
            for a, b, c, t in zip(m, n, k, truth, strict=True)
        ]
    )
    got = fit.fit_constant("gemm", table, hw)
    assert got["compute_efficiency"] == pytest.approx(0.7, rel=0.02)
    assert got["memory_efficiency"] == pytest.approx(0.9, rel=0.02)
    assert got["overhead_s"] == pytest.approx(4e-6, rel=0.05)


@pytest.mark.slow
def test_fixture_calibration_improves_on_the_spec_roofline(tmp_path):
    table = load_measurements(FIXTURES / "schema_small.csv")
    for f in ("gemm_perf.csv", "generation_attention_perf.csv", "nccl_perf.csv"):
        table = concat([table, import_file(AIC / f)])
    profile, fits = fit.calibrate(table, load_hardware("h100-sxm"), dtype="bf16", max_rows=500)
    assert {"gemm/bf16", "attention_decode/bf16", "allreduce/fp16"} <= set(fits)
    stats = fit.evaluate(profile, table)
    for op, key in (
        ("gemm", "gemm/bf16"),
        ("attention_decode", "attention_decode/bf16"),
        ("allreduce", "allreduce/fp16"),
    ):
        assert stats[op]["mape"] < fits[key].stats["before_mape"]
    params = profile.calibration.ops["allreduce/fp16"].params
    assert {"latency_s", "bandwidth_bytes_per_s"} <= set(params)
    assert profile.calibration.ops["gemm/bf16"].params["num_sms"] == 132
    path = write_calibration_report(tmp_path / "r.html", profile, fits, table)
    page = path.read_text()
    assert page.count("plotly.js v") <= 2 and "gemm" in page and "<html" in page.lower()


# --------------------------------------------------------------------------- CLI


@pytest.mark.slow
def test_cli_fit_evaluate_and_step_use_the_profile(tmp_path):
    meas = [
        str(AIC / f)
        for f in ("gemm_perf.csv", "generation_attention_perf.csv", "nccl_perf.csv", "custom_allreduce_perf.csv")
    ]
    out = run_json(
        "calibrate",
        "fit",
        *meas,
        "--hardware",
        "h100-sxm",
        "--out",
        str(tmp_path / "p.yaml"),
        "--max-rows",
        "400",
        cwd=tmp_path,
    )
    assert set(out["ops"]) >= {"gemm", "attention_decode", "allreduce", "allreduce_custom"}
    profile = load_hardware(tmp_path / "p.yaml")
    assert profile.name == "h100-sxm" and profile.calibration is not None
    ev = run_json("calibrate", "evaluate", "--profile", str(tmp_path / "p.yaml"), *meas)
    for key in ("gemm", "attention_decode", "allreduce"):
        assert {"n", "mape", "median_ape", "p90_ape"} <= set(ev["ops"][key])
    args = ("step", "--model", "llama-3-8b", "--batch", "8", "--context", "4096")
    spec = run_json(*args, "--hardware", "h100-sxm")
    calibrated = run_json(*args, "--hardware", str(tmp_path / "p.yaml"))
    assert calibrated["step_time_s"] > spec["step_time_s"]


def test_cli_bad_input_exit_2_and_no_output(tmp_path):
    out = tmp_path / "p.yaml"
    proc = run_cli("calibrate", "fit", str(FIXTURES / "bad_op.csv"), "--hardware", "h100-sxm", "--out", str(out))
    assert proc.returncode == 2 and "bad_op.csv" in proc.stderr and not out.exists()
    proc = run_cli("calibrate", "fit", str(FIXTURES / "schema_small.csv"), "--hardware", "h10", "--out", str(out))
    assert proc.returncode == 2 and "h10" in proc.stderr and not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_cli_import_writes_schema(tmp_path):
    out = run_json("calibrate", "import", str(AIC / "nccl_perf.csv"), "--out", str(tmp_path / "n.csv.gz"))
    assert out["rows"] == 24
    assert len(read_measurements(tmp_path / "n.csv.gz")) == 24


def test_help_shows_examples():
    for args in (("calibrate", "fit"), ("measure",)):
        proc = run_cli(*args, "--help")
        assert proc.returncode == 0 and "Example" in proc.stdout


def test_json_is_parseable_even_with_nan(tmp_path):
    out = run_cli("calibrate", "evaluate", "--profile", "h100-sxm", str(FIXTURES / "schema_small.csv"), "--json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["ops"]["gemm"]["n"] == 3
    assert Path(tmp_path).exists()


class _FakeTensor(np.ndarray):
    """A numpy array with the two tensor methods the GPU path reads."""

    def numel(self) -> int:
        return int(self.size)

    def element_size(self) -> int:
        return int(self.itemsize)


class _FakeTorch:
    """Just enough of torch (numpy-backed, 'CUDA' events on the wall clock, a 1 MiB L2) to run
    :func:`roofline.calibrate.kernels.measure.measure_gpu` without a GPU."""

    bfloat16 = np.float32

    def __init__(self, gqa: bool = True):
        import time
        from types import SimpleNamespace

        class Event:
            def __init__(self, enable_timing: bool = True):
                self.t = 0.0

            def record(self):
                self.t = time.perf_counter()

            def elapsed_time(self, end):
                return (end.t - self.t) * 1e3

        def sdpa_gqa(q, k, v, is_causal=False, enable_gqa=False):
            return q

        def sdpa_plain(q, k, v, is_causal=False):
            return q

        sdpa = sdpa_gqa if gqa else sdpa_plain
        self.cuda = SimpleNamespace(
            get_device_name=lambda: "NVIDIA H100 80GB HBM3",
            Event=Event,
            synchronize=lambda: None,
            set_device=lambda i: None,
            is_available=lambda: True,
            current_device=lambda: 0,
            get_device_properties=lambda i: SimpleNamespace(L2_cache_size=2**20),
        )
        self.nn = SimpleNamespace(functional=SimpleNamespace(scaled_dot_product_attention=sdpa))
        self.distributed = SimpleNamespace(is_available=lambda: False)

    @staticmethod
    def randn(*shape, device=None, dtype=None):
        return np.zeros([min(s, 64) for s in shape], np.float32).view(_FakeTensor)


def test_gpu_measure_plumbing_with_a_fake_torch(monkeypatch):
    from roofline.calibrate.kernels import measure

    monkeypatch.setattr(measure, "_torch", lambda: _FakeTorch())
    table = measure.measure_gpu(quick=True)
    assert table.unique("hardware") == ["h100-sxm"]
    assert set(table.unique("op")) == {"gemm", "attention_decode", "attention_prefill"}
    decode = table.where(op="attention_decode")
    assert set(decode["q_len"]) == {1.0} and set(decode["num_kv_heads"]) == {8.0}
    assert np.all(table["time_s"] > 0)
    # a torch whose SDPA has no native GQA is timed on K/V stored for all 32 query heads
    monkeypatch.setattr(measure, "_torch", lambda: _FakeTorch(gqa=False))
    plain = measure.measure_gpu(quick=True).where(op="attention_decode")
    assert set(plain["num_kv_heads"]) == {32.0}


def test_gpu_timings_cycle_copies_that_overflow_the_l2():
    # 16 KiB of operands a call against a 1 MiB L2: ⌈2 MiB / 16 KiB⌉ = 128 copies, each call the
    # next one, so no call finds its operands in the L2 left by the one before.
    from roofline.calibrate.kernels import measure

    torch, made, seen = _FakeTorch(), [], []

    def make():
        made.append(torch.randn(64, 64))
        return (made[-1],)

    fn = measure._cold(torch, make, lambda a: seen.append(id(a)))
    for _ in range(129):
        fn()
    assert len(made) == 128 and len(set(seen[:128])) == 128 and seen[128] == seen[0]


def test_a_fit_its_rows_cannot_determine_is_refused_naming_the_terms(tmp_path):
    # A least-squares fit of k terms needs k + 1 distinct points: one GEMM shape (measured twice) cannot
    # determine the GEMM model's terms (refused), and two message sizes cannot determine a collective's
    # three on that device count (fitted from their start, the floor and peak bus rate, and said so).
    from tests.inprocess import assert_refused, run_roofline

    gemm = tmp_path / "gemm.csv"
    gemm.write_text(
        "op,dtype,m,n,k,time_s,hardware,source\n"
        "gemm,bf16,128,4096,4096,1.0e-5,h100-sxm,mine\n"
        "gemm,bf16,128,4096,4096,1.1e-5,h100-sxm,mine\n"
    )
    out = tmp_path / "cal.yaml"
    run = run_roofline("calibrate", "fit", str(gemm), "--hardware", "h100-sxm", "--out", str(out))
    assert_refused(run, "gemm/bf16: 1 distinct shape(s) cannot determine its", "compute_efficiency", "at least")
    assert not out.exists()
    coll = tmp_path / "coll.csv"
    coll.write_text(
        "op,dtype,message_bytes,num_devices,time_s,hardware,source\n"
        "allreduce,bf16,1048576,8,3.0e-5,h100-sxm,mine\n"
        "allreduce,bf16,2097152,8,4.0e-5,h100-sxm,mine\n"
    )
    run = run_roofline("calibrate", "fit", str(coll), "--hardware", "h100-sxm", "--out", str(out), "--json")
    assert run.code == 0, run.stderr
    ops = json.loads(run.stdout)["ops"]
    assert ops["allreduce"]["undetermined"] == [
        "latency_s@8",
        "bandwidth_bytes_per_s@8",
        "small_message_bytes@8",
    ]
