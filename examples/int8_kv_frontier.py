"""The effect of an int8 KV cache on the latency / throughput frontier (LLaMA-2-13B, 8x TPU v5e).

Halving the KV bytes halves the attention term B·KV/W of every step and doubles the batch that
fits, so the frontier moves up (more tokens/s per chip) at long contexts.

Run: python examples/int8_kv_frontier.py
"""

from __future__ import annotations

import numpy as np

import roofline as rl

model = rl.load_model("llama-2-13b")
chip = rl.load_hardware("tpu-v5e")
batches = [2**k for k in range(0, 10)]
sweep = rl.decode_sweep(model, [chip], batch=batches, chips=[8], context=[8192], kv_dtypes=["bf16", "int8"])
kv = sweep.column("kv_dtype")
for dtype in ("bf16", "int8"):
    part = sweep.select(kv == dtype)
    front = rl.frontier_of(part.columns, "latency-throughput")
    step_ms = part.columns["step_time_s"][front] * 1e3
    per_chip = part.columns["tokens_per_s_per_chip"][front]
    print(
        f"{dtype} KV: largest batch that fits {part.columns['batch'].max()}, "
        f"best {per_chip.max():.0f} tok/s/chip; frontier (step ms -> tok/s/chip):"
    )
    print("   " + ", ".join(f"{s:.1f}->{t:.0f}" for s, t in zip(step_ms, per_chip, strict=True)))
# At the same batch the int8 cache is faster: compare batch 8 (bf16 KV fits up to 14 in 0.9 of HBM).
same = sweep.columns["batch"] == 8
for dtype in ("bf16", "int8"):
    i = np.flatnonzero(same & (kv == dtype))[0]
    print(f"batch 8, {dtype} KV: step {sweep.columns['step_time_s'][i] * 1e3:.2f} ms")
