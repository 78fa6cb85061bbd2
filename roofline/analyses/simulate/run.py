"""The event loop: arrivals, a load balancer over identical replicas, optional prefill/decode pools.

Replicas advance in time order (the one with the earliest clock steps next, never past an
external event or another busy replica's clock when it could still admit work), so a
closed-loop client's next request or a KV hand-off reaches its replica at the right time.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from roofline.analyses.lengths import LengthDistribution
from roofline.analyses.simulate.cost import StepCost
from roofline.analyses.simulate.engine import Engine, SchedulerConfig
from roofline.analyses.simulate.load import ClosedLoop, Load, OpenLoop, Trace, open_loop_arrivals_s, sample_lengths
from roofline.analyses.simulate.metrics import SimulationResult, summarize
from roofline.analyses.simulate.state import RequestTable
from roofline.core.errors import RooflineError

BALANCERS = ("round-robin", "least-outstanding")
DEFAULT_WARMUP_FRACTION = 0.1
_ISSUE, _TRANSFER = 0, 1


@dataclass(frozen=True)
class FleetConfig:
    """``replicas`` identical replicas behind ``balancer``; ``prefill_replicas`` > 0 disaggregates:
    that many prefill-only replicas feed the ``replicas`` decode replicas over the KV transfer."""

    replicas: int = 1
    balancer: str = "round-robin"
    prefill_replicas: int = 0

    def __post_init__(self) -> None:
        if self.replicas < 1 or self.prefill_replicas < 0:
            raise RooflineError("--replicas must be at least 1 and --prefill-replicas at least 0")
        if self.balancer not in BALANCERS:
            raise RooflineError(f"--balancer: unknown {self.balancer!r}; allowed: {', '.join(BALANCERS)}")


DEFAULT_SCHEDULER = SchedulerConfig()


class Pool:
    """Replicas behind one load balancer: round-robin, or fewest outstanding requests (lowest index on ties)."""

    def __init__(self, engines: list[Engine], balancer: str) -> None:
        self.engines, self.balancer, self.turn = engines, balancer, 0

    def pick(self, t: float) -> Engine:
        if len(self.engines) == 1:
            return self.engines[0]
        if self.balancer == "round-robin":
            self.turn += 1
            return self.engines[(self.turn - 1) % len(self.engines)]
        return min(self.engines, key=lambda e: e.outstanding_at(t))


def warmup_count(requests: int, warmup: int | None) -> tuple[int, str]:
    """Requests excluded from the latencies: the first ``warmup`` by arrival (default 10%, rounded down)."""
    if warmup is None:
        count = int(DEFAULT_WARMUP_FRACTION * requests)
        return count, f"first {count} requests by arrival (10% of {requests}) excluded"
    if not 0 <= warmup < requests:
        raise RooflineError(f"--warmup must be in [0, --requests) (got {warmup} of {requests})")
    return warmup, f"first {warmup} requests by arrival excluded"


def simulate(
    cost: StepCost,
    load: Load,
    lengths: LengthDistribution | None = None,
    requests: int | None = 1000,
    seed: int = 0,
    scheduler: SchedulerConfig = DEFAULT_SCHEDULER,
    fleet: FleetConfig | None = None,
    ttft_slo_s: float | None = None,
    tpot_slo_s: float | None = None,
    warmup: int | None = None,
    prefill_cost: StepCost | None = None,
    max_points: int = 1000,
) -> SimulationResult:
    """Simulate ``requests`` requests of ``load`` (lengths from ``lengths`` or the trace); deterministic per seed."""
    fleet = fleet or FleetConfig()
    rng = np.random.default_rng(seed)
    arrivals: np.ndarray | None
    if isinstance(load, Trace):
        n = load.arrival_s.size if requests is None else min(requests, load.arrival_s.size)
        arrivals, inp, out = load.arrival_s[:n], load.input_len[:n], load.output_len[:n]
    else:
        if lengths is None or requests is None:
            raise RooflineError("give request lengths (-i/-o or --lengths) and --requests for a generated load")
        n = requests
        arrivals = open_loop_arrivals_s(load, n, rng) if isinstance(load, OpenLoop) else None
        inp, out = sample_lengths(lengths, n, rng)
    if n < 1:
        raise RooflineError(f"--requests must be at least 1 (got {requests})")
    warm, rule = warmup_count(n, warmup)
    table = RequestTable([int(x) for x in inp], [int(x) for x in out], [i >= warm for i in range(n)])
    decode = [Engine(cost, scheduler, table) for _ in range(fleet.replicas)]
    prefill = [Engine(prefill_cost or cost, scheduler, table, prefill_only=True) for _ in range(fleet.prefill_replicas)]
    back = Pool(decode, fleet.balancer)
    sim = _Run(table, Pool(prefill, fleet.balancer) if prefill else back, back, cost, load, n)
    sim.loop(arrivals)
    sources = {
        "step cost": getattr(cost, "source", type(cost).__name__),
        "scheduler": "vLLM V1-style continuous batching, chunked prefill, preemption by recompute",
        "seed": str(seed),
    }
    return summarize(
        table,
        prefill + decode,
        decode,
        sim.transfers,
        warm,
        rule,
        load.describe(),
        ttft_slo_s,
        tpot_slo_s,
        max_points,
        sources,
    )


class _Run:
    """Mutable state of one event loop (arrivals, client issues, KV hand-offs)."""

    def __init__(self, table: RequestTable, front: Pool, back: Pool, cost: StepCost, load: Load, n: int) -> None:
        self.table, self.front, self.back, self.cost, self.n = table, front, back, cost, n
        self.disaggregated = front is not back
        self.engines = front.engines + back.engines if self.disaggregated else back.engines
        self.closed = load if isinstance(load, ClosedLoop) else None
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = self.issued = self.next_id = 0
        self.transfers: list[tuple[float, float]] = []

    def push(self, t: float, kind: int, rid: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, rid))

    def issue(self, t: float) -> None:
        """A closed-loop client sends its next request at t (while requests remain)."""
        if self.issued < self.n:
            self.issued += 1
            self.push(t, _ISSUE, -1)

    def loop(self, arrivals: np.ndarray | None) -> None:
        times = arrivals.tolist() if arrivals is not None else []
        if self.closed is not None:
            for _ in range(min(self.closed.clients, self.n)):
                self.issue(0.0)
        ptr, engines = 0, self.engines
        while True:
            t_arr = times[ptr] if ptr < len(times) else math.inf
            t_ext = min(t_arr, self.events[0][0] if self.events else math.inf)
            first, c_min, c_next = None, math.inf, math.inf
            for e in engines:
                if e.has_work():
                    if e.clock < c_min:
                        first, c_min, c_next = e, e.clock, c_min
                    elif e.clock < c_next:
                        c_next = e.clock
            if first is None and t_ext == math.inf:
                break
            if first is not None and c_min < t_ext:
                first.advance(min(t_ext, c_next))
                self.collect(first)
            elif t_arr <= t_ext and ptr < len(times):
                self.arrive(ptr, t_arr)
                ptr += 1
            else:
                t, _, kind, rid = heapq.heappop(self.events)
                if kind == _ISSUE:
                    self.next_id += 1
                    self.arrive(self.next_id - 1, t)
                else:
                    self.handed_over(rid, t)
        done = sum(math.isfinite(f) for f in self.table.finish)
        if done + len(self.table.dropped) != self.n:
            raise RuntimeError(
                f"simulator lost requests: {done} completed + {len(self.table.dropped)} dropped != {self.n}"
            )

    def arrive(self, rid: int, t: float) -> None:
        """A new request: dropped if one replica's cache cannot hold it, else routed to the front pool."""
        table = self.table
        table.arrival[rid] = t
        whole = table.inp[rid] + table.out[rid] - 1  # the last token's KV is never written
        need_front = table.inp[rid] if self.disaggregated else whole
        if not (self.front.engines[0].fits(need_front) and self.back.engines[0].fits(whole)):
            table.dropped[rid] = "needs more KV than one replica's cache holds"
            self.done(t)
            return
        self.front.pick(t).receive(rid, t)

    def handed_over(self, rid: int, t: float) -> None:
        """The KV of a prefilled request lands on a decode replica: its first token is out."""
        table = self.table
        table.first[rid], table.gen[rid] = t, 1
        if table.out[rid] == 1:
            table.finish[rid] = t
            self.done(t)
            return
        table.comp[rid] = table.target[rid] = table.inp[rid]
        table.ready[rid], table.last_tok[rid] = True, t
        self.back.pick(t).receive(rid, t)

    def collect(self, e: Engine) -> None:
        """Finished requests free their clients; prefilled ones start their KV transfer."""
        for _ in e.finished:
            self.done(e.clock)
        e.finished.clear()
        for rid in e.handoffs:
            end = e.clock + float(self.cost.kv_transfer_time_s(self.table.inp[rid]))
            self.transfers.append((e.clock, end))
            self.push(end, _TRANSFER, rid)
        e.handoffs.clear()

    def done(self, t: float) -> None:
        if self.closed is not None:
            self.issue(t + self.closed.think_time_s)
