"""The simulator's one configuration object and its parts (frozen; checked where built).

:class:`SimConfig` holds everything :func:`roofline.analyses.simulate.simulate` needs besides the
step cost and the load: the scheduler (vLLM-style engine arguments and the policy's name), the
fleet, the clients (timeout), the request path outside the GPU (front end, scheduling lag), the
host-memory KV tier, speculative decoding, SLOs and what to measure.  Errors name the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.simulate.load import Requests
from roofline.core.errors import OptionError

BALANCERS = ("round-robin", "least-outstanding")
PREEMPTION_MODES = ("recompute", "swap")


def _finite_at_least(value: float, low: float, name: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= low):
        raise OptionError(f"{name} must be a finite number >= {low:g} (got {value!r})", parameters=(name,))


@dataclass(frozen=True)
class SchedulerConfig:
    """Engine arguments the simulator honours (vLLM's names) and the scheduling policy.

    ``prefix_hit_rate`` > 0 is the shortcut: that share of every prompt is cached, no cache is
    modelled.  Otherwise, with ``prefix_caching``, a block prefix cache serves the prefixes the
    load names (``prefix_id``/``session_id``).  ``preemption``: ``recompute`` (vLLM V1, SGLang)
    or ``swap`` (to the host tier of :class:`OffloadConfig`).
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    prefix_hit_rate: float = 0.0
    policy: str = "decode-first"
    prefix_caching: bool = True
    preemption: str = "recompute"

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "block_size"):
            if getattr(self, name) < 1:
                raise OptionError(f"{name} must be at least 1 (got {getattr(self, name)})", parameters=(name,))
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise OptionError(
                f"max_num_batched_tokens={self.max_num_batched_tokens} must be at least "
                f"max_num_seqs={self.max_num_seqs}, as vLLM requires",
                parameters=("max_num_batched_tokens", "max_num_seqs"),
            )
        if not 0.0 <= self.prefix_hit_rate < 1.0:
            raise OptionError(
                f"prefix_hit_rate must be in [0, 1) (got {self.prefix_hit_rate})", parameters=("prefix_hit_rate",)
            )
        if self.preemption not in PREEMPTION_MODES:
            raise OptionError(
                f"preemption: unknown {self.preemption!r}; allowed: {', '.join(PREEMPTION_MODES)}",
                parameters=("preemption",),
            )
        from roofline.analyses.simulate.policies import policy_class

        policy_class(self.policy)  # an unknown name fails here, listing the registered ones


@dataclass(frozen=True)
class FleetConfig:
    """``replicas`` identical replicas behind ``balancer``; ``prefill_replicas`` > 0 disaggregates:
    that many prefill-only replicas feed the ``replicas`` decode replicas over the KV transfer."""

    replicas: int = 1
    balancer: str = "round-robin"
    prefill_replicas: int = 0

    def __post_init__(self) -> None:
        if self.replicas < 1 or self.prefill_replicas < 0:
            raise OptionError(
                f"replicas={self.replicas} must be at least 1 and prefill_replicas={self.prefill_replicas} at least 0",
                parameters=("replicas", "prefill_replicas"),
            )
        if self.balancer not in BALANCERS:
            raise OptionError(
                f"balancer: unknown {self.balancer!r}; allowed: {', '.join(BALANCERS)}", parameters=("balancer",)
            )


@dataclass(frozen=True)
class RequestPath:
    """Time a request spends outside the GPU steps (engine terms; zeros: none).

    A request sent at t reaches the waiting queue at t + ``frontend_in_s``; the client sees each
    token ``frontend_out_s`` after the step that made it; with ``schedule_lag_steps`` = 1 (async
    scheduling, vLLM >= 0.12) a request that reached the queue during a step joins no earlier than
    the second step after it.
    """

    frontend_in_s: float = 0.0
    frontend_out_s: float = 0.0
    schedule_lag_steps: int = 0

    def __post_init__(self) -> None:
        _finite_at_least(self.frontend_in_s, 0.0, "frontend_in_s")
        _finite_at_least(self.frontend_out_s, 0.0, "frontend_out_s")
        if self.schedule_lag_steps not in (0, 1):
            raise OptionError(
                f"schedule_lag_steps must be 0 or 1 (got {self.schedule_lag_steps!r})",
                parameters=("schedule_lag_steps",),
            )

    @property
    def active(self) -> bool:
        return bool(self.frontend_in_s or self.frontend_out_s or self.schedule_lag_steps)

    def describe(self) -> str:
        """The path in words (the result's sources)."""
        if not self.active:
            return "none (tokens reach the client when the step ends)"
        return (
            f"front end {self.frontend_in_s * 1e3:.3g} ms in, {self.frontend_out_s * 1e3:.3g} ms out; "
            f"scheduling lag {self.schedule_lag_steps} step(s)"
        )


@dataclass(frozen=True)
class OffloadConfig:
    """A host-memory KV tier per replica: ``host_bytes`` of it, moved at ``bandwidth_bytes_per_s`` (each
    direction).  Evicted prefix blocks go there and load back on a hit; ``swap`` preemption parks a
    request's KV there.  Transfers block the step that needs them."""

    host_bytes: float
    bandwidth_bytes_per_s: float

    def __post_init__(self) -> None:
        _finite_at_least(self.host_bytes, 0.0, "host_bytes")
        _finite_at_least(self.bandwidth_bytes_per_s, 1.0, "bandwidth_bytes_per_s")


@dataclass(frozen=True)
class SpeculativeConfig:
    """Speculative decoding (a draft model, or MTP heads): ``draft_len`` drafts per round, accepted with
    ``acceptance[i]`` at position i given the earlier ones (one value: the same at every position)."""

    draft_len: int
    acceptance: tuple[float, ...]

    def __post_init__(self) -> None:
        if not 1 <= self.draft_len <= 16:
            raise OptionError(f"draft_len must be in [1, 16] (got {self.draft_len})", parameters=("draft_len",))
        if len(self.acceptance) not in (1, self.draft_len):
            raise OptionError(
                f"acceptance needs 1 value or one per draft position ({self.draft_len}); got {len(self.acceptance)}",
                parameters=("acceptance",),
            )
        if not all(isinstance(a, int | float) and 0.0 <= a <= 1.0 for a in self.acceptance):
            raise OptionError(
                f"acceptance values must be in [0, 1] (got {self.acceptance})", parameters=("acceptance",)
            )

    @property
    def by_position(self) -> tuple[float, ...]:
        """Acceptance at each of the draft positions."""
        return self.acceptance * self.draft_len if len(self.acceptance) == 1 else self.acceptance

    @property
    def tokens_per_round(self) -> float:
        """Expected tokens a sequence gains per verify round (formulas.serving, never restated here)."""
        from roofline.formulas.serving import expected_tokens_by_position, expected_tokens_per_step

        if len(self.acceptance) == 1:
            return float(expected_tokens_per_step(self.acceptance[0], self.draft_len))
        return float(expected_tokens_by_position(self.acceptance))


#: Event-loop implementations (SimConfig.event_loop).
EVENT_LOOPS = ("auto", "python", "compiled")


@dataclass(frozen=True)
class SimConfig:
    """Everything one simulation takes besides the step cost and the load.

    ``lengths`` (a distribution), ``workload`` (generated requests with their prefixes and sessions,
    :mod:`~roofline.analyses.simulate.workloads`) or a trace's own columns set what the requests are;
    ``requests`` how many for a generated load (a trace: at most this many, None: all; a staged load:
    its stages set the count); ``warmup`` excludes the first requests by arrival from
    the latencies (default 10 %; 0 for a staged load, whose stages say their own warm-up).
    ``timeout_s``: a client abandons a request not finished after that long (counted failed).
    ``stepwise``: price every engine step on its own instead of leaping over runs of decode-only steps
    (the reference the leaps are tested against; same results, slower).
    ``event_loop``: ``auto`` runs long runs of one replica in the compiled event loop
    (:mod:`~roofline.analyses.simulate.compiled`; same results as ``stepwise``) when it covers them,
    ``python`` never, ``compiled`` always (an error names what it does not cover).
    """

    lengths: LengthDistribution | None = None
    workload: Requests | None = None
    requests: int | None = 1000
    seed: int = 0
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    path: RequestPath = field(default_factory=RequestPath)
    timeout_s: float | None = None
    offload: OffloadConfig | None = None
    speculative: SpeculativeConfig | None = None
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None
    warmup: int | None = None
    max_points: int = 1000
    stepwise: bool = False
    event_loop: str = "auto"

    def __post_init__(self) -> None:
        if self.event_loop not in EVENT_LOOPS:
            raise OptionError(
                f"event_loop: unknown {self.event_loop!r}; allowed: {', '.join(EVENT_LOOPS)}",
                parameters=("event_loop",),
            )
        if self.requests is not None and self.requests < 1:
            raise OptionError(f"requests must be at least 1 (got {self.requests})", parameters=("requests",))
        if self.timeout_s is not None:
            _finite_at_least(self.timeout_s, 0.0, "timeout_s")
            if self.timeout_s <= 0:
                raise OptionError(f"timeout_s must be > 0 (got {self.timeout_s})", parameters=("timeout_s",))
        if self.scheduler.preemption == "swap" and self.offload is None:
            raise OptionError(
                "preemption 'swap' needs a host tier: give host_bytes= (an OffloadConfig)",
                parameters=("preemption", "host_bytes"),
            )
        if self.max_points < 2:
            raise OptionError(f"max_points must be at least 2 (got {self.max_points})", parameters=("max_points",))
