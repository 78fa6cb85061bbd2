"""TPU v5e vs H100: dollars per million generated tokens for LLaMA-3-70B.

For each chip, sweep slice size × batch × weight dtype at a 4096-token context and report
the cheapest $/Mtok, and the cheapest that still decodes at 80+ tokens/s per user.

Run: python examples/v5e_vs_h100_cost.py
"""

from __future__ import annotations

import numpy as np

import roofline as rl

model = rl.load_model("llama-3-70b")
chips = [rl.load_hardware("tpu-v5e"), rl.load_hardware("h100-sxm")]
batches = [2**k for k in range(0, 11)]
sweep = rl.decode_sweep(
    model, chips, batch=batches, chips=[1, 2, 4, 8, 16, 32], context=[4096], weights=["bf16", "int8"]
)
hardware = sweep.column("hardware")
cost = sweep.columns["cost_per_million_tokens"]
per_user = sweep.columns["tokens_per_s_per_user"]

for chip in chips:
    mine = hardware == chip.name
    cheapest = np.flatnonzero(mine)[np.argmin(cost[mine])]
    interactive = mine & (per_user >= 80)
    print(f"{chip.name} (${chip.price_per_chip_hour}/chip-hour):")
    for label, i in (
        ("cheapest", cheapest),
        (">= 80 tok/s/user", np.flatnonzero(interactive)[np.argmin(cost[interactive])]),
    ):
        print(
            f"  {label:>17}: ${cost[i]:.3f}/Mtok with {sweep.columns['chips'][i]} chips, batch "
            f"{sweep.columns['batch'][i]}, {sweep.column('weights')[i]} weights, "
            f"{per_user[i]:.0f} tok/s/user"
        )
frontier = rl.frontier_of(sweep.columns, "cost-latency")
print(
    f"cost-latency frontier: {len(frontier)} of {len(sweep)} configurations, chips on it: "
    f"{sorted(set(hardware[frontier]))}"
)
