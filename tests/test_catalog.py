"""The built-in catalog: every hardware/ and models/ YAML file loads, is sourced, and
carries the book's headline numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from roofline.specs import HardwareSpec, ModelSpec, hardware_names, load_hardware, load_model, model_names

REPO = Path(__file__).resolve().parent.parent
HARDWARE_FILES = sorted((REPO / "hardware").glob("*.yaml"))
MODEL_FILES = sorted((REPO / "models").glob("*.yaml"))
ALL_FILES = HARDWARE_FILES + MODEL_FILES

REQUIRED_HARDWARE = {
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "a100-80gb",
    "h100-sxm",
    "h200",
    "b200",
}
REQUIRED_MODELS = {
    "llama-2-13b",
    "llama-2-13b-gqa",
    "book-exercise",
    "book-exercise-moe",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-405b",
    "mixtral-8x7b",
    "qwen2.5-0.5b",
    "opt-125m",
    "mistral-7b-v0.1",
    "gemma-2-9b",
    "deepseek-v3",
}
DENSE_DTYPES = {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"}

# A standalone number: not glued to a word, a dot or a dash on either side, so names such
# as "tpu-v5e", "llama-3.1-405b" or "qwen2.5" do not count but "4096" or "1.97e+14" do.
_NUMBER = re.compile(r"(?<![\w.+-])[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(?![\w.])")


def _code_part(line: str) -> str:
    """The line without its comment (YAML comments start at ' #' outside quotes)."""
    in_single = in_double = False
    for i, ch in enumerate(line):
        if ch == "'" and not in_double:
            in_single = not in_single
        elif ch == '"' and not in_single:
            in_double = not in_double
        elif ch == "#" and not in_single and not in_double and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def test_catalog_folders_hold_the_required_entries():
    assert {p.stem for p in HARDWARE_FILES} >= REQUIRED_HARDWARE
    assert {p.stem for p in MODEL_FILES} >= REQUIRED_MODELS
    assert set(hardware_names()) >= REQUIRED_HARDWARE
    assert set(model_names()) >= REQUIRED_MODELS


@pytest.mark.parametrize("path", HARDWARE_FILES, ids=lambda p: p.stem)
def test_hardware_file_loads_by_name(path: Path):
    spec = load_hardware(path.stem)
    assert isinstance(spec, HardwareSpec)
    assert spec.name == path.stem
    assert spec.source, "every catalog entry needs a source summary"
    assert set(spec.flops_per_s) <= DENSE_DTYPES
    assert "bf16" in spec.flops_per_s
    if spec.kind == "gpu":
        assert spec.ici_topology == "switch"
        assert spec.ici_links == 1
    else:
        assert spec.ici_topology in {"torus2d", "torus3d"}
        assert spec.ici_links == (4 if spec.ici_topology == "torus2d" else 6)


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_file_loads_by_name(path: Path):
    spec = load_model(path.stem)
    assert isinstance(spec, ModelSpec)
    assert spec.name == path.stem
    assert spec.source, "every catalog entry needs a source summary"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_file_stem_is_name_and_yaml_is_clean(path: Path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["name"] == path.stem

    # Every number must reach PyYAML as a number, not as a string ("1.97e14" trap).
    def walk(value, where):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}.{k}")
        elif isinstance(value, str) and where != ".source" and where != ".name":
            assert not _NUMBER.fullmatch(value.strip()), f"{path.name}{where}: number as string"

    walk(data, "")


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_number_has_a_source_comment(path: Path):
    bad = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        code = _code_part(line)
        if _NUMBER.search(code) and code == line:
            bad.append(f"{path.name}:{lineno}: {line.strip()}")
    assert not bad, "numbers without a source comment:\n" + "\n".join(bad)


def test_number_pattern_ignores_names_and_finds_values():
    assert not _NUMBER.search("name: tpu-v5e")
    assert not _NUMBER.search("name: llama-3.1-405b")
    assert not _NUMBER.search("name: qwen2.5-0.5b")
    assert _NUMBER.search("d_model: 4096")
    assert _NUMBER.search("  bf16: 1.97e+14")
    assert _NUMBER.search("hbm_bandwidth_bytes_per_s: 8.2e+11")


def test_tpu_v5e_matches_the_book():
    v5e = load_hardware("tpu-v5e")
    assert v5e.kind == "tpu"
    assert v5e.flops_per_s == {"bf16": 1.97e14, "int8": 3.94e14}
    assert v5e.hbm_bytes == 16 * 2**30
    assert v5e.hbm_bandwidth_bytes_per_s == 8.2e11
    assert v5e.ici_bandwidth_bytes_per_s == 4.5e10
    assert v5e.ici_links == 4
    assert v5e.ici_hop_latency_s == 1e-6
    assert v5e.price_per_chip_hour == 1.2
    # The book's critical batch size: 1.97e14 / 8.2e11 = 240.
    assert round(v5e.flops_for("bf16") / v5e.hbm_bandwidth_bytes_per_s) == 240


def test_h100_critical_ratio():
    h100 = load_hardware("h100-sxm")
    assert h100.flops_for("bf16") == 9.89e14  # dense, not the with-sparsity 1979 TFLOPS
    assert h100.flops_for("fp8") == 1.979e15
    assert h100.hbm_bandwidth_bytes_per_s == 3.35e12
    assert h100.flops_for("bf16") / h100.hbm_bandwidth_bytes_per_s == pytest.approx(295, abs=1)


def test_gpu_headline_figures():
    assert load_hardware("h200").flops_per_s == load_hardware("h100-sxm").flops_per_s
    assert load_hardware("h200").hbm_bandwidth_bytes_per_s == 4.8e12
    a100 = load_hardware("a100-80gb")
    assert (a100.flops_for("bf16"), a100.flops_for("int8")) == (3.12e14, 6.24e14)
    assert a100.hbm_bandwidth_bytes_per_s == 2.039e12
    b200 = load_hardware("b200")
    assert "fp4" in b200.flops_per_s
    assert b200.flops_for("fp4") == 2 * b200.flops_for("fp8") == 4 * b200.flops_for("bf16")


def test_book_models():
    m = load_model("llama-2-13b")
    assert (m.num_layers, m.d_model, m.d_ff, m.num_heads, m.num_kv_heads, m.head_dim, m.vocab_size) == (
        40,
        5120,
        13824,
        40,
        40,
        128,
        32000,
    )
    assert load_model("llama-2-13b-gqa").num_kv_heads == 8
    ex = load_model("book-exercise")
    assert (ex.num_layers, ex.d_model, ex.d_ff, ex.num_heads, ex.num_kv_heads, ex.head_dim, ex.vocab_size) == (
        64,
        4096,
        16384,
        32,
        8,
        256,
        32128,
    )
    # The book: L*D*(3F + 2H(N+K)) + D*V = 18.4e9 parameters.
    params = (
        ex.num_layers * ex.d_model * (3 * ex.d_ff + 2 * ex.head_dim * (ex.num_heads + ex.num_kv_heads))
        + ex.d_model * ex.vocab_size
    )
    assert params == pytest.approx(18.4e9, rel=0.01)
    moe = load_model("book-exercise-moe")
    assert (moe.num_experts, moe.experts_per_token) == (16, 2)


def test_optional_features_are_exercised():
    assert load_model("mistral-7b-v0.1").num_local_layers == 32
    gemma = load_model("gemma-2-9b")
    assert (gemma.sliding_window, gemma.num_local_layers, gemma.head_dim) == (4096, 21, 256)
    ds = load_model("deepseek-v3")
    assert ds.is_mla and ds.is_moe
    assert (ds.kv_lora_rank, ds.qk_rope_head_dim, ds.num_dense_layers) == (512, 64, 3)
    assert load_model("mixtral-8x7b").sliding_window is None
    opt = load_model("opt-125m")
    assert not opt.gated_mlp and opt.qkv_bias and opt.o_bias and opt.mlp_bias and opt.norm_bias
    assert opt.learned_position_embeddings == 2050
    qwen = load_model("qwen2.5-0.5b")
    assert qwen.tie_embeddings and qwen.qkv_bias and not qwen.o_bias
