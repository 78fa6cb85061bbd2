"""The chips added for issue 15 (AMD Instinct, Blackwell Ultra, NVL72 racks, L40S, H20, TPU v7):
each loads, is listed, runs `roofline step` and `roofline collective`, and carries its datasheet figures."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from roofline.specs import load_hardware
from roofline.views.cli import register_commands

NEW_CHIPS = ("mi300x", "mi325x", "mi355x", "b300", "gb200", "gb300", "l40s", "h20", "tpu-v7")
GiB = 2**30


def invoke_json(*args: str) -> dict:
    result = CliRunner().invoke(register_commands(), [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_new_chips_appear_in_hardware_list():
    listed = {row["name"] for row in invoke_json("hardware", "list")}
    assert set(NEW_CHIPS) <= listed


@pytest.mark.parametrize("name", NEW_CHIPS)
def test_new_chip_runs_step_memory_bound_at_batch_one(name):
    # Batch 1 decode is memory bound: the step reads every weight and the KV cache once,
    # so step_time = total bytes / HBM bandwidth (the book's T_mem).
    hw = load_hardware(name)
    out = invoke_json("step", "--model", "llama-3-8b", "--hardware", name, "--batch", "1", "--context", "1024")
    assert out["bound"] == "memory" and out["fits"] is True
    assert out["step_time_s"] == pytest.approx(
        (out["param_bytes"] + out["kv_bytes"]) / hw.hbm_bandwidth_bytes_per_s, rel=1e-6
    )


@pytest.mark.parametrize("name", NEW_CHIPS)
def test_new_chip_runs_collective(name):
    out = invoke_json("collective", "--op", "allreduce", "--bytes", "1e8", "--hardware", name, "--devices", "8")
    assert out["devices"] == 8 and out["time_s"] > 0


def test_infinity_fabric_mapping_matches_seven_direct_links():
    # MI300X: 8 GPUs fully connected, 7 links of 64 GB/s each way (datasheet: 128 GB/s bidirectional
    # per link).  An AllGather of V = 1e8 B sends each GPU's 1.25e7 B shard to its 7 peers at once,
    # one link each: 1.25e7 / 64e9 = 195.3 us, which the switch model gives as V·7/8 / (7 × 64e9).
    out = invoke_json("collective", "--op", "allgather", "--bytes", "1e8", "--hardware", "mi300x", "--devices", "8")
    assert out["bandwidth_time_s"] == pytest.approx(1.25e7 / 64e9)
    # MI355X: 7 links of 153.6 GB/s bidirectional = 76.8 GB/s each way.
    out = invoke_json("collective", "--op", "allgather", "--bytes", "1e8", "--hardware", "mi355x", "--devices", "8")
    assert out["bandwidth_time_s"] == pytest.approx(1.25e7 / 76.8e9)


def test_nvl72_domain_keeps_72_gpus_on_nvlink():
    # GB200 NVL72: 72 GPUs on NVLink at 1.8 TB/s bidirectional (900 GB/s each way); an AllGather of
    # 7.2e9 B over 72 GPUs is 7.2e9·71/72 / 9e11 = 7.89 ms with no scale-out phase.
    inside = invoke_json(
        "collective", "--op", "allgather", "--bytes", "7.2e9", "--hardware", "gb200", "--devices", "72"
    )
    assert inside["bandwidth_time_s"] == pytest.approx(7.2e9 * 71 / 72 / 9e11)
    assert "dcn_bandwidth_bytes_per_s" not in inside.get("sources", {})
    # 144 GPUs = 2 racks: the outer phase crosses the 400 Gb/s (5e10 B/s) ConnectX-7 per GPU:
    # + (7.2e9/72)·1/2 / 5e10 = 1 ms.
    across = invoke_json(
        "collective", "--op", "allgather", "--bytes", "7.2e9", "--hardware", "gb200", "--devices", "144"
    )
    assert across["bandwidth_time_s"] == pytest.approx(7.2e9 * 71 / 72 / 9e11 + 1e8 / 2 / 5e10)
    # An 8-GPU HGX B300 leaves the NVLink domain at 16 GPUs.
    assert load_hardware("b300").max_ici_domain_chips == 8
    assert load_hardware("gb300").max_ici_domain_chips == 72


def test_l40s_collectives_run_over_pcie():
    # L40S datasheet: PCIe Gen4 x16 64 GB/s bidirectional, no NVLink -> 32 GB/s each way.
    l40s = load_hardware("l40s")
    assert l40s.ici_bandwidth_bytes_per_s == 32e9 == l40s.host_bandwidth_bytes_per_s
    out = invoke_json("collective", "--op", "allgather", "--bytes", "8e8", "--hardware", "l40s", "--devices", "8")
    assert out["bandwidth_time_s"] == pytest.approx(8e8 * 7 / 8 / 32e9)


def test_amd_datasheet_figures():
    # AMD MI300X datasheet: 192 GB HBM3 (ROCm GPU specs table: 192 GiB), 5.3 TB/s,
    # BF16 1307.4 TFLOPS dense (2614.9 with sparsity), FP8 2614.9 TFLOPS dense.
    mi300x = load_hardware("mi300x")
    assert mi300x.hbm_bytes == 192 * GiB
    assert mi300x.hbm_bandwidth_bytes_per_s == 5.3e12
    assert mi300x.flops_for("bf16") == 1307.4e12 and mi300x.flops_for("fp8") == 2614.9e12
    # MI325X datasheet: same CDNA 3 compute, 256 GB HBM3E at 6 TB/s.
    mi325x = load_hardware("mi325x")
    assert mi325x.flops_per_s == mi300x.flops_per_s
    assert (mi325x.hbm_bytes, mi325x.hbm_bandwidth_bytes_per_s) == (256 * GiB, 6e12)
    # MI355X datasheet: 288 GB HBM3E, 8 TB/s; FP16 2.5 PF, FP8 5.0 PF, MXFP4 10.1 PF dense;
    # by hand 256 CUs x 2.4 GHz x 4096 FLOP/clock = 2.52e15; no TF32 on CDNA 4.
    mi355x = load_hardware("mi355x")
    assert (mi355x.hbm_bytes, mi355x.hbm_bandwidth_bytes_per_s) == (288 * GiB, 8e12)
    assert mi355x.flops_for("bf16") == pytest.approx(256 * 2.4e9 * 4096, rel=1e-5)
    assert mi355x.flops_for("fp4") == pytest.approx(10.1e15, rel=0.005)
    assert "tf32" not in mi355x.flops_per_s
    for chip in (mi300x, mi325x, mi355x):
        assert chip.max_ici_domain_chips == 8 and chip.ici_topology == "switch"


def test_nvidia_datasheet_figures():
    # GB200 NVL72 table: FP4 1440 PF, FP8 720 PF, BF16 360 PF with sparsity per 72 GPUs; 576 TB/s HBM.
    gb200 = load_hardware("gb200")
    assert gb200.flops_for("fp4") * 72 * 2 == pytest.approx(1440e15)
    assert gb200.flops_for("bf16") * 72 * 2 == pytest.approx(360e15)
    assert gb200.hbm_bandwidth_bytes_per_s * 72 == pytest.approx(576e12)
    assert gb200.hbm_bytes * 72 == pytest.approx(13.4e12, rel=0.001)
    # GB300 NVL72 table: FP4 1080 PF dense per 72 GPUs; B300: FP4 108 PF dense per 8 GPUs.
    assert load_hardware("gb300").flops_for("fp4") * 72 == pytest.approx(1080e15)
    b300 = load_hardware("b300")
    assert b300.flops_for("fp4") * 8 == pytest.approx(108e15)
    assert b300.hbm_bytes == 288e9
    # Blackwell Ultra's cut INT8 rate is not guessed: asking for it is an error.
    assert "int8" not in b300.flops_per_s and "int8" not in load_hardware("gb300").flops_per_s
    # L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05 TFLOPS dense (733 with sparsity).
    l40s = load_hardware("l40s")
    assert (l40s.hbm_bytes, l40s.hbm_bandwidth_bytes_per_s) == (48e9, 864e9)
    assert l40s.flops_for("bf16") == 362.05e12
    # H20 (reported spec sheet): 96 GB HBM3, 4.0 TB/s, BF16 148 TFLOPS: critical batch 148e12/4e12 = 37.
    h20 = load_hardware("h20")
    assert h20.hbm_bytes == 96e9
    assert h20.flops_for("bf16") / h20.hbm_bandwidth_bytes_per_s == pytest.approx(37)


def test_tpu_v7_figures():
    # Google TPU7x page: BF16 2307 TFLOPs, FP8 4614 TFLOPs, 192 GiB HBM, 9216 chips per pod, 3D torus;
    # 1.2 TB/s bidirectional ICI per chip over 6 links = 1e11 B/s one way per link.
    v7 = load_hardware("tpu-v7")
    assert (v7.flops_for("bf16"), v7.flops_for("fp8")) == (2307e12, 4614e12)
    assert v7.hbm_bytes == 192 * GiB and v7.max_ici_domain_chips == 9216
    assert v7.ici_topology == "torus3d" and v7.ici_links * v7.ici_bandwidth_bytes_per_s * 2 == 1.2e12
