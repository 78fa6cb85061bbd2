"""A row measured at a rate or a concurrency, predicted by the simulator with its scheduler knobs.

The step cost is the row's deployment's step model with the entry's host terms laid over each step
(:meth:`DeploymentStepCost.with_engine`: the device grids are tabulated once and shared by every entry
the fit tries; :func:`roofline.terms.engine.engine_step_s` is the step model's own formula).  The
request path: the scheduling lag runs inside the simulator (a request that reaches the queue during a
step joins no earlier than the second step after it); the front end (in and out) delays a request
without GPU time, so open loop it is a constant shift added to TTFT and E2E after the run, and closed
loop the round trip is also the time a client waits before its next request (think time), exactly what
the simulator's :class:`~roofline.analyses.simulate.config.RequestPath` would do.  Simulations are
cached by what changes them (step-cost terms, scheduler, lag, closed-loop round trip), so a change of
the front end alone re-runs nothing on an open loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from roofline.analyses.lengths import parse_lengths
from roofline.analyses.simulate import (
    ClosedLoop,
    OpenLoop,
    SchedulerConfig,
    SimConfig,
    SimulationResult,
    Trace,
    simulate,
)
from roofline.analyses.simulate.adapter import DeploymentStepCost, kv_capacity
from roofline.analyses.simulate.config import RequestPath
from roofline.calibrate.engine.schema import E2ERow
from roofline.deploy import NO_ENGINE, Deployment, EngineTerms
from roofline.deploy.engine_registry import terms_of

#: Most requests one row's simulation runs (a longer run is sampled: its first 10% warm the engine up).
MAX_REQUESTS = 2000
#: Most requests of a run whose clients timed out, simulated whole (who times out depends on how long the
#: backlog grew over the whole run, so it is not sampled).
MAX_TIMED_OUT_REQUESTS = 20_000
#: Block size of the simulated paged KV cache (vLLM's and the shared runs' default).
BLOCK_SIZE = 16


def step_cost_key(engine: EngineTerms) -> tuple[float, ...]:
    """The entry's terms that change a step's time (step and floor terms and what they read)."""
    names = sorted({t.name for kind in ("step", "floor") for t in terms_of(kind)} | {"cuda_graph_max_tokens"})
    return tuple(round(engine.value(n), 12) for n in names) if engine.registry_entry else ()


def knob(row_value: float | None, engine: EngineTerms, name: str) -> int:
    """A scheduler knob: the row's own, else the entry's (its documented default)."""
    return int(row_value) if row_value else int(engine.value(name))


@dataclass
class SimulatedRow:
    """How one rate or concurrency row runs in the simulator; ``predict`` at any entry of its engine."""

    row: E2ERow
    dep: Deployment  # the row's replica, engine-free
    requests: int
    warmup: int
    seed: int = 0
    cache: dict[tuple[float, ...], SimulationResult] = field(default_factory=dict)
    tables: dict[tuple[float, ...], DeploymentStepCost] = field(default_factory=dict)

    def scheduler(self, engine: EngineTerms) -> SchedulerConfig:
        seqs = knob(self.row.max_num_seqs, engine, "max_num_seqs")
        tokens = max(knob(self.row.max_num_batched_tokens, engine, "max_num_batched_tokens"), seqs)
        hit = min(self.row.prefix_hit_rate or 0.0, 0.999)
        return SchedulerConfig(
            max_num_seqs=seqs, max_num_batched_tokens=tokens, block_size=BLOCK_SIZE, prefix_hit_rate=hit
        )

    def base_cost(self, engine: EngineTerms) -> DeploymentStepCost:
        """The engine-free kernel table (built once per memory setting); KV capacity within the entry's memory
        share, less its reserve."""
        budget = knob(self.row.max_num_batched_tokens, engine, "max_num_batched_tokens")
        seqs = knob(self.row.max_num_seqs, engine, "max_num_seqs")
        share = engine.value("memory_utilization") if engine.registry_entry else 0.9
        key = (budget, seqs, share, engine.value("memory_reserve_bytes"), float(engine.gqa_kv_reread))
        if key not in self.tables:
            self.tables[key] = self._table(budget, seqs, share, engine)
        return self.tables[key]

    def _table(self, budget: int, seqs: int, share: float, engine: EngineTerms) -> DeploymentStepCost:
        dep = replace(self.dep, memory_utilization=share, engine=engine)
        capacity, _ = kv_capacity(dep, float(budget), seqs)
        context = float(self.row.mean_input_len + self.row.mean_output_len) * 2.0 + 64.0
        return DeploymentStepCost(
            dep=dep,
            kv_capacity_tokens=max(capacity, 1),
            max_context=context,
            source=f"step model of {dep.par.describe()} on {dep.hw.name}",
        )

    def run(self, engine: EngineTerms) -> SimulationResult:
        """The simulation at ``engine``'s step-cost terms (cached)."""
        lag = int(round(engine.schedule_lag_steps)) if engine.registry_entry else 0
        closed = round_trip_s(engine) if self.row.load == "concurrency" else 0.0
        key = (*step_cost_key(engine), *self.scheduler(engine).__dict__.values(), lag, round(closed, 12))
        if key not in self.cache:
            cost = self.base_cost(engine).with_engine(engine)
            config = SimConfig(
                lengths=self.lengths(),
                requests=self.requests,
                seed=self.seed,
                scheduler=self.scheduler(engine),
                path=RequestPath(schedule_lag_steps=lag),
                warmup=self.warmup,
                timeout_s=self.row.timeout_s,
            )
            self.cache[key] = simulate(cost, self.load(engine), config)
        return self.cache[key]

    def lengths(self):  # noqa: ANN201 - a LengthDistribution
        r = self.row
        return parse_lengths(r.lengths) if r.lengths else parse_lengths(f"{r.input_len:g}:{r.output_len:g}:1")

    def load(self, engine: EngineTerms) -> OpenLoop | ClosedLoop | Trace:
        r = self.row
        if r.load == "concurrency":
            clients = max(int(math.ceil((r.concurrency or 1) / r.dp)), 1)
            return ClosedLoop(clients, think_time_s=round_trip_s(engine))
        rate = r.arrival_rate or math.inf
        if math.isinf(rate):  # all at once: a max-throughput run
            n = self.requests
            inp, out = (np.full(n, max(int(round(v)), 1)) for v in (r.mean_input_len, r.mean_output_len))
            return Trace(np.zeros(n), inp, out, source="all requests at t = 0")
        return OpenLoop(rate / r.dp)

    def predict(self, engine: EngineTerms) -> dict[str, float]:
        """ttft_s, tpot_s, itl_s, e2e_s (with the request path), tokens/s and requests/s of the deployment.

        A run whose clients timed out gives no tokens/s or requests/s: its measured ones count the survivors
        over the load generator's own window (the stage plus its drain), which the simulator does not share.
        """
        res = self.run(engine)
        delay = round_trip_s(engine)
        out = {
            "ttft_s": res.ttft_s.mean + delay,
            "tpot_s": res.tpot_s.mean,
            "itl_s": res.itl_s.mean,
            "e2e_s": res.e2e_s.mean + delay,
            "output_tokens_per_s": res.output_tokens_per_s * self.row.dp,
            "requests_per_s": res.requests_per_s * self.row.dp,
        }
        for q, p in (("ttft", res.ttft_s), ("e2e", res.e2e_s)):
            out.update({f"{q}_p50_s": p.p50 + delay, f"{q}_p90_s": p.p90 + delay, f"{q}_p99_s": p.p99 + delay})
        if self.row.num_failed and self.row.timeout_s is not None:
            del out["output_tokens_per_s"], out["requests_per_s"]
        return out


def round_trip_s(engine: EngineTerms) -> float:
    """Front end in + out: what a request spends outside the engine core, with no GPU time."""
    return engine.frontend_in_s + engine.frontend_out_s if engine.registry_entry else 0.0


def simulated_row(row: E2ERow, dep: Deployment, seed: int = 0) -> SimulatedRow:
    """A row's simulation plan: the run's own request count when it is known and small (or its clients timed
    out: then up to MAX_TIMED_OUT_REQUESTS), else a sample; the clients' timeout is the row's."""
    known = (row.num_requests or 0) + (row.num_failed or 0)
    timed_out = bool(row.num_failed) and row.timeout_s is not None
    whole = 0 < known <= (MAX_TIMED_OUT_REQUESTS if timed_out else MAX_REQUESTS)
    requests = known if whole else (MAX_TIMED_OUT_REQUESTS if timed_out else MAX_REQUESTS)
    warmup = 0 if whole else requests // 10
    return SimulatedRow(row, replace(dep, engine=NO_ENGINE), requests, warmup, seed)
