"""The HTML report and the sweep/pareto/report commands: contents, offline page, bad input."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from roofline.errors import RooflineError
from roofline.report import Scenario, build_report, write_report
from roofline.report.page import write_page

from .conftest import run_cli

SMALL = Scenario(models=("llama-2-13b",), hardware=("tpu-v5e", "h100-sxm"), weights=("bf16",),
                 kv_dtypes=("bf16",), batch=(1, 8, 16, 64, 256), chips=(1, 2, 8),
                 memory_utilization=1.0)  # the hand-derived counts below use all of HBM


@pytest.fixture(scope="module")
def small_report() -> tuple[str, dict]:
    return build_report(SMALL)


def test_page_is_self_contained_with_plotly_once(small_report: tuple[str, dict]) -> None:
    text, summary = small_report
    # plotly.js's own banner appears once; no script or stylesheet is fetched from the network.
    assert len(re.findall(r"\* plotly\.js v\d", text)) == 1
    assert not re.search(r"<script[^>]+src=", text) and "<link" not in text
    # 3 frontiers for the one model + the book's throughput and memory figures + scenario memory.
    assert summary["figures"] == 6
    assert text.count('class="plotly-graph-div"') == 6


def test_counts_follow_the_hand_derived_fit(small_report: tuple[str, dict]) -> None:
    # 5 batches × 3 slice sizes × 2 chips = 30 configurations.  LLaMA-2-13B bf16 at context
    # 8192 (weights 26.03e9 B, KV 6.711e9 B per sequence) fits on:
    #   v5e (16 GiB = 17.18e9 B each): 1 chip: none; 2 chips: (34.36 - 26.03) / 6.711 = 1.24
    #     -> batch 1; 8 chips (137.4e9 B): batch ≤ 16 -> 1, 8, 16.  1 + 3 = 4 points.
    #   H100 (80e9 B each): 1 chip: (80 - 26.03) / 6.711 = 8.04 -> batch 1, 8; 2 chips: 20.0 ->
    #     1, 8, 16; 8 chips: 91.5 -> 1, 8, 16, 64 = 2 + 3 + 4 = 9 points.  13 fit, 17 dropped.
    _, summary = small_report
    counts = summary["models"]["llama-2-13b"]
    assert counts["evaluated"] == 30 and counts["fit"] == 13 and counts["dropped_out_of_memory"] == 17


def test_contents_axes_hover_and_tables(small_report: tuple[str, dict]) -> None:
    text, summary = small_report
    text = text.replace("\\u002f", "/")  # plotly's JSON writes "/" as \u002f
    for needle in ("per-token latency, step time (ms)", "throughput (tokens/s per chip)",
                   "interactivity (tokens/s per user)", "cost ($ per million tokens)",
                   "critical batch 240", "HBM 8x tpu-v5e: 137 GB", "dropped (out of memory)",
                   "the book: llama-2-13b", "bound: %{customdata[11]}", summary["version"]):
        assert needle in text, needle
    assert "Scenario" in text and "tpu-v5e, h100-sxm" in text
    # The frontier table lists every chip's latency/throughput frontier points.
    assert summary["models"]["llama-2-13b"]["frontier_points"] >= 2


def test_write_report_is_atomic(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RooflineError, match="cannot write"):
        write_page(blocker / "index.html", "<html></html>")
    out = tmp_path / "deep" / "report.html"
    summary = write_report(out, SMALL)
    assert out.is_file() and summary["bytes"] == out.stat().st_size
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # no temp file left


def test_report_cli_json_and_bad_names(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = run_cli("report", "--models", "llama-3-8b", "--hardware", "tpu-v5e", "--chips", "1,4",
                   "--batch", "1..64", "--weights", "bf16", "--kv-dtype", "bf16", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["path"] == str(out) and out.is_file() and data["figures"] == 6
    bad = tmp_path / "bad.html"
    proc = run_cli("report", "--models", "llama-2-13c", "--out", str(bad))
    assert proc.returncode == 2 and "unknown model 'llama-2-13c'" in proc.stderr
    assert "llama-2-13b" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not bad.exists()
    proc = run_cli("report", "--weights", "bf17", "--out", str(bad))
    assert proc.returncode == 2 and "--weights: unknown dtype 'bf17'" in proc.stderr and not bad.exists()


def test_sweep_cli_csv_and_json(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    args = ("sweep", "--model", "llama-2-13b", "--hardware", "tpu-v5e", "--chips", "8",
            "--batch", "1..64", "--context", "8192", "--memory-utilization", "1")
    proc = run_cli(*args, "--csv", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # Batches 1, 2, 4, 8, 16, 32, 64 on 8x v5e: 1..16 fit (max batch 16), 32 and 64 do not.
    assert (data["evaluated"], data["fit"], data["dropped_out_of_memory"]) == (7, 5, 2)
    rows = list(csv.DictReader(path.open()))
    assert [int(r["batch"]) for r in rows] == [1, 2, 4, 8, 16]
    assert float(rows[0]["step_time_s"]) == pytest.approx(4.98e-3, rel=0.01)  # the book's table
    points = json.loads(run_cli(*args, "--json").stdout)["points"]
    assert [p["batch"] for p in points] == [1, 2, 4, 8, 16] and points[0]["bound"] == "memory"


def test_pareto_cli_json_frontier_is_non_dominated(tmp_path: Path) -> None:
    html_path = tmp_path / "f.html"
    proc = run_cli("pareto", "--model", "llama-2-13b-gqa", "--hardware", "tpu-v5e,h100-sxm",
                   "--chips", "1,2,4,8", "--batch", "1..512", "--weights", "bf16,int8",
                   "--objective", "all", "--html", str(html_path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data["frontiers"]) == {"latency-throughput", "interactivity-throughput", "cost-latency"}
    for chip, rows in data["frontiers"]["latency-throughput"].items():
        assert chip in ("tpu-v5e", "h100-sxm") and rows
        lat = np.array([r["step_time_s"] for r in rows])
        tps = np.array([r["tokens_per_s_per_chip"] for r in rows])
        assert np.all(np.diff(lat) > 0) and np.all(np.diff(tps) > 0)  # each step trades latency for throughput
    assert html_path.is_file() and html_path.read_text().count('class="plotly-graph-div"') == 3


@pytest.mark.parametrize("args, message", [
    (("sweep", "--model", "llama-2-13b", "--batch", "0"), "--batch"),
    (("sweep", "--model", "llama-2-13b", "--hardware", "tpu-v5"), "unknown hardware 'tpu-v5'"),
    (("sweep", "--model", "llama-2-13b", "--price", "-1"), "--price: must be a number in (0,"),
    (("sweep", "--model", "llama-2-13b", "--price", "h200=2"), "--price: 'h200' is not one of --hardware"),
    (("sweep", "--model", "llama-2-13b", "--chips", "3", "--tp", "2"), "--tp"),
    (("sweep", "--model", "llama-2-13b", "--topology", "4y4"), "--topology: cannot read '4y4'"),
    (("pareto", "--model", "llama-2-13b", "--objective", "speed"), "--objective: unknown 'speed'"),
    (("pareto", "--model", "llama-3-70b", "--hardware", "tpu-v5e", "--chips", "1"), "no configuration"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = tmp_path / "never.csv"
    proc = run_cli(*args, "--csv" if args[0] == "sweep" else "--html", str(out))
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("command", ["sweep", "pareto", "report"])
def test_help_example_runs_as_shown(tmp_path: Path, command: str) -> None:
    from roofline.cli.report import report_command
    from roofline.cli.sweep import pareto_command, sweep_command

    doc = {"sweep": sweep_command, "pareto": pareto_command, "report": report_command}[command].__doc__
    match = re.search(r"Example: (roofline .+)", doc or "")
    assert match, doc
    assert "Example:" in run_cli(command, "--help").stdout
    argv = shlex.split(match.group(1).strip())
    assert argv[1] == command
    proc = run_cli(*argv[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_fast_commands_are_leaves_of_their_module() -> None:
    # `roofline <fast command>` imports only that module (start-up time): the module must
    # register the command itself, as a leaf (a group could gain sub-commands elsewhere).
    import importlib

    import typer

    from roofline.cli import COMMAND_MODULES, FAST_COMMANDS

    for command, module in FAST_COMMANDS.items():
        assert module in COMMAND_MODULES
        fresh = typer.Typer()
        importlib.import_module(f"roofline.cli.{module}").register(fresh)
        names = {c.name for c in fresh.registered_commands}
        assert command in names, (command, module, names)


def test_plotly_is_imported_only_when_a_page_is_written() -> None:
    # CLI start-up time: the command modules and the report package must not import plotly.
    import subprocess
    import sys

    code = ("import sys, roofline.cli as c, roofline.report, roofline.sweep; c.register_commands(); "
            "print(sorted(m for m in sys.modules if m.startswith('plotly')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
