"""Run a simulation's event loop compiled (numba) when it covers the run; else say why not.

The compiled loop (:mod:`~roofline.analyses.simulate.compiled_loop`) prices every step on its own, as
``SimConfig(stepwise=True)`` does, so its results equal the Python engine's (tests/test_simulate_compiled.py).
It takes the replica the Python run built (its step table, KV blocks and timeline) and writes back the
same fields the summary reads, so everything after the loop is shared.  ``SimConfig.event_loop`` chooses:
``auto`` uses it for runs of at least :data:`AUTO_MIN_REQUESTS` requests it covers, when numba imports.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING

import numpy as np

from roofline.analyses.simulate.blocks import blocks_for
from roofline.analyses.simulate.bounds import MAX_ENGINE_STEPS, steps_exceeded
from roofline.analyses.simulate.load import MAX_REQUESTS, Staged
from roofline.analyses.simulate.table import StepTable
from roofline.core.errors import OptionError, RooflineError

if TYPE_CHECKING:
    from roofline.analyses.simulate.engine import Engine
    from roofline.analyses.simulate.run import _Run

#: ``event_loop="auto"`` compiles runs of at least this many requests: below it the Python loop (about 50 us a
#: request) finishes before numba has imported and loaded the cached loop (0.7-1.0 s here).
AUTO_MIN_REQUESTS = 16_000
#: Loop turns per compiled call (progress is reported between calls).
TURNS_PER_CALL = 1 << 18
POLICIES = ("decode-first", "prefill-first")
DESCRIBES = "compiled (numba), every step priced on its own"


def numba_missing() -> str | None:
    """Why numba cannot be used here (None: it imports)."""
    try:
        import numba  # noqa: F401
    except ImportError as err:  # pragma: no cover - numba is a dependency
        return f"numba does not import ({err})"
    return None


def unsupported(run: _Run) -> str | None:
    """What of this run the compiled loop does not cover (None: it covers it)."""
    e = run.engines[0]
    checks = (
        (len(run.engines) != 1, "more than one replica"),
        (run.staged is not None and any(s.closed for s in run.staged.stages), "closed-loop stages"),
        (e.cache is not None, "the block prefix cache"),
        (e.host is not None, "KV offload"),
        (e.spec, "speculative decoding"),
        (run.policy.name not in POLICIES, f"the {run.policy.name!r} policy"),
        (not isinstance(e.pricer, StepTable), "a step cost without a tabulated pricer"),
    )
    for bad, what in checks:
        if bad:
            return what
    return numba_missing()


def chooses(run: _Run, sends: np.ndarray | None) -> bool:
    """Whether this run goes to the compiled loop (SimConfig.event_loop; ``compiled`` refuses what it cannot run)."""
    loop = run.config.event_loop
    if loop == "python" or (loop == "auto" and run.config.stepwise):
        return False
    why = unsupported(run)
    if loop == "compiled":
        if why is not None:
            raise OptionError(
                f"event_loop: the compiled loop does not cover {why}; use event_loop='auto'", parameters=("event_loop",)
            )
        return True
    count = sends.size if sends is not None else run.source.limit
    return why is None and count >= AUTO_MIN_REQUESTS


def run_either(run: _Run, sends: np.ndarray | None) -> str:
    """Run the event loop the config chooses; what ran it (the result's ``sources["event loop"]``)."""
    if chooses(run, sends):
        run_loop(run, sends)
        return DESCRIBES
    run.loop(sends)
    return "python" + (", every step priced on its own" if run.config.stepwise else "")


def _table(tab: StepTable) -> tuple[np.ndarray, ...]:
    """The step table as the compiled pricer's arrays (every decode row priced now)."""
    rows = np.array([tab.decode_row(n)[0] for n in range(tab.max_seqs + 1)], dtype=float)
    n_i = np.array([c[0] for c in tab.n_cell], dtype=np.int64)
    n_w = np.array([c[1] for c in tab.n_cell], dtype=float)
    t_j = np.array([c[0] for c in tab.t_cell], dtype=np.int64)
    t_w = np.array([c[1] for c in tab.t_cell], dtype=float)
    scalars = np.array([tab.inv_dx, tab.inv_dc, tab.inv_dxg, tab.max_context, float(tab.delta_has_ctx)])
    delta = np.ascontiguousarray(tab.delta_array, dtype=float).reshape(-1)
    return scalars, rows, delta, n_i, n_w, t_j, t_w, np.array(tab.s012, dtype=np.int64)


def _requests(run: _Run, sends: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input, output, measured) of every request the run may send; open-loop requests' records written now
    (run.new_request, vectorised), closed-loop ones' after the run (their sends are not known before)."""
    n = sends.size if sends is not None else run.source.limit
    if n > MAX_REQUESTS:
        raise RooflineError(f"the load sends more than {MAX_REQUESTS:,} requests (the limit); shorten its stages")
    if n:
        run.source.get(n - 1)
    inp = np.asarray(run.source.cols[0][:n], dtype=np.int64)
    out = np.asarray(run.source.cols[1][:n], dtype=np.int64)
    if sends is None:
        return inp, out, np.arange(n) >= run.warm
    if run.staged is None:
        measured, stage = np.arange(n) >= run.warm, np.zeros(n, dtype=np.int64)
    else:
        stages: Staged = run.staged
        starts = np.asarray(run.starts, dtype=float)
        warm = np.array([s.warmup_s for s in stages.stages], dtype=float)
        stage = np.searchsorted(starts, sends, side="right") - 1
        measured = sends >= starts[stage] + warm[np.minimum(stage, len(starts) - 1)]
    rec = run.records
    rec.grow(n)
    rec.send[:n], rec.input_len[:n], rec.output_len[:n] = sends, inp, out
    rec.measured[:n], rec.stage[:n] = measured, np.maximum(stage, 0)
    run.sent = n
    return inp, out, measured


#: First sizes of the growing buffers (doubled when a call returns GROW_*): ITL samples, ITL runs, preemption
#: gaps, and the finish heap's room beyond max_num_seqs + 2 (stale entries of preempted requests).
FIRST_SIZES = {"itl_s": 1 << 16, "runs": 1 << 12, "gaps": 1 << 10, "heap": 3 << 6}
#: The compiled loop's state arrays, in its argument order (then the scalars, the table and the sends).
STATE: tuple[str, ...] = ("S", "F", "R", "RF", "wq", "pf", "ch_r", "ch_c", "counts", "hk", "hv", "tl", "itl_s")
STATE += ("itl_end", "itl_w", "itl_k", "gaps", "fin", "fails")


def _state(
    run: _Run, sends: np.ndarray | None, inp: np.ndarray, out: np.ndarray, measured: np.ndarray
) -> dict[str, np.ndarray]:
    """The compiled loop's state for replica ``e`` (layout: compiled_parts)."""
    from roofline.analyses.simulate import compiled_parts as cp

    e, timeout, out_s = run.engines[0], run.timeout, run.path.frontend_out_s
    n, seqs = inp.size, e.max_seqs
    i_s = np.zeros(cp.N_INT, dtype=np.int64)
    i_s[cp.FREE], i_s[cp.RUN_OLD], i_s[cp.RUN_NEW], i_s[cp.LAST_DEC_STEP], i_s[cp.TL_N] = e.free, -1, -1, -10, 1
    i_s[cp.BS], i_s[cp.MAX_SEQS], i_s[cp.MAX_TOKENS] = e.bs, e.max_seqs, e.max_tokens
    i_s[cp.POLICY], i_s[cp.TOTAL] = POLICIES.index(e.policy.name), e.total_blocks
    f_s = np.zeros(cp.N_FLOAT)
    f_s[cp.MIN_DT], f_s[cp.HIT_RATE] = e.tl.min_dt, e.hit_rate
    f_s[cp.TIMEOUT] = math.inf if timeout is None else timeout
    f_s[cp.FRONT_IN], f_s[cp.FRONT_OUT] = run.path.frontend_in_s, out_s
    i_s[cp.LIMIT] = n
    r = np.zeros((cp.N_ROWS, n), dtype=np.int64)
    r[cp.INP], r[cp.OUT], r[cp.TARGET], r[cp.MEASURED] = inp, out, inp, measured
    r[cp.CACHED], r[cp.PREV], r[cp.NEXT] = -1, -1, -1
    rf = np.full((cp.N_FROWS, n), math.nan)
    rf[cp.LAST_TOK] = 0.0
    if sends is not None:  # run.new_request (closed-loop requests: when they are sent)
        rf[cp.DEADLINE] = math.inf if timeout is None else sends + timeout - out_s
    ints = {name: np.zeros(seqs + 2, dtype=np.int64) for name in ("pf", "ch_r", "ch_c")}
    heap = {name: np.zeros(seqs + 2 + FIRST_SIZES["heap"], dtype=np.int64) for name in ("hk", "hv")}
    return {
        "S": i_s,
        "F": f_s,
        "R": r,
        "RF": rf,
        "wq": np.zeros(max(n, 1), dtype=np.int64),  # the waiting queue (a ring)
        **ints,  # prefilling requests; this step's chunks (requests, tokens)
        "counts": np.zeros(e.bs, dtype=np.int64),  # decoding sequences by block phase
        **heap,  # finish heap: keys (decode step, request), versions
        "tl": np.zeros((cp.TL_COLS, cp.MAX_RECORDS + 2)),
        "itl_s": np.zeros(FIRST_SIZES["itl_s"]),  # ITL: each measured decode step's time; runs' ends, weights, steps
        "itl_end": np.zeros(FIRST_SIZES["runs"]),
        "itl_w": np.zeros(FIRST_SIZES["runs"]),
        "itl_k": np.zeros(FIRST_SIZES["runs"], dtype=np.int64),
        "gaps": np.zeros(FIRST_SIZES["gaps"]),  # token gaps across preemptions
        "fin": np.zeros(seqs + 2, dtype=np.int64),  # a step's finished requests, in order
        "fails": np.zeros(max(n, 1), dtype=np.int64),  # requests abandoned before a step, in order
    }


def _doubled(a: np.ndarray) -> np.ndarray:
    b = np.zeros(2 * a.size, dtype=a.dtype)
    b[: a.size] = a
    return b


#: What each status asks to grow.
GROWS = {"GROW_ITL": ("itl_s", "itl_end", "itl_w", "itl_k"), "GROW_GAPS": ("gaps",), "GROW_HEAP": ("hk", "hv")}


def _clients(run: _Run, limit: int) -> tuple[np.ndarray, ...]:
    """Closed-loop clients' first sends (run._schedule_clients: its event heap, sorted) and their think times
    (run.think_s: drawn ahead from the same stream, one a reply)."""
    run._schedule_clients()
    events = sorted(run.events)
    ev_t = np.array([ev[0] for ev in events] + [0.0] * 2)
    ev_q = np.array([ev[1] for ev in events] + [0] * 2, dtype=np.int64)
    ev_k, ev_r = np.zeros(ev_q.size, dtype=np.int64), np.full(ev_q.size, -1, dtype=np.int64)  # all _ISSUE
    loop = run.closed
    draws = np.zeros(0)
    if loop is not None and loop.think_time_s and loop.think_cv:
        shape = 1.0 / loop.think_cv**2
        draws = run.think_rng.gamma(shape, loop.think_time_s / shape, size=limit)
    return ev_t, ev_q, ev_k, ev_r, draws


def run_loop(run: _Run, sends: np.ndarray | None) -> None:
    """run._Run.loop for the runs the compiled loop covers: records and the replica's fields written alike."""
    from roofline.analyses.simulate import compiled_loop as cc
    from roofline.analyses.simulate import compiled_parts as cp

    e = run.engines[0]
    inp, out, measured = _requests(run, sends)
    whole = inp + out - 1  # the last token's KV is never written
    dropped = np.greater(blocks_for(whole, e.bs), e.total_blocks)  # type: ignore[arg-type]  # run.arrive: Engine.fits
    state = _state(run, sends, inp, out, measured)
    pricer = e.pricer
    assert isinstance(pricer, StepTable)  # unsupported() said so
    table = _table(pricer)
    enter = np.zeros(0) if sends is None else np.asarray(sends + run.path.frontend_in_s, dtype=float)
    *events, draws = _clients(run, inp.size) if run.closed is not None else (None,) * 5
    state["S"][[cp.EV_N, cp.SEQ, cp.ACTIVE, cp.CLIENTS]] = len(run.events), run.seq, run.active, run.target
    grows = {getattr(cp, k): v for k, v in GROWS.items()}
    i_s, f_s = state["S"], state["F"]
    while True:
        arrays: list[np.ndarray | None] = [state[k] for k in STATE]
        if run.closed is None:  # an open loop notifies no clients: no lists of finished and abandoned requests
            arrays[-2:] = [None, None]
        status = cc.loop(*arrays, *table, enter, dropped, *events, draws, e.lag, MAX_ENGINE_STEPS, TURNS_PER_CALL)  # type: ignore[call-arg]
        for name in grows.get(status, ()):
            state[name] = _doubled(state[name])
        if status == cp.TOO_LONG:
            pricer._too_long(float(f_s[cp.ERR_VALUE]))
        elif status == cp.STEPS_EXCEEDED:
            raise steps_exceeded(int(i_s[cp.STEPS]), int(i_s[cp.DONE]), None if run.staged else run.watch.total)
        e.clock, e.steps = float(f_s[cp.CLOCK]), int(i_s[cp.STEPS])
        if status == cp.FINISHED:
            break
        run.watch.check(run.engines, int(i_s[cp.DONE]))
    if sends is None:  # closed-loop requests' records (run.new_request)
        n = run.sent = int(i_s[cp.SENT])
        rec = run.records
        rec.grow(n)
        rec.send[:n], rec.input_len[:n], rec.output_len[:n] = state["RF"][cp.SEND, :n], inp[:n], out[:n]
        rec.measured[:n], rec.stage[:n] = measured[:n], 0
    for rid in np.flatnonzero(dropped[: run.sent]).tolist():
        run.records.dropped[rid] = "needs more KV than one replica's cache holds"
    _write_back(run, e, state)


def _floats(a: np.ndarray, code: str = "d") -> array:
    out = array(code)
    out.frombytes(np.ascontiguousarray(a).data.cast("B"))
    return out


def _write_back(run: _Run, e: Engine, state: dict[str, np.ndarray]) -> None:
    """The replica's fields and the records as the Python loop leaves them."""
    from roofline.analyses.simulate import compiled_parts as cp

    i_s, f_s, r, rf = state["S"], state["F"], state["R"], state["RF"]
    e.preemptions, e.step_no, e.free = int(i_s[cp.PREEMPTS]), int(i_s[cp.STEP_NO]), int(i_s[cp.FREE])
    times, run_ends, weights = state["itl_s"], state["itl_end"], state["itl_w"]
    e.itl_s = _floats(times[: i_s[cp.ITL_N]])
    e.itl_end, e.itl_w = _floats(run_ends[: i_s[cp.RUNS_N]]), _floats(weights[: i_s[cp.RUNS_N]])
    e.itl_k = _floats(state["itl_k"][: i_s[cp.RUNS_N]], "q")
    e.gaps = state["gaps"][: i_s[cp.GAP_N]].tolist()
    tl, n = e.tl, int(i_s[cp.TL_N])
    tl.cols = [_floats(state["tl"][c, :n]) for c in range(cp.TL_COLS)]
    tl.c_batch, tl.c_kv, tl.c_insys = float(f_s[cp.C_BATCH]), float(f_s[cp.C_KV]), float(f_s[cp.C_INSYS])
    tl.c_queue, tl.c_tokens = float(f_s[cp.C_QUEUE]), float(f_s[cp.C_TOKENS])
    tl.min_dt, tl.last_t = float(f_s[cp.MIN_DT]), float(f_s[cp.LAST_T])
    finished = ~np.isnan(rf[cp.FINISH])
    late = finished & (rf[cp.FINISH] > rf[cp.DEADLINE])  # run.collect: finished after its client gave up
    out_s, rec = run.path.frontend_out_s, run.records
    idx = np.flatnonzero(finished & ~late)  # run.finish
    rec.first[idx], rec.finish[idx] = rf[cp.FIRST, idx] + out_s, rf[cp.FINISH, idx] + out_s
    rec.tokens[idx], rec.cached[idx], rec.preemptions[idx] = r[cp.OUT, idx], r[cp.CACHED, idx], r[cp.PREEMPTED, idx]
    idx = np.flatnonzero((r[cp.FAILED] == 1) | late)  # run.fail: what the client saw by send + timeout
    if idx.size:
        gave_up = rec.send[idx] + run.timeout
        seen = rf[cp.FIRST, idx] + out_s
        rec.failed_at[idx], rec.first[idx] = gave_up, np.where(seen <= gave_up, seen, math.nan)
        rec.tokens[idx], rec.cached[idx], rec.preemptions[idx] = r[cp.GEN, idx], r[cp.CACHED, idx], r[cp.PREEMPTED, idx]
    run.done_count = int(i_s[cp.DONE])
    run.watch.check(run.engines, run.done_count, final=True)
    if run.done_count != run.sent:
        raise RuntimeError(f"simulator lost requests: {run.done_count} accounted for of {run.sent} sent")
