"""Tables read at 80 columns when piped: no value cut with '…', no line over 80; units with SI prefixes.

Tables fit by design (short headers with units, the rest of the columns under --wide) and fold
a cell rather than cut it.  Every command the README and docs/ show is run at 80 columns by
``tests/test_docs.py``; the cases here check particular tables.
"""

from __future__ import annotations

from tests.inprocess import run_roofline


def test_hardware_show_prints_units_and_si_prefixes():
    # H100 SXM: 80 GB of HBM at 3.35 TB/s, 989 TFLOP/s bf16 dense, a 2 us NVLink hop (the hardware file).
    run = run_roofline("hardware", "show", "h100-sxm")
    assert run.code == 0
    assert "80000000000" not in run.stdout and "2e-06" not in run.stdout
    for text in ("80 GB", "3.35 TB/s", "bf16 989 TFLOP/s", "2 us", "$3.00 per chip-hour"):
        assert text in run.stdout, text


def test_wide_tables_keep_every_value():
    # plan's default columns fit 80; --wide adds the sharding and memory columns, each value whole.
    args = (
        "plan",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--qps",
        "10",
        "-i",
        "2048",
        "-o",
        "256",
        "--tpot-slo",
        "50ms",
    )
    narrow, wide = run_roofline(*args), run_roofline(*args, "--wide")
    assert narrow.code == wide.code == 0
    assert "usable HBM" in wide.stdout and "GB" in wide.stdout
    assert "…" not in narrow.stdout + wide.stdout
    assert "replicas" in narrow.stdout and "chips x replicas" not in narrow.stdout
