"""Extension points as registries: a toy entry added from outside the package shows up where it should.

Each test plays a user who adds one thing without editing roofline: a CLI command from another
installed package (an entry point), a chip and a model dropped into the user catalog.  The recipes
are in docs/contributing.md; the engine-term, scheduler-policy and kernel-family registries have
their own toy tests beside their code's tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

TOY_COMMAND = '''
"""A toy roofline command from another package: the weight bytes of a built-in model."""
import json

import typer


def weights_command(
    model: str = typer.Option(..., "--model", help="Model name."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Weight bytes of a model in bf16.  Example: roofline toy-weights --model llama-3-8b"""
    import roofline as rl

    spec = rl.load_model(model)
    value = rl.memory.param_counts(spec).total * 2.0
    print(json.dumps({"model": model, "weight_bytes": value}) if json_out else f"{model}: {value:.4g} B")


def register(app: typer.Typer) -> None:
    app.command("toy-weights")(weights_command)
'''


def _plugin_path(tmp_path: Path) -> dict[str, str]:
    """A folder holding a toy package and its installed metadata (an entry point), on PYTHONPATH."""
    (tmp_path / "toy_roofline_command.py").write_text(TOY_COMMAND, encoding="utf-8")
    info = tmp_path / "toy_roofline_command-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-roofline-command\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[roofline.commands]\ntoy-weights = toy_roofline_command\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}


def _roofline(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roofline", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def test_a_command_from_another_package_runs_and_is_listed(tmp_path):
    env = _plugin_path(tmp_path)
    run = _roofline("toy-weights", "--model", "llama-3-8b", "--json", env=env)
    assert run.returncode == 0, run.stderr
    # Llama-3-8B: 8,030,261,248 parameters (HF config.json), 2 bytes each in bf16.
    assert json.loads(run.stdout) == {"model": "llama-3-8b", "weight_bytes": 2 * 8_030_261_248}
    listing = _roofline("--help", env=env)
    assert listing.returncode == 0 and "toy-weights" in listing.stdout
    # A built-in command still loads only its own module (the plugin's is not imported).
    step = _roofline("step", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--json", env=env)
    assert step.returncode == 0, step.stderr


def test_without_the_plugin_the_command_is_unknown(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = _roofline("toy-weights", "--model", "llama-3-8b", env=env)
    assert run.returncode == 2
    assert "toy-weights" in run.stderr and "Traceback" not in run.stderr


# A toy chip: round numbers, so every figure below is a hand derivation.
TOY_CHIP = """\
name: toy-chip  # a made-up chip for the registry test
kind: gpu  # test value
flops_per_s: {bf16: 1.0e+15}  # test value: 1 PFLOP/s dense bf16
hbm_bytes: 100 GB  # test value
hbm_bandwidth_bytes_per_s: 4 TB/s  # test value
ici_bandwidth_bytes_per_s: 4.0e+11  # test value
ici_links: 1  # test value
ici_hop_latency_s: 2 us  # test value
price_per_chip_hour: 2.0  # test value, USD
"""

# A toy model: one layer, so the bytes are easy to derive by hand.
TOY_MODEL = """\
name: toy-model  # a made-up model for the registry test
source: test  # test value
num_layers: 2  # test value
d_model: 1024  # test value
d_ff: 4096  # test value
num_heads: 8  # test value
num_kv_heads: 8  # test value
head_dim: 128  # test value
vocab_size: 1000  # test value
gated_mlp: false  # test value
tie_embeddings: true  # test value
"""


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """A user catalog with the toy chip and model dropped in as files (no command, no regeneration)."""
    home = tmp_path / "home"
    (home / "hardware").mkdir(parents=True)
    (home / "models").mkdir()
    (home / "hardware" / "toy-chip.yaml").write_text(TOY_CHIP, encoding="utf-8")
    (home / "models" / "toy-model.yaml").write_text(TOY_MODEL, encoding="utf-8")
    monkeypatch.setenv("ROOFLINE_HOME", str(home))
    return home


def test_a_dropped_in_chip_and_model_are_listed_and_priced(catalog):
    from tests.inprocess import run_roofline

    chips = run_roofline("hardware", "list", "--json")
    assert chips.code == 0, chips.stderr
    assert "toy-chip" in chips.stdout
    models = run_roofline("model", "list", "--json")
    assert models.code == 0 and "toy-model" in models.stdout
    run = run_roofline("step", "--model", "toy-model", "--hardware", "toy-chip", "--batch", "1", "--context", "1000")
    assert run.code == 0, run.stderr
    out = run_roofline(
        "step", "--model", "toy-model", "--hardware", "toy-chip", "--batch", "1", "--context", "1000", "--json"
    )
    data = json.loads(out.stdout)
    # Parameters: per layer attention 4·D·N·H = 4·1024·1024 = 4,194,304 and MLP 2·D·F = 8,388,608,
    # two layers = 25,165,824; tied embeddings 1000·1024 = 1,024,000; norms 2 per layer + final of D each
    # = 5·1024 = 5,120.  Total 26,194,944; bf16 bytes 52,389,888.
    assert data["param_count"] == 26_194_944
    assert data["param_bytes"] == 2 * 26_194_944
    # KV per token: 2 (K, V) · L · K · H · 2 bytes = 2·2·8·128·2 = 8,192 B; 1000 tokens = 8,192,000 B.
    assert data["kv_bytes_per_token"] == 8192
    assert data["kv_bytes"] == 8_192_000
    # A memory-bound step on the spec sheet: (weights + KV) / 4 TB/s (FLOPs 2·P at 1 PFLOP/s are far less).
    assert data["step_time_s"] == pytest.approx((2 * 26_194_944 + 8_192_000) / 4e12, rel=1e-12)
    assert data["hardware"] == "toy-chip"
