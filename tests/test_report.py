"""The HTML report and the sweep/pareto/report commands: contents, offline page, bad input."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from roofline.core.errors import RooflineError
from roofline.views.report import Scenario, build_report, write_report
from roofline.views.report.page import write_page

from .conftest import run_cli

SMALL = Scenario(
    models=("llama-2-13b",),
    hardware=("tpu-v5e", "h100-sxm"),
    weights=("bf16",),
    kv_dtypes=("bf16",),
    context=(8192,),
    batch=(1, 8, 16, 64, 256),
    chips=(1, 2, 8),
    memory_utilization=1.0,
    traces=("bound", "prediction"),
    tails=False,
)  # the hand-derived counts below use all of HBM, at context 8192


@pytest.fixture(scope="module")
def small_report() -> tuple[str, dict]:
    return build_report(SMALL)


def test_page_is_self_contained_with_plotly_once(small_report: tuple[str, dict]) -> None:
    text, summary = small_report
    # plotly.js's own banner appears once; no script or stylesheet is fetched from the network.
    assert len(re.findall(r"\* plotly\.js v\d", text)) == 1
    assert not re.search(r"<script[^>]+src=", text) and "<link" not in text
    # The summary's heatmap, 3 frontiers, the classic roofline for the one model, the book's
    # throughput and memory figures (llama-2-13b is a book model) and scenario memory (no tails here).
    assert summary["figures"] == 8
    assert text.count('class="plotly-graph-div"') == 8


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
    for needle in (
        "per-token latency, step time (ms)",
        "throughput (tokens/s per chip)",
        "interactivity (tokens/s per user)",
        "cost ($ per million tokens)",
        "critical batch 240",
        "HBM 8x tpu-v5e: 137 GB",
        "dropped (out of memory)",
        "the book: llama-2-13b",
        "bound: %{customdata[11]}",
        summary["version"],
        "tpu-v5e · bound",
        "h100-sxm · prediction",
        "Bounds are not predictions",
    ):
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
    proc = run_cli(
        "report",
        "--models",
        "llama-3-8b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "1,4",
        "--batch",
        "1..64",
        "--weights",
        "bf16",
        "--kv-dtype",
        "bf16",
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # The summary's heatmap, the tails, 3 frontiers, the classic roofline and scenario memory; no book
    # tables without a book model.
    assert data["path"] == str(out) and out.is_file() and data["figures"] == 7 and not data["book_tables"]
    bad = tmp_path / "bad.html"
    proc = run_cli("report", "--models", "llama-2-13c", "--out", str(bad))
    assert proc.returncode == 2 and "unknown model 'llama-2-13c'" in proc.stderr
    assert "llama-2-13b" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not bad.exists()
    proc = run_cli("report", "--weights", "bf17", "--out", str(bad))
    assert proc.returncode == 2 and "--weights: unknown dtype 'bf17'" in proc.stderr and not bad.exists()


def test_sweep_cli_csv_and_json(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    args = (
        "sweep",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--chips",
        "8",
        "--batch",
        "1..64",
        "--context",
        "8192",
        "--memory-utilization",
        "1",
    )
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
    proc = run_cli(
        "pareto",
        "--model",
        "llama-2-13b-gqa",
        "--hardware",
        "tpu-v5e,h100-sxm",
        "--chips",
        "1,2,4,8",
        "--batch",
        "1..512",
        "--weights",
        "bf16,int8",
        "--objective",
        "all",
        "--html",
        str(html_path),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data["frontiers"]) == {"latency-throughput", "interactivity-throughput", "cost-latency"}
    for chip, rows in data["frontiers"]["latency-throughput"].items():
        assert chip in ("tpu-v5e", "h100-sxm") and rows
        lat = np.array([r["step_time_s"] for r in rows])
        tps = np.array([r["tokens_per_s_per_chip"] for r in rows])
        assert np.all(np.diff(lat) > 0) and np.all(np.diff(tps) > 0)  # each step trades latency for throughput
    assert html_path.is_file() and html_path.read_text().count('class="plotly-graph-div"') == 3


@pytest.mark.parametrize(
    "args, message",
    [
        (("sweep", "--model", "llama-2-13b", "--batch", "0"), "--batch"),
        (("sweep", "--model", "llama-2-13b", "--hardware", "tpu-v5"), "unknown hardware 'tpu-v5'"),
        (("sweep", "--model", "llama-2-13b", "--price", "-1"), "--price: must be a number in (0,"),
        (("sweep", "--model", "llama-2-13b", "--price", "h200=2"), "--price: 'h200' is not one of --hardware"),
        (("sweep", "--model", "llama-2-13b", "--chips", "3", "--tp", "2"), "--tp"),
        (("sweep", "--model", "llama-2-13b", "--topology", "4y4"), "--topology: cannot read '4y4'"),
        (("pareto", "--model", "llama-2-13b", "--objective", "speed"), "--objective: unknown 'speed'"),
        (("pareto", "--model", "llama-3-70b", "--hardware", "tpu-v5e", "--chips", "1"), "no configuration"),
    ],
)
@pytest.mark.slow
def test_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = tmp_path / "never.csv"
    proc = run_cli(*args, "--csv" if args[0] == "sweep" else "--html", str(out))
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["sweep", "pareto", "report"])
def test_help_example_runs_as_shown(tmp_path: Path, command: str) -> None:
    from roofline.views.cli.pareto import pareto_command
    from roofline.views.cli.report import report_command
    from roofline.views.cli.sweep import sweep_command

    doc = {"sweep": sweep_command, "pareto": pareto_command, "report": report_command}[command].__doc__
    match = re.search(r"Example: (roofline .+)", doc or "")
    assert match, doc
    assert "Example:" in run_cli(command, "--help").stdout
    argv = shlex.split(match.group(1).strip())
    assert argv[1] == command
    proc = run_cli(*argv[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_each_command_is_registered_by_its_modules() -> None:
    # `roofline <command>` imports only the modules COMMANDS names for it (start-up time): together
    # they must register the command (a leaf or a group) on their own.
    import importlib

    import typer

    from roofline.views.cli import COMMAND_MODULES, COMMANDS

    for command, modules in COMMANDS.items():
        assert set(modules) <= set(COMMAND_MODULES)
        fresh = typer.Typer()
        for module in modules:
            importlib.import_module(f"roofline.views.cli.{module}").register(fresh)
        names = {c.name for c in fresh.registered_commands} | {g.name for g in fresh.registered_groups}
        assert command in names, (command, modules, names)


def test_plotly_is_imported_only_when_a_page_is_written() -> None:
    # CLI start-up time: the command modules and the report package must not import plotly.
    import subprocess
    import sys

    code = (
        "import sys, roofline.views.cli as c, roofline.views.report, roofline.analyses.sweep.run; "
        "c.register_commands(); "
        "print(sorted(m for m in sys.modules if m.startswith('plotly')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- hardware files, traces, sections

CONSTANT = {
    "compute_efficiency": 0.5,
    "memory_efficiency": 0.5,
    "overhead_s": 1e-5,
    "params": {"compute_efficiency": 0.5, "memory_efficiency": 0.5, "overhead_s": 1e-5},
}


def write_profile(path: Path, name: str = "h100-sxm") -> Path:
    """h100-sxm with a hand-written calibration block: constant efficiencies 0.5 and 10 us per GEMM."""
    import yaml

    from roofline.specs import load_hardware

    data = load_hardware("h100-sxm").model_dump(exclude_none=True)
    data["name"] = name
    data["calibration"] = {"source": "test", "ops": {"gemm/bf16": CONSTANT}}
    path.write_text(yaml.safe_dump(data))
    return path


def test_hardware_files_are_their_own_traces_named_by_file(tmp_path: Path) -> None:
    from roofline.views.report import hardware_refs

    chip = tmp_path / "my-chip.yaml"
    import yaml

    from roofline.specs import load_hardware

    data = load_hardware("h100-sxm").model_dump(exclude_none=True)
    chip.write_text(yaml.safe_dump(data))  # the same chip name inside: still its own trace
    cal = write_profile(tmp_path / "h100-cal.yaml")
    refs = hardware_refs(["h100-sxm", str(chip), str(cal)])
    assert [r.label for r in refs] == ["h100-sxm", "my-chip.yaml", "h100-cal.yaml"]
    assert [r.calibrated for r in refs] == [False, False, True]
    assert refs[2].spec_sheet.calibration is None and refs[2].domain == 8  # 8 NVLink GPUs
    # Two files with one name keep the path as typed.
    (tmp_path / "b").mkdir()
    other = write_profile(tmp_path / "b" / "h100-cal.yaml")
    assert [r.label for r in hardware_refs([str(cal), str(other)])] == [str(cal), str(other)]


def test_report_cli_takes_files_and_profiles_one_trace_each(tmp_path: Path) -> None:
    cal = write_profile(tmp_path / "h100-cal.yaml")
    out = tmp_path / "r.html"
    proc = run_cli(
        "report",
        "--models",
        "llama-3-8b",
        "--hardware",
        f"h100-sxm,{cal}",
        "--chips",
        "1,2,16",
        "--batch",
        "1,8,64",
        "--weights",
        "bf16",
        "--kv-dtype",
        "bf16",
        "--traces",
        "bound,prediction",
        "--no-tails",
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["traces"] == [
        "h100-sxm · bound",
        "h100-sxm · prediction",
        "h100-cal.yaml · bound",
        "h100-cal.yaml · prediction",
    ]
    # tp 16 is beyond the 8-GPU NVLink domain: left out of each prediction, 3 batches x 1 slice each
    # (llama-3-8b fits 16 chips at every batch), for each chip file.
    assert data["models"]["llama-3-8b"]["left_out_of_prediction"] == {"h100-sxm": 3, "h100-cal.yaml": 3}
    text = out.read_text().replace("\\u002f", "/")
    assert "calibrated profile of h100-sxm (file " in text and "tp ≤ 8 only" in text
    assert data["sources"]["hardware:h100-cal.yaml"].startswith("calibrated profile (test")
    assert data["sources"]["hardware:h100-sxm"].startswith("spec sheet")


def test_prediction_of_a_profile_is_slower_than_its_bound() -> None:
    # The profile's GEMMs run at half the peak rates plus 10 us each, so every prediction point of
    # the profile is slower than the spec-sheet bound of the same configuration.
    import tempfile

    from roofline.views.report.pareto_report import frontier_traces
    from roofline.views.report.runs import model_run

    with tempfile.TemporaryDirectory() as folder:
        cal = write_profile(Path(folder) / "h100-cal.yaml")
        scenario = Scenario(
            models=("llama-3-8b",),
            hardware=(str(cal),),
            weights=("bf16",),
            kv_dtypes=("bf16",),
            batch=(1, 16),
            chips=(1,),
            context=(2048,),
            traces=("bound", "prediction"),
        )
        refs = scenario.hardware_refs()
        traces, _ = frontier_traces(model_run("llama-3-8b", refs, scenario), refs, scenario)
    bound, pred = (t.result for t in traces)
    assert [t.kind for t in traces] == ["bound", "prediction"]
    assert np.all(pred.columns["step_time_s"] > bound.columns["step_time_s"])
    # Batch 1 on one H100: memory-bound weight reads, 16.06e9 B / 3.35e12 B/s = 4.79 ms, + KV
    # 2048 x 131,072 B = 0.27e9 B: a 4.87 ms spec-sheet bound.  The profile reads the weights at
    # half the bandwidth (9.6 ms) plus 10 us per GEMM, the KV at the spec rate: above 1.9x the bound.
    assert bound.columns["step_time_s"][0] == pytest.approx((16.06e9 + 2048 * 131072) / 3.35e12, rel=0.01)
    assert pred.columns["step_time_s"][0] > 1.9 * bound.columns["step_time_s"][0]


def test_book_tables_only_with_a_book_model() -> None:
    base = dict(hardware=("tpu-v5e",), weights=("bf16",), kv_dtypes=("bf16",), batch=(1, 8), chips=(8,), tails=False)
    text, summary = build_report(Scenario(models=("llama-3-8b",), **base))
    assert not summary["book_tables"] and "the book's LLaMA-2-13B tables" not in text
    text, summary = build_report(Scenario(models=("llama-3-8b", "llama-2-13b"), **base))
    assert summary["book_tables"] and "the book's LLaMA-2-13B tables" in text


def test_dropped_configurations_are_listed(small_report: tuple[str, dict]) -> None:
    # From the hand count above: v5e 1 chip drops all 5 batches (none fits), 2 chips every batch
    # from 8 up (4), 8 chips from 64 up (2); H100 1 chip from 16 up (3), 2 chips from 64 (2), 8 chips
    # from 256 (1): six slots, 5 + 4 + 2 + 3 + 2 + 1 = 17 dropped points, as counted.
    text, summary = small_report
    assert summary["models"]["llama-2-13b"]["dropped_configurations"] == 6
    assert "6 configurations dropped for memory" in text
    # The row of 2x v5e: batch 1 fits, 8 is the first dropped; 26.03 + 8 x 6.711 = 79.7 GB of 34.4 GB.
    assert "<td>2</td><td>2</td><td>8192</td><td>1</td><td>4</td><td>8</td><td>79.7</td><td>34.4</td>" in text


def test_log_axes_have_readable_ticks() -> None:
    from roofline.views.report.figures import axis, tick_label

    ax = axis("t", [1.0, 30.0])  # 1.5 decades: 1, 2, 5 per decade
    assert ax["type"] == "log" and ax["tickvals"] == [1.0, 2.0, 5.0, 10.0, 20.0]
    ax = axis("t", [1.0, 1e5])  # 5 decades: one tick per decade
    assert ax["tickvals"] == [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
    assert [tick_label(v) for v in (0.5, 20.0, 2000.0, 1e6, 1e12)] == ["0.5", "20", "2k", "1M", "1T"]
    assert axis("t", [1.0, 19.0])["type"] == "linear"  # within 20x stays linear


def test_report_has_the_classic_roofline_and_op_table(small_report: tuple[str, dict]) -> None:
    text, summary = small_report
    ops = summary["models"]["llama-2-13b"]["ops"]
    # The first chip, tpu-v5e: 1 chip does not hold the 26 GB of weights, 2 chips do (batch 1 only).
    assert (ops["hardware"], ops["chips"], ops["batch"]) == ("tpu-v5e", 2, 1)
    assert ops["decode:spec sheet"]["ops_s"] == pytest.approx(ops["decode:spec sheet"]["local_s"], rel=1e-9)
    assert "arithmetic intensity (FLOPs per byte of weights + KV)" in text and "MLP gate+up" in text
