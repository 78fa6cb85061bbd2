"""Capacity plan for a chat service: the cheapest deployment meeting TTFT and TPOT targets.

A chat service receives 20 requests/s whose lengths follow a small histogram (short chats,
long-context chats), wants the first token within 1 s and 40 ms per output token.

Run: python examples/chat_service_plan.py
"""

from __future__ import annotations

import roofline as rl

model = rl.load_model("llama-3-8b")
chips = [rl.load_hardware(name) for name in ("h100-sxm", "tpu-v5e", "a100-80gb")]
# (input tokens, output tokens, share of traffic)
lengths = rl.from_points([512, 2048, 8192], [128, 256, 512], [0.6, 0.3, 0.1], source="chat histogram")

result = rl.plan_capacity(model, chips, qps=20, lengths=lengths, ttft_slo_s=1.0, tpot_slo_s=0.040)
best = result.best
if best is None:
    raise SystemExit(f"no deployment meets the targets: {result.reasons}")

print(
    f"lengths: mean {lengths.mean_input:.0f} in / {lengths.mean_output:.0f} out; "
    f"decode context {lengths.decode_context:.0f} tokens"
)
print(
    f"plan: {best.replicas} x {best.chips_per_replica} {best.hardware}, batch {best.batch}, "
    f"{best.weights} weights / {best.kv_dtype} KV"
)
print(f"cost: ${best.dollars_per_hour:.2f}/h = ${best.cost_per_million_output_tokens:.3f} per million output tokens")
print(
    f"TTFT {best.ttft_s * 1e3:.0f} ms (target 1000), TPOT {best.tpot_s * 1e3:.1f} ms (target 40); "
    f"binding constraint: {best.binding}"
)
# The same traffic averaged over the histogram for one request alone on the chosen slice.
replica = rl.deployment(
    model,
    rl.load_hardware(best.hardware),
    best.chips_per_replica,
    rl.Precision(best.weights, best.kv_dtype),
    tp=best.tp,
)
alone = rl.averaged_request(replica, lengths)
print(
    f"one request alone on {best.chips_per_replica} {best.hardware}: mean TTFT {alone['ttft_s'] * 1e3:.0f} ms, "
    f"mean latency {alone['latency_s']:.2f} s"
)
print("runners-up:")
for d in result.candidates[1:4]:
    print(
        f"  {d.replicas} x {d.chips_per_replica} {d.hardware} b={d.batch} {d.weights}/{d.kv_dtype}: "
        f"${d.dollars_per_hour:.2f}/h ({d.binding})"
    )
