"""When closed-loop clients start: spread evenly over one client cycle, so that identical clients do not run
in lockstep.

N clients that all send at t = 0 with requests of one length prefill in one step, decode together, finish
in the same step and send again together; nothing in the simulator ever separates them, so every request's
TTFT waits for a prefill of N prompts.  Real clients drift apart (network and think-time jitter, lengths
that vary, connections set up one by one), and a closed loop in steady state has its clients' phases spread
over one cycle: a request's time plus the think time.  Starting client k of N at k/N of one cycle on an
idle engine puts the loop there from the start.  Load generators ramp their clients the same way: AIPerf's
``--concurrency-ramp-duration`` raises the concurrency in even discrete steps over the ramp
(docs.nvidia.com/aiperf, "Gradual Ramping"); Locust's spawn rate and k6's ramping VUs likewise.
"""

from __future__ import annotations

import numpy as np

from roofline.analyses.simulate.config import RequestPath, SimConfig
from roofline.analyses.simulate.cost import StepCost, causal_pairs
from roofline.analyses.simulate.sources import RequestSource

#: Requests whose mean lengths price the idle cycle.
SAMPLE = 256


def start_offsets_s(clients: int, ramp_s: float) -> list[float]:
    """Client k of ``clients`` sends first at k/clients x ``ramp_s`` (k = 0 at once): even discrete steps."""
    return [ramp_s * k / clients for k in range(clients)]


def idle_request_s(cost: StepCost, input_len: float, output_len: float, budget: int) -> float:
    """One request alone on the engine: its prompt in chunks of ``budget`` tokens, then O - 1 decode steps
    over I, ..., I + O - 2 cached tokens (the step cost's own times, as the simulator prices them)."""
    i, o = max(int(round(input_len)), 1), max(int(round(output_len)), 1)
    starts = np.arange(0, i, max(budget, 1), dtype=float)
    chunks = np.minimum(float(budget), i - starts)
    none = np.zeros_like(chunks)
    prefill = float(np.sum(cost.step_time_s(none, none, chunks, causal_pairs(chunks, starts))))
    if o <= 1:
        return prefill
    context = i + np.arange(o - 1, dtype=float)
    ones = np.ones_like(context)
    return prefill + float(np.sum(cost.step_time_s(ones, context, 0.0 * ones, 0.0 * ones)))


def idle_cycle_s(
    cost: StepCost, lengths: list[tuple[int, int]], path: RequestPath, think_s: float, budget: int
) -> float:
    """One client cycle on an idle engine at the mean of ``lengths``: front end in + the request + front end
    out + think time (an idle engine has no scheduling lag)."""
    inp = float(np.mean([a for a, _ in lengths]))
    out = float(np.mean([b for _, b in lengths]))
    return path.frontend_in_s + idle_request_s(cost, inp, out, budget) + path.frontend_out_s + think_s


class Ramp:
    """Seconds over which new closed-loop clients start: the loop's own ``ramp_s``, else one idle client cycle
    at the mean lengths of the first requests (priced once, on first use; with speculative decoding the plain
    step's, a little long) plus the think time."""

    def __init__(self, cost: StepCost, source: RequestSource, config: SimConfig, ramp_s: float | None) -> None:
        self.cost, self.source, self.config, self.fixed = cost, source, config, ramp_s
        self.idle: float | None = None
        self.used: list[float] = []

    def seconds(self, think_s: float) -> float:
        if self.fixed is not None:
            self.used.append(self.fixed)
            return self.fixed
        if self.idle is None:
            n = max(min(self.source.limit, SAMPLE), 1)
            sample = [self.source.get(i)[:2] for i in range(n)]
            budget = self.config.scheduler.max_num_batched_tokens
            self.idle = idle_cycle_s(self.cost, sample, self.config.path, 0.0, budget)
        self.used.append(self.idle + think_s)
        return self.used[-1]

    def sources(self) -> dict[str, str]:
        """``{"clients": how they started}`` for a load with closed-loop clients, else {}."""
        if not self.used:
            return {}
        how = "given ramp" if self.fixed is not None else "one client cycle on an idle engine at the mean lengths"
        spans = ", ".join(f"{s:.3g} s" for s in self.used[:4]) + (", ..." if len(self.used) > 4 else "")
        return {"clients": f"new clients start evenly over {spans} ({how}; 0: all at once)"}
