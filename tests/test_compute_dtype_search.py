"""Issue 24, item 4 in the searches: `plan`, `sweep` and `pareto` take `--compute-dtype` with the same
per-component syntax as `step` (``fp8_block,experts=nvfp4``), price every candidate with it and say it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.plan.shapes import SearchSpace, Targets, candidate_shapes
from roofline.analyses.sweep.run import decode_sweep
from roofline.deploy.deployment import Precision
from roofline.specs import load_hardware, load_model
from tests.inprocess import assert_refused, run_roofline


def test_with_compute_inverts_describe_compute():
    p = Precision("fp8", "fp8", "fp8_block", compute_components=(("experts", "nvfp4"),))
    assert Precision("fp8", "fp8").with_compute(p.describe_compute()) == p
    assert Precision().with_compute("fp8") == Precision(compute="fp8")


def _prefill_s(compute: str) -> float:
    model, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    space = SearchSpace(max_chips=1, batches=(1,), weights=("fp8",), kv_dtypes=("bf16",), compute_dtype=compute)
    table = candidate_shapes(model, [hw], [fixed_lengths(8192, 16)], Targets(), space)
    row = int(np.flatnonzero(table.fields["chips"] == 1)[0])
    assert table.fields["compute_dtype"][row] == compute
    return float(table.prefill_mean_s[row, 0])


def test_plan_prefill_runs_at_the_compute_dtype_rate():
    # An 8,192-token prompt of Llama-3-8B on one H100 (no collectives) is compute-bound: 2 x 8.03e9 x 8192
    # = 1.3e14 GEMM FLOPs, 133 ms at the spec sheet's 989 TFLOP/s bf16 and 66 ms at 1,979 fp8, while its
    # 8 GB of fp8 weights take 2.4 ms at 3.35 TB/s.  Causal attention adds 32 x 2 x 8192^2 x 4096 = 1.8e13
    # FLOPs (12 %): at the fp8 rate too the prefill halves (0.5), at bf16 it takes 0.56 of the bf16 one.
    ratio = _prefill_s("fp8") / _prefill_s("bf16")
    assert 0.49 <= ratio <= 0.57


def _steps(components: tuple[tuple[str, str], ...], batch: int) -> tuple[float, str]:
    sw = decode_sweep(
        load_model("llama-3-8b"),
        [load_hardware("h100-sxm")],
        batch=[batch],
        chips=[1],
        context=[128],
        weights=["fp8"],
        compute_components=components,
    )
    return float(sw.column("step_time_s")[0]), str(sw.column("compute_dtype")[0])


def test_sweep_prices_a_component_at_its_own_compute_dtype():
    # Batch 1: the step reads 8 GB of fp8 weights (2.4 ms at 3.35 TB/s) and does 16 GFLOPs: the MLP's
    # matmul rate changes nothing.
    plain, label = _steps((), 1)
    mixed, mixed_label = _steps((("mlp", "fp8"),), 1)
    assert (label, mixed_label) == ("bf16", "bf16,mlp=fp8")
    assert mixed == pytest.approx(plain, rel=1e-6)
    # Batch 2,048 is compute-bound (2 x 8.03e9 x 2048 = 3.3e13 FLOPs, 33 ms at 989 TFLOP/s bf16, against
    # 2.4 ms of weights): the MLP's 2 x 2048 x (3 x 4096 x 14336 x 32) = 2.31e13 FLOPs move from the bf16
    # to the fp8 rate (1,979 TFLOP/s), 11.7 ms less.
    plain, _ = _steps((), 2048)
    mixed, _ = _steps((("mlp", "fp8"),), 2048)
    mlp_flops = 2 * 2048 * 3 * 4096 * 14336 * 32
    assert plain - mixed == pytest.approx(mlp_flops * (1 / 989e12 - 1 / 1979e12), rel=0.03)


def test_cli_plan_and_sweep_take_and_show_the_compute_dtype():
    run = run_roofline(
        "sweep", "-m", "llama-3-8b", "-H", "h100-sxm", "--batch", "8", "--weights", "fp8",
        "--compute-dtype", "bf16,mlp=fp8", "--json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    rows = json.loads(run.stdout)["points"]
    assert {r["compute_dtype"] for r in rows} == {"bf16,mlp=fp8"}
    run = run_roofline(
        "plan", "-m", "llama-3-8b", "-H", "h100-sxm", "--qps", "2", "-i", "512", "-o", "64",
        "--tpot-slo", "50ms", "--weights", "fp8", "--compute-dtype", "fp8", "--json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert {c["compute_dtype"] for c in json.loads(run.stdout)["candidates"]} == {"fp8"}


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("-m", "llama-3-8b", "-H", "h100-sxm", "--compute-dtype", "nvfp4"), ("--compute-dtype", "nvfp4", "allowed")),
        (("-m", "llama-3-8b", "-H", "h100-sxm", "--compute-dtype", "bf16,experts=fp8"), ("experts",)),
        (("-m", "llama-3-8b", "-H", "h100-sxm", "--compute-dtype", "bf16,gills=fp8"), ("gills", "allowed")),
    ],
)
@pytest.mark.parametrize("command", ["plan", "sweep"])
def test_cli_refuses_a_compute_dtype_it_cannot_price(command, args, needles):
    extra = ("--qps", "2", "-i", "512", "-o", "64", "--tpot-slo", "50ms") if command == "plan" else ()
    assert_refused(run_roofline(command, *args, *extra), *needles)
