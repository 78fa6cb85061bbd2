"""Speculative decoding and MTP under load: tokens per round from formulas.serving, rounds priced by the
step model, a gain that shrinks as the batch grows; serve's break-even past the memory limit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from roofline.analyses.lengths import fixed_lengths
from roofline.analyses.simulate import ClosedLoop, OpenLoop, SimConfig, SpeculativeConfig, simulate
from roofline.core.errors import RooflineError

A, B = 0.005, 1e-4
R = 0.009  # one draft-and-verify round, whatever the batch (chosen here)


@dataclass(frozen=True)
class RoundCost:
    """Steps t = A + B·tokens; a speculative round takes R."""

    kv_capacity_tokens: int = 1_000_000

    def step_time_s(self, decode_seqs, decode_kv_tokens, prefill_tokens, prefill_attention_pairs):
        return np.asarray(A + B * np.add(decode_seqs, prefill_tokens), dtype=float)

    def round_time_s(self, decode_seqs, decode_kv_tokens, draft_len):
        return np.full(np.shape(decode_seqs), R)

    def kv_transfer_time_s(self, tokens):
        return 0.0


def test_tokens_per_round_come_from_the_serving_formula():
    # i.i.d. α = 0.8, γ = 3: (1 − 0.8⁴)/(1 − 0.8) = 2.952; by position (0.8, 0.6, 0.4): 1 + 0.8 + 0.48 + 0.192.
    assert SpeculativeConfig(3, (0.8,)).tokens_per_round == pytest.approx((1 - 0.8**4) / 0.2)
    assert SpeculativeConfig(3, (0.8, 0.6, 0.4)).tokens_per_round == pytest.approx(2.472)
    assert SpeculativeConfig(3, (0.8, 0.8, 0.8)).tokens_per_round == pytest.approx((1 - 0.8**4) / 0.2)
    with pytest.raises(RooflineError, match="one per draft position"):
        SpeculativeConfig(3, (0.8, 0.6))


def test_rounds_replace_decode_steps():
    # 11 out: the prefill makes token 1, then ceil(10 / 2.472) = 5 rounds of R each make the other ten.
    spec = SpeculativeConfig(3, (0.8, 0.6, 0.4))
    res = simulate(
        RoundCost(), OpenLoop(0.01), SimConfig(lengths=fixed_lengths(100, 11), requests=5, warmup=0, speculative=spec)
    )
    assert res.ttft_s.mean == pytest.approx(A + B * 100, rel=1e-12)
    assert res.e2e_s.mean - res.ttft_s.mean == pytest.approx(math.ceil(10 / 2.472) * R, rel=1e-12)


def test_a_step_cost_without_rounds_is_refused():
    from tests.sim_costs import LinearCost

    with pytest.raises(RooflineError, match="speculative decoding needs a step cost that prices verify rounds"):
        simulate(
            LinearCost(),
            OpenLoop(1.0),
            SimConfig(lengths=fixed_lengths(10, 5), speculative=SpeculativeConfig(2, (0.7,))),
        )


@pytest.mark.slow
def test_mtp_gain_shrinks_as_the_batch_grows():
    # LLaMA-3-8B on one H100 (spec sheet) with an MTP head, 3 drafts: the verify step reads the weights once
    # for 4 tokens a sequence, a large gain at batch 1; at batch 256 the verify step is compute-bound and
    # the gain falls.
    from roofline.analyses.simulate.adapter import cost_for
    from roofline.specs import load_hardware, load_model

    m, hw = load_model("llama-3-8b"), load_hardware("h100-sxm")
    plain, mtp = cost_for(m, hw, max_context=1400), cost_for(m, hw, max_context=1400, draft="mtp")
    spec = SpeculativeConfig(3, (0.8, 0.6, 0.4))
    gain = []
    for clients in (1, 256):
        common = dict(lengths=fixed_lengths(1024, 256), requests=300)
        a = simulate(plain, ClosedLoop(clients), SimConfig(**common))
        b = simulate(mtp, ClosedLoop(clients), SimConfig(**common, speculative=spec))
        gain.append(a.tpot_s.mean / b.tpot_s.mean)
    assert gain[0] > 1.5 and gain[1] < gain[0] - 0.3


def test_serve_break_even_is_finite_beyond_the_memory_limit():
    # LLaMA-3-8B on one H100 at 0.3 of HBM holds about 100 sequences of 640 tokens; the speedup of a
    # Qwen2.5-0.5B draft falls to 1 only near the ridge batch (989e12 / 3.35e12 ≈ 295, divided by
    # γ + 1 = 5 at most): a finite break-even past what fits, said so.
    from tests.conftest import run_json

    data = run_json(
        "serve", "--model", "llama-3-8b", "--hardware", "h100-sxm", "-i", "512", "-o", "128",
        "--memory-utilization", "0.3", "--draft-model", "qwen2.5-0.5b", "--draft-len", "4", "--acceptance", "0.7",
    )  # fmt: skip
    spec = data["speculative"]
    assert 989e12 / 3.35e12 / 5 < spec["break_even_batch"] <= 989e12 / 3.35e12
    assert spec["max_batch_in_memory"] < spec["break_even_batch"] and spec["break_even_fits_memory"] is False
    assert "beyond the" in spec["break_even_note"]
