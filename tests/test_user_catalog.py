"""The user catalog: saved models and hardware files found by name, listed with their origin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.specs import load_hardware, load_model, user_catalog
from tests.inprocess import assert_refused, run_roofline

REPO = Path(__file__).resolve().parent.parent
CONFIG = str(REPO / "examples" / "hf" / "Meta-Llama-3.1-8B" / "config.json")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(user_catalog.HOME_VARIABLE, str(tmp_path / "catalog"))
    return tmp_path / "catalog"


def test_home_is_the_variable_else_the_platform_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path))
    assert user_catalog.user_home() == tmp_path
    monkeypatch.delenv("ROOFLINE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(user_catalog.sys, "platform", "linux")
    assert user_catalog.user_home() == tmp_path / "xdg" / "roofline"


def test_imported_model_is_saved_and_found_by_name(home):
    run = run_roofline("model", "import", CONFIG, "--name", "my-llama", "--save")
    assert run.code == 0, run.stderr
    assert (home / "models" / "my-llama.yaml").is_file()
    # Llama-3.1-8B: 8.03 B parameters (the published count), under its saved name.
    step = json.loads(run_roofline("step", "--model", "my-llama", "--hardware", "h100-sxm", "--json").stdout)
    assert step["model"] == "my-llama" and step["param_count"] == pytest.approx(8.03e9, rel=1e-3)
    listed = json.loads(run_roofline("model", "list", "--json").stdout)
    origin = {r["name"]: r["origin"] for r in listed}
    assert origin["my-llama"] == str(home / "models" / "my-llama.yaml") and origin["llama-3-8b"] == "built-in"
    assert "user" in run_roofline("model", "list").stdout
    again = run_roofline("model", "import", CONFIG, "--name", "my-llama", "--save")
    assert_refused(again, "--name", "already saved", "--force")
    assert run_roofline("model", "import", CONFIG, "--name", "my-llama", "--save", "--force").code == 0


def test_hardware_file_is_saved_under_a_name_and_listed(home, tmp_path):
    source = REPO / "hardware" / "h100-sxm.yaml"
    chip = tmp_path / "my-h100.yaml"
    chip.write_text(source.read_text(encoding="utf-8").replace("price_per_chip_hour: 3.0", "price_per_chip_hour: 2.0"))
    run = run_roofline("hardware", "add", str(chip), "--name", "cheap-h100")
    assert run.code == 0, run.stderr
    assert load_hardware("cheap-h100").price_per_chip_hour == 2.0
    assert load_hardware("cheap-h100").name == "cheap-h100"
    listed = json.loads(run_roofline("hardware", "list", "--json").stdout)
    assert {r["name"]: r["origin"] for r in listed}["cheap-h100"].endswith("cheap-h100.yaml")


def test_saving_refuses_builtin_and_bad_names_before_writing(home, tmp_path):
    source = str(REPO / "models" / "llama-3-8b.yaml")
    for name, needle in (
        ("llama-3-8b", "built-in"),
        ("Has Space", "cannot be a catalog name"),
        ("a/b", "cannot be a catalog name"),
    ):
        assert_refused(run_roofline("model", "add", source, "--name", name), "--name", needle)
    assert not home.exists()
    assert load_model("llama-3-8b").source  # the built-in still wins


def test_a_builtin_name_always_wins(home):
    folder = home / "models"
    folder.mkdir(parents=True)
    (folder / "llama-3-8b.yaml").write_text("not: a model\n")  # written by hand: never read
    assert load_model("llama-3-8b").num_layers == 32
