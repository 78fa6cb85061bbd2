"""`roofline report`: --compare, targets no deployment meets, and bad input (one line, exit 2, no file)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .conftest import run_cli

SMALL = ("--models", "llama-3-8b", "--chips", "1,2", "--batch", "1..256", "--no-tails")


@pytest.mark.slow
def test_compare_two_chips_ratio_of_frontiers(tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    proc = run_cli("report", "--compare", "h100-sxm", "b200", *SMALL, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["traces"] == ["h100-sxm · prediction", "b200 · prediction"]
    c = data["compare"]["llama-3-8b"]
    assert c["entries"] == ["h100-sxm", "b200"]
    tps, cost = np.array(c["tokens_per_s_per_chip_ratio"]), np.array(c["cost_per_million_tokens_ratio"])
    # Within one chip the cheapest $/Mtok at an interactivity is the most tokens/s per chip there ($/Mtok =
    # price / tokens/s per chip), so at every level cost ratio x throughput ratio = price ratio = $6 / $3.
    assert np.allclose(cost * tps, 2.0)
    # Decode is memory-bound on both spec sheets: B200 reads HBM at 8.0 TB/s against H100's 3.35 (2.4x) and
    # holds 180 GB against 80, so at equal step time it carries more than twice the tokens/s per chip.
    assert np.all(tps > 2.0) and c["median_tokens_per_s_per_chip_ratio"] > 2.0
    text = out.read_text()
    assert "b200 against h100-sxm" in text and "b200 over h100-sxm at equal interactivity" in text


@pytest.mark.slow
def test_compare_engines_and_deployments(tmp_path: Path) -> None:
    # Two engine entries of one profile, then two layouts of one chip: each pair labelled apart.
    out = tmp_path / "e.html"
    proc = run_cli(
        "report",
        "--compare",
        "h100-sxm-cal@trtllm/0.5.0",
        "h100-sxm-cal@trtllm/1.0",
        *SMALL,
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["compare"]["llama-3-8b"]["entries"] == [
        "h100-sxm-cal@trtllm/0.5.0",
        "h100-sxm-cal@trtllm/1.0",
    ]
    proc = run_cli(
        "report", "--compare", "h200:tp=1,weights=bf16", "h200:tp=2,weights=fp8", *SMALL, "--out", str(out), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    best = data["models"]["llama-3-8b"]["cheapest"]
    assert (best["tp"], best["weights"]) in ((1, "bf16"), (2, "fp8"))
    assert data["compare"]["llama-3-8b"]["entries"] == ["h200:tp=1,weights=bf16", "h200:tp=2,weights=fp8"]


@pytest.mark.slow
def test_a_target_no_deployment_meets_says_so(tmp_path: Path) -> None:
    # 1 ms per output token: no llama-3-8b decode step on one or two H100s is that short (batch 1 alone
    # reads 16 GB of weights at 3.35 TB/s: 4.8 ms).  The page is written and says so; so does the terminal.
    out = tmp_path / "r.html"
    proc = run_cli("report", *SMALL, "--hardware", "h100-sxm", "--tpot-slo", "1ms", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no deployment of llama-3-8b meets" in lines[0] and "TPOT ≤ 1 ms" in lines[0]
    assert "llama-3-8b</b>: no deployment meets TTFT ≤ 1 s and TPOT ≤ 1 ms" in out.read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--compare", "h100-sxm"), "--compare: give exactly two entries to compare"),
        (("--compare", "h100-sxm", "b200", "h200"), "--compare: give exactly two entries to compare"),
        (("--compare",), "--compare: give exactly two entries to compare"),
        (("h100-sxm", "b200"), "need --compare"),
        (("--compare", "h100-sxm", "h100-sxn"), "unknown hardware 'h100-sxn'"),
        (("--compare", "h100-sxm", "h100-sxm"), "--compare: the two entries are the same"),
        (
            ("--compare", "h100-sxm@trtllm/0.1", "b200"),
            "--compare h100-sxm@trtllm/0.1: engine 'trtllm/0.1': no such engine entry",
        ),
        (("--compare", "h100-sxm:chips=2,tp=4", "b200"), "entry h100-sxm:chips=2,tp=4: tp: no degree in [4] fits"),
        (("--compare", "h100-sxm:batch=8", "b200"), "key one of tp, ep, chips, pp, weights, kv, compute"),
        (("--models", "llama-3-9b"), "unknown model 'llama-3-9b'"),
        (("--hardware", "h100-sxm,tpu-v9"), "unknown hardware 'tpu-v9'"),
        (("--tpot-slo", "0"), "--tpot-slo"),
        (("--ttft-slo", "-1s"), "--ttft-slo"),
        (("--kv-dtype", "fp9"), "--kv-dtype: unknown dtype 'fp9'"),
    ],
)
@pytest.mark.slow
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = tmp_path / "never.html"
    model = () if "--models" in args else ("--models", "llama-3-8b")
    proc = run_cli("report", *args, *model, "--chips", "1", "--no-tails", "--out", str(out))
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_compare_needs_exactly_two_entries(tmp_path: Path) -> None:
    out = tmp_path / "never.html"
    proc = run_cli("report", "--compare", "h100-sxm", "b200", "h200", "--out", str(out))
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip() == (
        "error: --compare: give exactly two entries to compare, e.g. --compare h100-sxm b200 (got 3: h100-sxm, "
        "b200, h200)"
    )


@pytest.mark.slow
def test_scenario_file_sets_options_and_flags_win(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "models: [llama-3-8b]\nhardware: [h100-sxm, b200]\nchips: [1, 2]\nbatch: 1..64\ntpot_slo: 30ms\n"
        "ttft_slo_s: 0.5\ntails: false\nprices: {h100-sxm: 2.5}\n"
    )
    out = tmp_path / "r.html"
    proc = run_cli("report", "--scenario", str(scenario), "--tpot-slo", "40ms", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["target"] == {"ttft_slo_s": 0.5, "tpot_slo_s": 0.04}  # the flag wins over the file's 30 ms
    assert data["traces"] == ["h100-sxm · prediction", "b200 · prediction"] and data["sources"]["price:h100-sxm"]
    assert all(m["tails"] is None for m in data["models"].values())
    scenario.write_text("compare: [h100-sxm, b200]\nmodels: llama-3-8b\nchips: 1\nbatch: 1,8\ntails: false\n")
    proc = run_cli("report", "--scenario", str(scenario), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["compare"]["llama-3-8b"]["entries"] == ["h100-sxm", "b200"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("models: [llama-3-8b]\nbogus: 1\n", "unknown key 'bogus'; allowed: models, hardware"),
        ("tpot_slo: -3\n", "tpot_slo: must be seconds in (0,"),
        ("models: [llama-3-8b, [x]]\n", "models: expected a list of names or numbers"),
        ("tails: maybe\n", "tails: must be true or false"),
        ("kv_dtype: bf16\nkv_dtypes: fp8\n", "kv_dtypes sets kv-dtype a second time"),
        ("models: [\n", "malformed YAML"),
    ],
)
def test_a_bad_scenario_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    out = tmp_path / "never.html"
    proc = run_cli("report", "--scenario", str(scenario), "--out", str(out))
    assert proc.returncode == 2 and not out.exists(), proc.stdout
    assert proc.stderr.startswith(f"error: --scenario {scenario}: ") and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
