"""Spec loading: robust numbers, clear one-line errors."""

from __future__ import annotations

import pytest

from roofline.core.errors import SpecError
from roofline.core.units import GB, GiB, parse_quantity
from roofline.specs import load_hardware, load_model

V5E_YAML = """\
name: my-chip
flops_per_s: {bf16: 1.97e14}     # YAML 1.1 reads this as a string
hbm_bytes: 16 GiB                # units are explicit
hbm_bandwidth_bytes_per_s: 819 GB/s
ici_bandwidth_bytes_per_s: 4.5e+10
ici_links: 4
ici_hop_latency_s: 1 us
price_per_chip_hour: 1.2
"""


def test_parse_quantity_distinguishes_gb_and_gib():
    assert parse_quantity("16 GiB") == 16 * GiB == 17179869184
    assert parse_quantity("16 GB") == 16 * GB
    assert parse_quantity("8.2e11") == 8.2e11
    assert parse_quantity("819 GB/s") == 819e9
    assert parse_quantity("1 us") == 1e-6
    with pytest.raises(ValueError):
        parse_quantity("16 gigs")


def test_hardware_yaml_with_units_and_yaml11_floats(tmp_path):
    path = tmp_path / "chip.yaml"
    path.write_text(V5E_YAML)
    hw = load_hardware(str(path))
    assert hw.flops_per_s["bf16"] == 1.97e14
    assert hw.hbm_bytes == 17179869184
    assert hw.hbm_bandwidth_bytes_per_s == 819e9
    assert hw.ici_hop_latency_s == 1e-6


@pytest.mark.parametrize(
    ("mutation", "fragment"),
    [
        (("hbm_bytes: 16 GiB", "hbm_bytes: -5"), "field 'hbm_bytes'"),
        (("ici_links: 4\n", ""), "field 'ici_links': missing"),
        (("ici_links: 4", "ici_linkz: 4"), "did you mean 'ici_links'"),
        (("{bf16: 1.97e14}", "{bf17: 1.97e14}"), "unknown dtype 'bf17'"),
        (("name: my-chip", "name: [unclosed"), "malformed YAML at line 2"),
    ],
)
def test_bad_hardware_yaml_one_line(tmp_path, mutation, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(V5E_YAML.replace(*mutation))
    with pytest.raises(SpecError) as err:
        load_hardware(str(path))
    message = str(err.value)
    assert fragment in message and str(path) in message and "\n" not in message


def test_unknown_names_suggest_nearest():
    with pytest.raises(SpecError, match="did you mean: h100-sxm"):
        load_hardware("h100")
    with pytest.raises(SpecError, match="llama-2-13b"):
        load_model("llama-2-31b")


def test_model_consistency_checked(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        "name: m\nnum_layers: 2\nd_model: 64\nd_ff: 128\nnum_heads: 6\nnum_kv_heads: 4\nhead_dim: 16\nvocab_size: 100\n"
    )
    with pytest.raises(SpecError, match="multiple of num_kv_heads"):
        load_model(str(path))
