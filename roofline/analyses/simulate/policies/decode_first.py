"""``decode-first``: vLLM V1 and TensorRT-LLM in-flight batching (mixed steps).

Each step the running decodes take one token each from the budget, then the partial prefills and
then new requests (first come, first served) fill the rest with prompt chunks, all in one step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofline.analyses.simulate.policies import register_policy

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine


@register_policy
class DecodeFirst:
    name = "decode-first"
    describes = "decodes first, then chunked prefills in the same step (vLLM V1, TensorRT-LLM in-flight)"

    def compose(self, engine: Engine) -> None:
        budget = engine.max_tokens
        if engine.n_dec:
            budget -= engine.decodes()
        if budget > 0 and engine.prefilling:
            budget -= engine.continue_prefills(budget)
        if budget > 0:
            engine.admit(budget)
