"""Every README command reads at 80 columns when piped: no value cut with '…', no line over 80.

Tables fit by design (short headers with units, the rest of the columns under --wide) and fold
a cell rather than cut it.  Commands whose output is a file's text for scripts (``--json``, the
YAML that ``model import`` prints) and those needing files made by other commands (calibrate,
measure, ``e2e import``, a calibrated profile) or owned by the report helper are left out.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from roofline.views.cli import _common
from tests.inprocess import run_roofline

REPO = Path(__file__).resolve().parent.parent
SKIP = (
    "--json",
    "calibrate",
    "measure",
    "e2e import",
    "--rows",
    "h100-cal",
    "report",
    "mine.yaml",
    "--trace",
    "--holdout",
)


def readme_commands() -> list[str]:
    """The ``roofline ...`` lines of the README's bash blocks (comments dropped)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [
        line.split("  #")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.splitlines()
    ]
    return [
        line
        for line in lines
        if line.startswith("roofline ")
        and not any(s in line for s in SKIP)
        and not (line.startswith("roofline model import") and "--out" not in line and "--save" not in line)
    ]


COMMANDS = readme_commands()


def test_the_readme_has_commands_to_check():
    assert len(COMMANDS) >= 30


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_fits_80_columns(command, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path / "catalog"))  # a saved name lands here, not in ~
    if "my-llama-3.1-8b" in command and "--save" not in command:  # the README saves it one line earlier
        assert (
            run_roofline(
                "model",
                "import",
                f"{REPO}/examples/hf/Meta-Llama-3.1-8B/config.json",
                "--name",
                "my-llama-3.1-8b",
                "--save",
            ).code
            == 0
        )
    monkeypatch.setattr(_common.console, "width", 80)
    monkeypatch.setattr(_common.err_console, "width", 80)
    # /tmp/ first: the clone itself may live under /tmp (CI), and its paths must stay whole.
    args = [
        a.replace("/tmp/", f"{tmp_path}/")
        .replace("examples/", f"{REPO}/examples/")
        .replace("tests/fixtures/", f"{REPO}/tests/fixtures/")
        for a in shlex.split(command)[1:]
    ]
    saved = os.getcwd()
    os.chdir(tmp_path)
    try:
        run = run_roofline(*args)
    finally:
        os.chdir(saved)
    assert run.code == 0, run.stderr
    out = run.stdout + run.stderr
    assert "…" not in out, [line for line in out.splitlines() if "…" in line]
    long = [line for line in out.splitlines() if len(line) > 80]
    assert not long, long


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
