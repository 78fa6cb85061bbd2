"""Scheduling policies: how one engine step is composed, behind a small registry.

A policy is a class with a ``name``, a one-line ``describes`` and ``compose(engine)``, which fills
one step by calling the engine's primitives (see :class:`~roofline.analyses.simulate.engine.Engine`):

* ``engine.decodes()``: every running decode takes a token this step (the engine finds the KV
  blocks, preempting the newest requests if it must); returns the tokens used;
* ``engine.continue_prefills(budget)``: chunks of the partial prefills, within ``budget`` tokens;
* ``engine.admit(budget)``: new requests from the waiting queue (first come, first served), their
  first chunks within ``budget``; returns the tokens used;
* read-only: ``engine.max_tokens`` (the step's token budget), ``engine.n_dec`` (running decodes),
  ``engine.prefilling`` (partial prefills), ``engine.admissible()`` (the queue's head could join).

A step in which no prompt work is possible decodes every running sequence whatever the policy
(the engine prices runs of such steps at once).  To add a policy: write one module here (or
anywhere) with a class decorated ``@register_policy``; ``SchedulerConfig(policy="its-name")``
and ``simulate --policy its-name`` then use it (``tests/test_simulate_policies.py`` adds one from
outside the package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from roofline.core.errors import OptionError, RooflineError

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine


class Policy(Protocol):
    name: str
    describes: str

    def compose(self, engine: Engine) -> None:
        """Fill one step through the engine's primitives."""
        ...


POLICIES: dict[str, type[Policy]] = {}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make ``cls`` available under ``cls.name`` (a later registration replaces it)."""
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        raise RooflineError("a scheduling policy needs a non-empty name")
    POLICIES[cls.name] = cls
    return cls


def policy_class(name: str) -> type[Policy]:
    """The registered policy called ``name``, or a one-line error listing them."""
    try:
        return POLICIES[name]
    except KeyError:
        raise OptionError(
            f"policy: unknown {name!r}; allowed: {', '.join(sorted(POLICIES))}", parameters=("policy",)
        ) from None


def make_policy(name: str) -> Policy:
    return policy_class(name)()


from roofline.analyses.simulate.policies import decode_first, prefill_first  # noqa: E402  (registers the built-ins)

__all__ = ["POLICIES", "Policy", "decode_first", "make_policy", "policy_class", "prefill_first", "register_policy"]
