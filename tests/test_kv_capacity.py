"""The simulator's KV capacity (``analyses.simulate.adapter.kv_capacity``), derived by hand."""

from __future__ import annotations

from roofline.analyses.simulate.adapter import cost_for
from roofline.specs import load_hardware, load_model


def test_qwen3_32b_on_one_h100_reserves_logits_for_the_sampled_rows_only():
    # Qwen3-32B (HF config.json: d_model 5120, d_ff 25600, vocab 151,936, 64 layers x 8 KV heads x 128,
    # bf16) on one H100 (80e9 B), memory share 0.9, a step of 8,192 tokens sampling 256 rows (vLLM's
    # defaults: max_num_batched_tokens, max_num_seqs):
    #   activations 8192 x (2 x 5120 + 2 x 25600) x 2 B = 1,006,632,960 B
    #   fp32 logits 256 x 4 x 151,936                   =   155,582,464 B
    #   weights (2 B x 32,762,123,264 params)           = 65,524,246,528 B
    #   KV per token 64 x 2 x 8 x 128 x 2 B = 262,144 B
    #   (72e9 - 1,006,632,960 - 155,582,464 - 65,524,246,528) / 262,144 = 20,269.6 -> 20,269 tokens.
    # Reserving logits for all 8,192 tokens (4,978,638,848 B) would leave 1,871.
    cost = cost_for(load_model("qwen3-32b"), load_hardware("h100-sxm"), 1)
    assert cost.kv_capacity_tokens == 20_269
    # A step sampling fewer rows than it has tokens reserves fewer logits: 128 rows instead of 256 frees
    # 128 x 4 x 151,936 = 77,791,232 B = 296.75 tokens of KV.
    fewer = cost_for(load_model("qwen3-32b"), load_hardware("h100-sxm"), 1, reserve_seqs=128)
    assert fewer.kv_capacity_tokens == int((5_313_538_048 + 77_791_232) // 262_144)
