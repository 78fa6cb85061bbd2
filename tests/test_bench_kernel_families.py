"""benchmarks/kernel_families.py: its argument handling (fast) and one tiny slice on the shared tables (slow).

The figures it prints are quoted in docs/guides/kernels.md ("Held-out figures"); no timing here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.test_calibration_targets import SHARED, needs_shared

REPO = Path(__file__).resolve().parents[1]


def bench():
    """The benchmark script as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("kernel_families_bench", REPO / "benchmarks" / "kernel_families.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--families", "moe,attention"], "--families: unknown 'attention'"),
        (["--chips", "mi300x"], "--chips: unknown 'mi300x'"),
        (["--folds", "1"], "need folds >= 2"),
        (["--shared", "/nonexistent/measurements"], "--shared /nonexistent/measurements: no aiconfigurator"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        bench().options(argv)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err


def test_every_chip_family_pair_names_a_table():
    """Each (chip, family) the defaults ask for has a table path under aiconfigurator's data folder."""
    module = bench()
    for chip in ("h100-sxm", "b200"):
        for family in ("moe", "mla_decode", "mla_prefill", "bmm"):
            assert module.TABLES[(chip, family)], (chip, family)
    assert len(module.TABLES[("h100-sxm", "moe")]) == 2  # TensorRT-LLM and vLLM kernels


@pytest.mark.slow
@needs_shared
def test_tiny_slice_prints_held_out_rows(capsys):
    """The H100 MLA BMM table (424 rows per dtype, 8 head counts), 2 folds: one markdown row per dtype."""
    bench().main(["--shared", str(SHARED), "--families", "bmm", "--chips", "h100-sxm", "--folds", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| chip | table | entry |")
    rows = [line for line in lines[2:] if line.startswith("| h100-sxm | trtllm/")]
    assert [r.split(" | ")[2] for r in rows] == ["bmm/bf16", "bmm/fp8_block"]
    for row in rows:
        mape = float(row.split("**")[1].split("%")[0])
        assert 0 < mape < 50, row  # held out, not in-sample: above zero; a working fit stays well under 50%
