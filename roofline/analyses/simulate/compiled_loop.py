"""The compiled event loop's step and turn: run._Run.loop and engine._step for the runs compiled_core covers.

``loop`` is the entry point (called from :mod:`~roofline.analyses.simulate.compiled`); the step is inlined
into it, so its 25 arrays are not reference-counted per step.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from roofline.analyses.simulate.compiled_core import (
    compose,
    expire,
    pop_finished,
    preempt_newest,
    prefill_done,
)
from roofline.analyses.simulate.compiled_parts import (
    ACTIVE,
    BS,
    C_INSYS,
    C_QUEUE,
    C_TOKENS,
    CHECK_TURNS,
    CLIENTS,
    CLOCK,
    COMP,
    DEADLINE,
    DECODED,
    DL_PTR,
    DONE,
    DSTEP,
    ELIGIBLE,
    ENTER,
    EV_N,
    FAILED,
    FINISH,
    FINISHED,
    FRONT_IN,
    FRONT_OUT,
    GAP_N,
    GONE,
    GROW_GAPS,
    GROW_HEAP,
    GROW_ITL,
    HEAP_N,
    HIT_RATE,
    ISSUE,
    ITL_N,
    KEY_SPAN,
    KV_SUM,
    LAST_DEC_STEP,
    LAST_T,
    LIMIT,
    MAX_SEQS,
    MAX_TOKENS,
    MIN_DT,
    N_CH,
    N_FAIL,
    N_FIN,
    N_MEAS,
    N_RUN,
    N_WAIT,
    PAIRS,
    POLICY,
    PTR,
    RUNNING,
    RUNS_N,
    SEND,
    SENT,
    STEP_NO,
    STEPS,
    STEPS_EXCEEDED,
    TARGET,
    THINK,
    THINK_I,
    TIMEOUT,
    TOKENS,
    TOO_LONG,
    TOTAL,
    TURNS,
    W_HEAD,
    W_LEN,
    ev_pop,
    ev_push,
    head,
    mixed_s,
    pref_remove,
    tl_integrate,
    tl_record,
)

jit = nb.njit(cache=True, error_model="numpy", inline="always")


@jit
def record_itl(S, itl_s, itl_end, itl_w, itl_k, step_s, end):
    """A decode step's time as an ITL sample; consecutive steps of equal measured weight form one run."""
    n = S[ITL_N]
    itl_s[n] = step_s / 1.0
    S[ITL_N] = n + 1
    w = S[N_MEAS] * 1.0
    r = S[RUNS_N]
    if r and S[LAST_DEC_STEP] == S[STEPS] - 1 and itl_w[r - 1] == w:
        itl_end[r - 1] = end
        itl_k[r - 1] += 1
    else:
        itl_end[r], itl_w[r], itl_k[r] = end, w, 1
        S[RUNS_N] = r + 1
    S[LAST_DEC_STEP] = S[STEPS]


@jit
def step(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps, fin,
         tab, rows, delta, n_i, n_w, t_j, t_w, strides):  # fmt: skip
    """engine._step: one composed step, priced from the table; False when the table cannot price it.
    (At most 30 arguments: CPython passes more as a tuple, which numba cannot inline.)"""
    bs, max_seqs, max_tokens, policy, total = S[BS], S[MAX_SEQS], S[MAX_TOKENS], S[POLICY], S[TOTAL]
    hit_rate = F[HIT_RATE]
    now = F[CLOCK]
    S[N_CH], S[TOKENS], S[DECODED] = 0, 0, 0
    F[PAIRS] = 0.0
    compose(S, F, R, RF, wq, pf, ch_r, ch_c, counts, bs, max_seqs, hit_rate, max_tokens, policy)
    n_dec = S[DECODED]
    if not n_dec and not S[N_CH]:
        if not S[N_RUN]:
            if S[N_WAIT]:  # the head waits for a step that never comes: let it in
                R[ELIGIBLE, head(R, S, wq)] = S[STEP_NO]
            return True
        preempt_newest(S, F, R, RF, wq, pf, counts, bs, now)  # everything stalled on KV: free the newest
        return True
    kv = F[KV_SUM] if n_dec else 0.0
    step_s = mixed_s(tab, rows, delta, n_i, n_w, t_j, t_w, strides, n_dec, kv, S[TOKENS], F[PAIRS], F, S) + 0.0
    if step_s < 0:
        return False
    end = now + step_s
    tl_integrate(F, S, step_s, total)
    F[CLOCK] = end
    S[STEP_NO] += 1
    S[STEPS] += 1
    produced = 0.0
    if n_dec:
        F[KV_SUM] += n_dec * 1.0
        S[DSTEP] += 1
        produced = n_dec * 1.0
        if S[N_MEAS]:
            record_itl(S, itl_s, itl_end, itl_w, itl_k, step_s, end)
    for j in range(S[N_CH]):
        rid, c = ch_r[j], ch_c[j]
        R[COMP, rid] += c
        if R[COMP, rid] == R[TARGET, rid]:
            pref_remove(pf, S, rid)
            produced += 1
            prefill_done(S, F, R, RF, counts, hk, hv, gaps, fin, bs, rid, end)
    if n_dec and hk[0] // KEY_SPAN <= S[DSTEP]:
        pop_finished(S, F, R, RF, counts, hk, hv, fin, bs, end)
    F[C_TOKENS] += produced
    if end - F[LAST_T] >= F[MIN_DT]:
        tl_record(F, S, tl, total, False)
    return True


@jit
def receive(S, F, R, wq, tl, total, rid, t, lag):
    """engine.receive, step by step: a request reaches the queue at t."""
    busy = S[N_RUN] or S[N_WAIT]
    clock = F[CLOCK]
    if not busy and clock < t:
        F[CLOCK] = t
        tl_record(F, S, tl, total, False)
    elif clock > t:
        F[C_INSYS] += clock - t
        F[C_QUEUE] += clock - t
    R[ELIGIBLE, rid] = S[STEP_NO] + (lag if busy and F[CLOCK] > t else 0)
    wq[(S[W_HEAD] + S[W_LEN]) % wq.size] = rid
    S[W_LEN] += 1
    S[N_WAIT] += 1


@jit
def client_done(S, F, ev_t, ev_q, ev_k, ev_r, draws, t_seen):
    """run.client_done for a closed-loop client: it thinks (a drawn time when the loop has a cv), then sends."""
    think = F[THINK]
    if draws.size:
        think = draws[S[THINK_I]]
        S[THINK_I] += 1
    ev_push(ev_t, ev_q, ev_k, ev_r, S, t_seen + think, ISSUE, -1)


@jit
def collect(S, F, RF, fin, fails, ev_t, ev_q, ev_k, ev_r, draws):
    """run.collect for closed-loop clients: the step's finished requests (late ones as failed), then the
    abandoned ones, each client told when it saw the reply or gave up."""
    for j in range(S[N_FIN]):
        rid = fin[j]
        late = RF[FINISH, rid] > RF[DEADLINE, rid]
        seen = RF[SEND, rid] + F[TIMEOUT] if late else RF[FINISH, rid] + F[FRONT_OUT]
        client_done(S, F, ev_t, ev_q, ev_k, ev_r, draws, seen)
    for j in range(S[N_FAIL]):
        client_done(S, F, ev_t, ev_q, ev_k, ev_r, draws, RF[SEND, fails[j]] + F[TIMEOUT])


@jit
def issue(S, F, RF, ev_t, ev_q, ev_k, ev_r, t):
    """run.issue: a closed-loop client sends its next request (or leaves when the run has sent them all)."""
    if S[ACTIVE] > S[CLIENTS] or S[SENT] >= S[LIMIT]:
        S[ACTIVE] -= 1
        return
    rid = S[SENT]
    S[SENT] += 1
    RF[SEND, rid] = t
    RF[DEADLINE, rid] = t + F[TIMEOUT] - F[FRONT_OUT] if F[TIMEOUT] < np.inf else np.inf
    ev_push(ev_t, ev_q, ev_k, ev_r, S, t + F[FRONT_IN], ENTER, rid)


@nb.njit(cache=True, error_model="numpy")
def loop(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps, fin, fails,
         tab, rows, delta, n_i, n_w, t_j, t_w, strides, enter, dropped, ev_t, ev_q, ev_k, ev_r, draws,
         lag, max_steps, max_turns):  # fmt: skip
    """Turns of run._Run.loop for one replica (open-loop sends ``enter``, or closed-loop clients' events)
    until the load is served (FINISHED), ``max_turns`` have run (RUNNING), an output buffer needs room
    (GROW_*) or the table is exceeded."""
    n_open, max_seqs, total = enter.size, S[MAX_SEQS], S[TOTAL]
    for _ in range(max_turns):
        if S[ITL_N] + 1 > itl_s.size or S[RUNS_N] + 1 > itl_end.size:
            return GROW_ITL
        if S[GAP_N] + max_seqs + 1 > gaps.size:
            return GROW_GAPS
        if S[HEAP_N] + max_seqs + 1 > hk.size:
            return GROW_HEAP
        S[TURNS] += 1
        if S[TURNS] == CHECK_TURNS:  # run.Watch's step ceiling
            S[TURNS] = 0
            if S[STEPS] > max_steps:
                return STEPS_EXCEEDED
        ptr = S[PTR]
        t_arr = enter[ptr] if ptr < n_open else np.inf
        t_ext = t_arr
        if ev_t is not None:  # (None for an open loop: numba compiles that loop without the clients' code)
            if S[EV_N] and ev_t[0] < t_arr:
                t_ext = ev_t[0]
        busy = S[N_RUN] or S[N_WAIT]
        if not busy and t_ext == np.inf:
            tl_record(F, S, tl, total, True)
            return FINISHED
        if busy and F[CLOCK] < t_ext:
            if ev_t is not None:
                S[N_FIN], S[N_FAIL] = 0, 0
            if S[DL_PTR] < S[PTR] and RF[DEADLINE, S[DL_PTR]] <= F[CLOCK]:  # engine.advance: abandon first
                expire(S, F, R, RF, pf, counts, S[BS], dropped, fails)
            if S[N_RUN] or S[N_WAIT]:
                ok = step(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps,
                          fin, tab, rows, delta, n_i, n_w, t_j, t_w, strides)  # fmt: skip
                if not ok:
                    return TOO_LONG
            if ev_t is not None:
                collect(S, F, RF, fin, fails, ev_t, ev_q, ev_k, ev_r, draws)
        elif t_arr <= t_ext and ptr < n_open:
            S[PTR] = ptr + 1
            if dropped[ptr]:
                S[DONE] += 1
            elif t_arr >= RF[DEADLINE, ptr]:  # run.arrive: its client has already given up
                R[GONE, ptr], R[FAILED, ptr] = 1, 1
                S[DONE] += 1
            else:
                receive(S, F, R, wq, tl, total, ptr, t_arr, lag)
        elif ev_t is not None:
            t, kind, rid = ev_t[0], ev_k[0], ev_r[0]
            ev_pop(ev_t, ev_q, ev_k, ev_r, S)
            if kind == ISSUE:
                issue(S, F, RF, ev_t, ev_q, ev_k, ev_r, t)
                continue
            S[PTR] = rid + 1  # run.arrive (requests enter in the order they were sent)
            if dropped[rid]:
                S[DONE] += 1
                client_done(S, F, ev_t, ev_q, ev_k, ev_r, draws, t)
            elif t >= RF[DEADLINE, rid]:
                R[GONE, rid], R[FAILED, rid] = 1, 1
                S[DONE] += 1
                client_done(S, F, ev_t, ev_q, ev_k, ev_r, draws, RF[SEND, rid] + F[TIMEOUT])
            else:
                receive(S, F, R, wq, tl, total, rid, t, lag)
    return RUNNING
