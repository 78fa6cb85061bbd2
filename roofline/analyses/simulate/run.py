"""The event loop: clients and arrivals, a load balancer over identical replicas, optional prefill/decode pools.

Replicas advance in time order (the one with the earliest clock steps next, never past an
external event or another busy replica's clock when it could still admit work), so a closed-loop
client's next request or a KV hand-off reaches its replica at the right time.  Times the client
sees include the request path (:class:`~roofline.analyses.simulate.config.RequestPath`); a client
with a timeout abandons its request at send + timeout.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from typing import TYPE_CHECKING

import numpy as np

from roofline.analyses.simulate.bounds import CHECK_TURNS, Watch
from roofline.analyses.simulate.cache import HostTier
from roofline.analyses.simulate.clients import Ramp, start_offsets_s
from roofline.analyses.simulate.compiled import run_either
from roofline.analyses.simulate.config import SimConfig
from roofline.analyses.simulate.cost import StepCost, pricer_for
from roofline.analyses.simulate.engine import Engine
from roofline.analyses.simulate.load import (
    MAX_REQUESTS,
    ClosedLoop,
    Load,
    Staged,
)
from roofline.analyses.simulate.metrics import RunFacts, Window, summarize
from roofline.analyses.simulate.policies import make_policy
from roofline.analyses.simulate.results import SimulationResult
from roofline.analyses.simulate.sources import RequestSource
from roofline.analyses.simulate.state import Records, Req
from roofline.core.errors import OptionError, RooflineError

if TYPE_CHECKING:
    from roofline.analyses.executors import Progress

DEFAULT_WARMUP_FRACTION = 0.1
#: Records a replica keeps over the span of known sends (finer ones are skipped; see records.Timeline).
RECORDS_PER_RUN = 4096
_ISSUE, _ENTER, _TRANSFER, _STAGE = 0, 1, 2, 3
DEFAULT_CONFIG = SimConfig()


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
        raise OptionError(f"warmup must be in [0, requests) (got {warmup} of {requests})", parameters=("warmup",))
    return warmup, f"first {warmup} requests by arrival excluded"


def simulate(
    cost: StepCost,
    load: Load,
    config: SimConfig = DEFAULT_CONFIG,
    *,
    prefill_cost: StepCost | None = None,
    progress: Progress | None = None,
) -> SimulationResult:
    """Simulate ``load`` on replicas priced by ``cost`` as ``config`` says; deterministic per seed.
    ``progress(done, total)`` hears of requests done (a staged load: simulated seconds); see bounds.Watch."""
    source = RequestSource(load, config)
    sends = source.open_sends(load, config.seed)
    staged = load if isinstance(load, Staged) else None
    if staged is not None:
        warm, rule = (
            0,
            "each stage's first warm-up seconds excluded"
            + ("" if any(s.warmup_s for s in staged.stages) else " (none)"),
        )
        if config.warmup:
            raise OptionError(
                "warmup counts requests; a staged load takes its warm-up in seconds (stage_warmup)",
                parameters=("warmup",),
            )
    else:
        known = sends.size if sends is not None else source.limit
        warm, rule = warmup_count(known, config.warmup)
    horizon = float(sends[-1]) if sends is not None and sends.size else 0.0
    run = _Run(cost, load, config, source, warm, prefill_cost, horizon / RECORDS_PER_RUN, progress)
    if config.timeout_s is not None:
        step_s = run.engines[-1].pricer.mixed_s(1, 1.0, 0, 0.0)
        if config.timeout_s < step_s:
            raise OptionError(
                f"timeout_s {config.timeout_s * 1e3:.3g} ms is below one engine step "
                f"({step_s * 1e3:.3g} ms, one sequence decoding): no request could finish",
                parameters=("timeout_s",),
            )
    loop_note = run_either(run, sends)
    run.records.trim(run.sent)
    windows = (
        tuple(
            Window(start + s.warmup_s, start + s.duration_s, s.describe())
            for start, s in zip(staged.starts_s, staged.stages, strict=True)
        )
        if staged is not None
        else ()
    )
    sched = config.scheduler
    sources = {
        "step cost": getattr(cost, "source", type(cost).__name__),
        "scheduler": f"{run.policy.name}: {run.policy.describes}; chunked prefill, preemption by {sched.preemption}",
        "prefix cache": run.cache_note,
        "request path": config.path.describe(),
        "seed": str(config.seed),
        "event loop": loop_note,
        **run.ramp.sources(),
    }
    facts = RunFacts(
        warm,
        rule,
        load.describe(),
        config.ttft_slo_s,
        config.tpot_slo_s,
        config.timeout_s,
        config.max_points,
        run.cache_modelled,
        windows,
        sources,
    )
    return summarize(run.records, run.engines, run.back.engines, run.transfers, facts)


class _Run:
    """Mutable state of one event loop (arrivals, clients, timeouts, KV hand-offs)."""

    def __init__(
        self,
        cost: StepCost,
        load: Load,
        config: SimConfig,
        source: RequestSource,
        warm: int,
        prefill_cost: StepCost | None,
        record_dt: float = 0.0,
        progress: Progress | None = None,
    ) -> None:
        self.record_dt = record_dt
        self.cost, self.config, self.source, self.warm = cost, config, source, warm
        self.fleet, self.path = config.fleet, config.path
        self.solo = config.timeout_s is None and self.fleet.replicas + self.fleet.prefill_replicas == 1
        self.records = Records(min(source.limit, MAX_REQUESTS) if source.limit else 1024)
        self.staged = load if isinstance(load, Staged) else None
        closed = isinstance(load, ClosedLoop) or any(s.concurrency for s in getattr(self.staged, "stages", ()))
        self.chain = self.solo and not closed  # one replica and no closed-loop clients: a finish schedules nothing
        self.starts = self.staged.starts_s if self.staged else [0.0]
        self.end_s = self.staged.end_s if self.staged else math.inf
        self.timeout = config.timeout_s
        self.policy = make_policy(config.scheduler.policy)
        self.cache_modelled = bool(config.scheduler.prefix_hit_rate) or (
            config.scheduler.prefix_caching and source.shares
        )
        self.cache_note = self._cache_note()
        decode = [self._engine(cost) for _ in range(self.fleet.replicas)]
        prefill = [self._engine(prefill_cost or cost, True) for _ in range(self.fleet.prefill_replicas)]
        self.back = Pool(decode, self.fleet.balancer)
        self.front = Pool(prefill, self.fleet.balancer) if prefill else self.back
        self.disaggregated = bool(prefill)
        self.engines = prefill + decode
        self.events: list[tuple[float, int, int, object]] = []
        self.seq = self.sent = self.done_count = 0
        self.transfers: list[tuple[float, float]] = []
        self.closed = load if isinstance(load, ClosedLoop) else None
        self.target = self.active = 0
        self.ramp = Ramp(cost, source, config, self.closed.ramp_s if self.closed is not None else None)
        self.think_rng = np.random.default_rng([config.seed, 3])
        self.watch = Watch(source.limit, self.end_s if self.staged else None, progress)

    def _cache_note(self) -> str:
        s = self.config.scheduler
        if s.prefix_hit_rate:
            return f"shortcut: {s.prefix_hit_rate:g} of every prompt cached (the hit-rate shortcut, no cache modelled)"
        if not s.prefix_caching:
            return "off"
        if not self.source.shares:
            return "on; the load names no shared prefix or session (no hits)"
        return f"block prefix cache, {s.block_size}-token blocks, LRU eviction within the KV memory"

    def _engine(self, cost: StepCost, prefill_only: bool = False) -> Engine:
        cfg, s = self.config, self.config.scheduler
        spec = cfg.speculative
        pricer = pricer_for(
            cost, s.max_num_seqs, s.max_num_batched_tokens, self.source.prompt_lens(), spec.draft_len if spec else None
        )
        host, block_s = None, 0.0
        if cfg.offload is not None:
            kv_token = getattr(cost, "kv_bytes_per_token", None)
            if kv_token is None:
                raise RooflineError(f"KV offload needs a step cost with kv_bytes_per_token ({type(cost).__name__})")
            block_bytes = s.block_size * float(kv_token)
            host = HostTier(int(cfg.offload.host_bytes // block_bytes))
            block_s = block_bytes / cfg.offload.bandwidth_bytes_per_s
        return Engine(
            pricer,
            int(cost.kv_capacity_tokens),
            s,
            self.policy,
            prefill_only=prefill_only,
            lag=self.path.schedule_lag_steps,
            caching=s.prefix_caching and self.source.shares,
            host=host,
            block_s=block_s,
            tokens_per_round=spec.tokens_per_round if spec else 1.0,
            record_dt=self.record_dt,
            leaps=not cfg.stepwise,
            solo=self.solo,
            chain=self.chain,
        )

    # ------------------------------------------------------------------ events
    def push(self, t: float, kind: int, payload: object = None) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def loop(self, sends: np.ndarray | None) -> None:
        enter = (sends + self.path.frontend_in_s).tolist() if sends is not None else []
        send_list = sends.tolist() if sends is not None else []
        self._schedule_clients()
        ptr, engines, n_open = 0, self.engines, len(enter)
        events, watch, turns = self.events, self.watch, 0
        only = engines[0] if len(engines) == 1 else None
        while True:
            turns += 1
            if turns == CHECK_TURNS:  # the step ceiling, and progress for the view
                turns = 0
                watch.check(engines, self.done_count)
            t_arr = enter[ptr] if ptr < n_open else math.inf
            t_ext = events[0][0] if events and events[0][0] < t_arr else t_arr
            if only is not None:  # one replica: no scan
                first = only if (only.running or only.n_waiting) else None
                c_min = only.clock if first is not None else math.inf
                c_next = math.inf
            else:
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
                first.advance(t_ext if t_ext < c_next else c_next)
                if first.finished or first.failed or first.handoffs:
                    self.collect(first)
            elif t_arr <= t_ext and ptr < n_open:
                self.arrive(self.new_request(send_list[ptr], False), t_arr)
                ptr += 1
            else:
                t, _, kind, payload = heapq.heappop(events)
                if kind == _ENTER:
                    self.arrive(payload, t)  # type: ignore[arg-type]
                elif kind == _ISSUE:
                    self.issue(t)
                elif kind == _TRANSFER:
                    self.handed_over(payload, t)  # type: ignore[arg-type]
                else:
                    self.set_clients(int(payload), t)  # type: ignore[call-overload]
        for e in engines:
            e.tl.record(e, force=True)
        watch.check(engines, self.done_count, final=True)
        accounted = self.done_count
        if accounted != self.sent:
            raise RuntimeError(f"simulator lost requests: {accounted} accounted for of {self.sent} sent")

    # ------------------------------------------------------------------ clients
    def _schedule_clients(self) -> None:
        if self.closed is not None:
            self.set_clients(self.closed.clients, 0.0)
        elif self.staged is not None:
            for start, s in zip(self.starts, self.staged.stages, strict=True):
                self.push(start, _STAGE, s.concurrency or 0)
            self.push(self.end_s, _STAGE, 0)

    def set_clients(self, target: int, t: float) -> None:
        """A stage sets the closed-loop clients: new ones start over the ramp, surplus ones leave after their reply."""
        self.target = target
        think, new = self.closed.think_time_s if self.closed is not None else self.think_s(t), target - self.active
        for dt in start_offsets_s(max(new, 0), self.ramp.seconds(think) if new > 0 else 0.0):
            self.active += 1
            self.push(t + dt, _ISSUE)

    def issue(self, t: float) -> None:
        """A closed-loop client sends its next request at t (it leaves when the load ends or shrinks)."""
        if self.active > self.target or t >= self.end_s or self.sent >= self.source.limit:
            self.active -= 1
            return
        req = self.new_request(t, True)
        self.push(t + self.path.frontend_in_s, _ENTER, req)

    def think_s(self, t: float) -> float:
        """A closed-loop client's think time (the stage's, when staged; gamma-drawn when the loop has a cv)."""
        if self.closed is None:
            assert self.staged is not None
            return self.staged.stages[max(bisect_right(self.starts, t) - 1, 0)].think_time_s
        think, cv = self.closed.think_time_s, self.closed.think_cv
        if not think or not cv:
            return think
        shape = 1.0 / cv**2
        return float(self.think_rng.gamma(shape, think / shape))

    def client_done(self, req: Req, t_seen: float) -> None:
        """The client saw the reply (or gave up) at t_seen: a closed-loop client thinks, then sends again."""
        self.done_count += 1
        if req.closed:
            self.push(t_seen + self.think_s(t_seen), _ISSUE)

    # ------------------------------------------------------------------ requests
    def new_request(self, send: float, closed: bool) -> Req:
        rid = self.sent
        self.sent += 1
        if rid >= MAX_REQUESTS:
            raise RooflineError(f"the load sends more than {MAX_REQUESTS:,} requests (the limit); shorten its stages")
        inp, out, pid, plen, sid = self.source.get(rid)
        stage = bisect_right(self.starts, send) - 1 if self.staged else 0
        measured = (
            rid >= self.warm
            if self.staged is None
            else send >= self.starts[stage] + self.staged.stages[min(stage, len(self.starts) - 1)].warmup_s
        )
        deadline = math.inf if self.timeout is None else send + self.timeout - self.path.frontend_out_s
        req = Req(rid, inp, out, send, deadline, measured)
        req.closed = closed
        if pid >= 0 or sid >= 0:
            req.pid, req.plen, req.sid, req.shared = pid, plen, sid, True
        rec = self.records
        if rid >= rec.send.size:
            rec.grow(rid + 1)
        rec.send[rid], rec.input_len[rid], rec.output_len[rid] = send, inp, out
        rec.measured[rid], rec.stage[rid] = measured, max(stage, 0)
        return req

    def arrive(self, req: Req, t: float) -> None:
        """A request reaches the engines: dropped if one replica's cache cannot hold it, else routed."""
        whole = req.inp + req.out - 1  # the last token's KV is never written
        need_front = req.inp if self.disaggregated else whole
        if not (self.front.engines[0].fits(need_front) and self.back.engines[0].fits(whole)):
            self.records.dropped[req.rid] = "needs more KV than one replica's cache holds"
            self.client_done(req, t)
            return
        if t >= req.deadline:
            self.fail(req)
            return
        self.front.pick(t).receive(req, t)

    def handed_over(self, req: Req, t: float) -> None:
        """The KV of a prefilled request lands on a decode replica: its first token is out."""
        req.first, req.gen = t, 1
        if t > req.deadline:
            self.fail(req)
            return
        if req.out == 1:
            self.finish(req, t)
            return
        req.comp = req.target = req.inp
        req.ready, req.last_tok, req.gone = True, t, False
        self.back.pick(t).receive(req, t)

    def collect(self, e: Engine) -> None:
        """Finished and abandoned requests free their clients; prefilled ones start their KV transfer."""
        if e.finished:
            for req, t in e.finished:
                if t > req.deadline:
                    self.fail(req)
                else:
                    self.finish(req, t)
            e.finished.clear()
        if e.failed:
            for req in e.failed:
                self.fail(req)
            e.failed.clear()
        if e.handoffs:
            for req in e.handoffs:
                end = e.clock + float(self.cost.kv_transfer_time_s(req.inp))
                self.transfers.append((e.clock, end))
                self.push(end, _TRANSFER, req)
            e.handoffs.clear()

    def finish(self, req: Req, t: float) -> None:
        out_s, rec, rid = self.path.frontend_out_s, self.records, req.rid
        rec.first[rid], rec.finish[rid] = req.first + out_s, t + out_s
        rec.tokens[rid], rec.cached[rid], rec.preemptions[rid] = req.out, req.cached, req.preempts
        self.client_done(req, t + out_s)

    def fail(self, req: Req) -> None:
        """The client gave up at send + timeout: whatever it saw by then is kept, the request counts failed."""
        assert self.timeout is not None
        gave_up = req.send + self.timeout
        rec, rid = self.records, req.rid
        req.gone = True
        rec.failed_at[rid] = gave_up
        seen = req.first + self.path.frontend_out_s
        rec.first[rid] = seen if seen <= gave_up else math.nan
        rec.tokens[rid], rec.cached[rid], rec.preemptions[rid] = req.gen, req.cached, req.preempts
        self.client_done(req, gave_up)
