"""DeepSeek-R1 and Kimi-K2: the built-in files equal their config.json import (MLA, MoE, fp8 block precision),
and `--weights checkpoint` reads that precision in every command, `simulate` included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.specs import load_model, model_from_dict
from roofline.specs.hf.config import model_dict_from_hf_config
from tests.inprocess import run_roofline
from tests.test_hf_config import DEEPSEEK_V3

KIMI = Path(__file__).parent / "fixtures" / "hf" / "kimi-k2-instruct" / "config.json"
SHAPE = (
    "num_layers",
    "d_model",
    "d_ff",
    "num_heads",
    "head_dim",
    "vocab_size",
    "num_experts",
    "experts_per_token",
    "num_shared_experts",
    "shared_expert_d_ff",
    "num_dense_layers",
    "dense_d_ff",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "precision",
)
#: quantization_config fp8 with weight_block_size [128, 128]: the linear layers in fp8_block, the rest bf16.
FP8_BLOCK = {"default": "bf16", "attention": "fp8_block", "mlp": "fp8_block", "experts": "fp8_block"}


@pytest.mark.parametrize(
    ("name", "config"),
    [("deepseek-r1", DEEPSEEK_V3), ("deepseek-v3", DEEPSEEK_V3), ("kimi-k2", json.loads(KIMI.read_text()))],
)
def test_builtin_equals_its_config_json_import(name, config):
    # DeepSeek-R1's config.json carries the same shape fields as DeepSeek-V3's (architecture
    # DeepseekV3ForCausalLM, 256 experts, first_k_dense_replace 3, fp8 [128, 128] blocks).
    imported = model_from_dict(model_dict_from_hf_config(config, name=name, origin="config.json"))
    builtin = load_model(name)
    for key in SHAPE:
        assert getattr(imported, key) == getattr(builtin, key), key
    assert builtin.precision == FP8_BLOCK


def test_checkpoint_weights_in_step_and_simulate_from_a_config_json():
    # Kimi-K2 in its fp8 blocks: 1.03 TB of weights (bf16 embeddings 2 x 163840 x 7168 x 2 = 4.70 GB),
    # which 8 x B200 (1.44 TB) hold; step and simulate read the same checkpoint precision.
    step = run_roofline(
        "step", "--model", str(KIMI), "--hardware", "b200", "--chips", "8", "--tp", "8", "--weights", "checkpoint"
    )
    assert step.code == 0, step.stderr
    sim = run_roofline(
        "simulate",
        "--model",
        str(KIMI),
        "--hardware",
        "b200",
        "--tp",
        "1",
        "--ep",
        "8",
        "--weights",
        "checkpoint",
        "--concurrency",
        "16",
        "-i",
        "512",
        "-o",
        "32",
        "--requests",
        "32",
        "--json",
    )
    assert sim.code == 0, sim.stderr
    data = json.loads(sim.stdout)
    assert (data["attention_dp"], data["chips_per_replica"], data["completed"]) == (8, 8, 32)
