"""``prefill-first``: SGLang's default (no ``--enable-mixed-chunk``): prompt steps run alone.

A step with prompt work to do runs only prompt chunks (up to the budget) and the decodes wait;
otherwise every running sequence decodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofline.analyses.simulate.policies import register_policy

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine


@register_policy
class PrefillFirst:
    name = "prefill-first"
    describes = "prompt chunks in steps of their own, decodes wait (SGLang default)"

    def compose(self, engine: Engine) -> None:
        used = engine.continue_prefills(engine.max_tokens) if engine.prefilling else 0
        if used < engine.max_tokens:
            used += engine.admit(engine.max_tokens - used)
        if not used and engine.n_dec:
            engine.decodes()
