"""The built-in catalog's generated form: current, equal to pydantic validation, and never used for an edited file.

``roofline/data/validated/`` is what lets ``roofline step`` start without YAML or pydantic; these
tests keep it honest: regenerating it from the YAML files gives the same files, and every spec
loaded from it equals the one pydantic validation of its YAML file produces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.specs import HardwareSpec, ModelSpec, hardware_from_dict, load_hardware, load_model, model_from_dict
from roofline.specs import catalog as spec_catalog
from roofline.specs.files import read_yaml
from roofline.specs.schema import schema_for

REPO = Path(__file__).resolve().parent.parent
KINDS = ("hardware", "models")
REGENERATE = "stale: run `python -m roofline.specs.catalog` and commit roofline/data/validated/"


@pytest.mark.parametrize("kind", KINDS)
def test_generated_form_is_current(kind):
    entries = spec_catalog.generate(kind)
    on_disk = {p.stem for p in (spec_catalog.GENERATED / kind).glob("*.json")}
    assert on_disk == set(entries), REGENERATE
    for name, entry in entries.items():
        text = spec_catalog.generated_path(kind, name).read_text(encoding="utf-8")
        assert text == spec_catalog.generated_text(entry), f"{kind}/{name}: {REGENERATE}"


@pytest.mark.parametrize("name", sorted(spec_catalog.builtin_catalog("hardware")))
def test_builtin_hardware_equals_pydantic_validation_of_its_yaml(name):
    path = spec_catalog.builtin_catalog("hardware")[name]
    fast = spec_catalog.generated_spec("hardware", path)
    assert isinstance(fast, HardwareSpec)  # the generated form is used, not the fallback
    validated = hardware_from_dict(read_yaml(path), str(path))
    assert fast == validated == load_hardware(name)
    assert fast.model_dump() == schema_for(HardwareSpec).model_validate(read_yaml(path)).model_dump()


@pytest.mark.parametrize("name", sorted(spec_catalog.builtin_catalog("models")))
def test_builtin_model_equals_pydantic_validation_of_its_yaml(name):
    path = spec_catalog.builtin_catalog("models")[name]
    fast = spec_catalog.generated_spec("models", path)
    assert isinstance(fast, ModelSpec)
    assert fast == model_from_dict(read_yaml(path), str(path)) == load_model(name)


@pytest.mark.parametrize("exclude_none", [False, True])
def test_model_dump_matches_the_pydantic_models(exclude_none):
    # h100-sxm-cal has nested calibration and engine blocks; deepseek-v3 has MLA and MoE fields.
    for spec, kind in ((load_hardware("h100-sxm-cal"), HardwareSpec), (load_model("deepseek-v3"), ModelSpec)):
        pydantic_model = schema_for(kind).model_validate(spec.model_dump())
        assert spec.model_dump(exclude_none=exclude_none) == pydantic_model.model_dump(exclude_none=exclude_none)


def test_an_edited_builtin_file_is_validated_not_served_stale(tmp_path):
    # A copy of tpu-v5e.yaml under the same name, its price changed from 1.2 to 1.3 USD per chip-hour.
    original = spec_catalog.builtin_catalog("hardware")["tpu-v5e"]
    edited = tmp_path / "tpu-v5e.yaml"
    edited.write_text(
        original.read_text(encoding="utf-8").replace("price_per_chip_hour: 1.2", "price_per_chip_hour: 1.3"),
        encoding="utf-8",
    )
    assert spec_catalog.generated_spec("hardware", edited) is None
    assert load_hardware(edited).price_per_chip_hour == 1.3
    assert load_hardware("tpu-v5e").price_per_chip_hour == 1.2


def test_a_damaged_generated_entry_falls_back_to_validation(tmp_path, monkeypatch):
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "tpu-v5e.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(spec_catalog, "GENERATED", tmp_path)
    path = spec_catalog.builtin_catalog("hardware")["tpu-v5e"]
    assert spec_catalog.generated_spec("hardware", path) is None
    entry = json.loads((REPO / "roofline/data/validated/hardware/tpu-v5e.json").read_text(encoding="utf-8"))
    (tmp_path / "hardware" / "tpu-v5e.json").write_text(json.dumps({**entry, "format": 0}), encoding="utf-8")
    assert spec_catalog.generated_spec("hardware", path) is None


def test_step_json_loads_no_pydantic_yaml_rich_console_or_collectives():
    # Start-up: the built-in catalog comes from its generated form, typer's options use their own
    # parsers, rich's console is made only to print, and collectives load only for tp > 1.
    code = (
        "import sys; sys.argv = ['roofline', 'step', '--model', 'llama-2-13b', '--hardware', 'tpu-v5e', "
        "'--chips', '8', '--batch', '16', '--context', '8192', '--json']\n"
        "from roofline.views.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('pydantic', 'yaml', 'rich.console', 'roofline.deploy.fabric', "
        "'roofline.formulas.collectives', "
        "'roofline.specs.schema') if m in sys.modules]\n"
        "print('LOADED', bad, file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    assert json.loads(run.stdout)["hardware"] == "tpu-v5e"
    assert "LOADED []" in run.stderr, run.stderr
