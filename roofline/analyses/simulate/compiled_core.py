"""The event loop of one replica under open-loop load, compiled (numba): the same steps as the Python engine.

Scope (:func:`~roofline.analyses.simulate.compiled.unsupported` says what is out): one replica,
open-loop sends known ahead (a trace, an open loop, open stages), no client timeout, no block prefix
cache (the hit-rate shortcut is in), no KV offload, no speculative decoding, the built-in
``decode-first`` and ``prefill-first`` policies, preemption by recompute.  Every step is priced on
its own from the tabulated step model (the arrays of a
:class:`~roofline.analyses.simulate.table.StepTable`), so the results equal the Python engine's
step-by-step reference (``SimConfig(stepwise=True)``; tests/test_simulate_compiled.py).

State lives in arrays the caller owns (layout: :mod:`~roofline.analyses.simulate.compiled_parts`), so
a call runs at most ``max_turns`` turns and returns; the caller reports progress, grows a full output
buffer and calls again.  Arrays are passed one by one (a tuple's items would be reference-counted at
every step).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from roofline.analyses.simulate.compiled_parts import (
    BS,
    C_INSYS,
    C_QUEUE,
    C_TOKENS,
    CACHED,
    CHECK_TURNS,
    CLOCK,
    COMP,
    D0,
    DECODED,
    DECODING,
    DONE,
    DSTEP,
    ELIGIBLE,
    FINISH,
    FINISHED,
    FIRST,
    FREE,
    GAP_N,
    GEN,
    GROW_GAPS,
    GROW_HEAP,
    GROW_ITL,
    HEAP_N,
    HIT_RATE,
    INP,
    ITL_N,
    KEY_SPAN,
    KV0,
    KV_SUM,
    LAST_DEC_STEP,
    LAST_T,
    LAST_TOK,
    MAX_SEQS,
    MAX_TOKENS,
    MEASURED,
    MIN_DT,
    N_CH,
    N_DEC,
    N_MEAS,
    N_PREF,
    N_RUN,
    N_WAIT,
    OUT,
    PAIRS,
    POLICY,
    PREEMPTED,
    PREEMPTS,
    PTR,
    RUN_NEW,
    RUNNING,
    RUNS_N,
    STEP_NO,
    STEPS,
    STEPS_EXCEEDED,
    TARGET,
    TOKENS,
    TOO_LONG,
    TOTAL,
    TURNS,
    VER,
    W_HEAD,
    blocks_for,
    heap_pop,
    heap_push,
    mixed_s,
    phase,
    pref_remove,
    run_append,
    run_unlink,
    tl_integrate,
    tl_record,
)  # fmt: skip

jit = nb.njit(cache=True, error_model="numpy", inline="always")


@jit
def join_decode(S, F, R, counts, hk, hv, bs, rid, kv0):
    """engine._join_decode: the request decodes from kv0 cached tokens; its finish step goes on the heap."""
    d = S[DSTEP]
    R[KV0, rid], R[D0, rid], R[DECODING, rid] = kv0, d, 1
    counts[phase(kv0 - d, bs)] += 1
    F[KV_SUM] += kv0
    S[N_DEC] += 1
    S[N_MEAS] += R[MEASURED, rid]
    heap_push(hk, hv, S, (d + R[OUT, rid] - R[GEN, rid]) * KEY_SPAN + rid, R[VER, rid])


@jit
def leave_decode(S, F, R, counts, bs, rid):
    """engine._leave_decode: out of the decode set's sums; returns the KV blocks it held."""
    kv = R[KV0, rid] + (S[DSTEP] - R[D0, rid])
    counts[phase(R[KV0, rid] - R[D0, rid], bs)] -= 1
    F[KV_SUM] -= kv
    S[N_DEC] -= 1
    S[N_MEAS] -= R[MEASURED, rid]
    R[DECODING, rid] = 0
    R[VER, rid] += 1
    return blocks_for(kv, bs)


@jit
def finish(S, R, RF, rid, end, blocks):
    """engine._release + _finish: the request leaves with its last token at ``end``, freeing ``blocks``."""
    S[FREE] += blocks
    run_unlink(R, S, rid)
    RF[FINISH, rid] = end
    S[DONE] += 1


@jit
def preempt_newest(S, F, R, RF, wq, pf, counts, bs, now):
    """lifecycle._preempt_newest by recompute: the newest running request frees its KV, re-queues first."""
    rid = S[RUN_NEW]
    run_unlink(R, S, rid)
    S[PREEMPTS] += 1
    R[PREEMPTED, rid] += 1
    if R[DECODING, rid]:
        ran = S[DSTEP] - R[D0, rid]
        R[COMP, rid] = R[KV0, rid] + ran
        R[GEN, rid] = min(R[GEN, rid] + ran, R[OUT, rid] - 1)
        blocks = leave_decode(S, F, R, counts, bs, rid)
        RF[LAST_TOK, rid] = now
    else:
        blocks = blocks_for(R[COMP, rid], bs)
        pref_remove(pf, S, rid)
    S[FREE] += blocks
    R[COMP, rid] = 0
    R[TARGET, rid] = R[INP, rid] + R[GEN, rid]
    cap = wq.size
    S[W_HEAD] = (S[W_HEAD] - 1 + cap) % cap
    wq[S[W_HEAD]] = rid
    S[N_WAIT] += 1


@jit
def chunk(S, F, R, ch_r, ch_c, rid, c):
    """engine._chunk: c prompt tokens of the request in this step, with their causal pairs."""
    n = S[N_CH]
    ch_r[n], ch_c[n] = rid, c
    S[N_CH] = n + 1
    S[TOKENS] += c
    F[PAIRS] += c * (R[COMP, rid] + (c + 1) / 2)


@jit
def decodes(S, F, R, RF, wq, pf, counts, bs):
    """engine.decodes: every running decode takes a token (preempting the newest for blocks)."""
    while S[N_DEC]:
        need = counts[phase(-S[DSTEP], bs)]
        if need <= S[FREE]:
            S[FREE] -= need
            break
        preempt_newest(S, F, R, RF, wq, pf, counts, bs, F[CLOCK])
    S[DECODED] = S[N_DEC]
    return S[N_DEC]


@jit
def continue_prefills(S, F, R, pf, ch_r, ch_c, bs, budget):
    """engine.continue_prefills: chunks of the partial prefills within ``budget`` tokens."""
    used = 0
    for j in range(S[N_PREF]):
        if budget <= used:
            break
        rid = pf[j]
        comp = R[COMP, rid]
        c = min(R[TARGET, rid] - comp, budget - used)
        held = blocks_for(comp, bs)
        more = blocks_for(comp + c, bs) - held
        if more > S[FREE]:
            c, more = (held + S[FREE]) * bs - comp, S[FREE]
            if c <= 0:
                continue
        S[FREE] -= more
        chunk(S, F, R, ch_r, ch_c, rid, c)
        used += c
    return used


@jit
def admit(S, F, R, wq, pf, ch_r, ch_c, bs, max_seqs, hit_rate, budget):
    """engine.admit: new requests, first come first served, their first chunks within ``budget``."""
    used = 0
    cap = wq.size
    while used < budget and S[N_WAIT] and S[N_RUN] < max_seqs:
        rid = wq[S[W_HEAD]]
        if R[ELIGIBLE, rid] > S[STEP_NO]:
            break
        comp = min(int(hit_rate * R[INP, rid]), R[TARGET, rid] - 1) if hit_rate else 0
        c = min(R[TARGET, rid] - comp, budget - used)
        need = blocks_for(comp + c, bs)
        if need > S[FREE]:
            break
        S[W_HEAD] = (S[W_HEAD] + 1) % cap
        S[N_WAIT] -= 1
        run_append(R, S, rid)
        pf[S[N_PREF]] = rid
        S[N_PREF] += 1
        if R[CACHED, rid] < 0:
            R[CACHED, rid] = comp
        R[COMP, rid] = comp
        S[FREE] -= need
        chunk(S, F, R, ch_r, ch_c, rid, c)
        used += c
    return used


@jit
def compose(S, F, R, RF, wq, pf, ch_r, ch_c, counts, bs, max_seqs, hit_rate, max_tokens, policy):
    """The policy's compose: 0 decode-first (policies/decode_first.py), 1 prefill-first (prefill_first.py)."""
    if policy == 0:
        budget = max_tokens
        if S[N_DEC]:
            budget -= decodes(S, F, R, RF, wq, pf, counts, bs)
        if budget > 0 and S[N_PREF]:
            budget -= continue_prefills(S, F, R, pf, ch_r, ch_c, bs, budget)
        if budget > 0:
            admit(S, F, R, wq, pf, ch_r, ch_c, bs, max_seqs, hit_rate, budget)
    else:
        used = continue_prefills(S, F, R, pf, ch_r, ch_c, bs, max_tokens) if S[N_PREF] else 0
        if used < max_tokens:
            used += admit(S, F, R, wq, pf, ch_r, ch_c, bs, max_seqs, hit_rate, max_tokens - used)
        if not used and S[N_DEC]:
            decodes(S, F, R, RF, wq, pf, counts, bs)


@jit
def prefill_done(S, F, R, RF, counts, hk, hv, gaps, bs, rid, end):
    """engine._prefill_done: the chunk that completes a prefill samples the next token."""
    if R[GEN, rid] == 0:
        RF[FIRST, rid] = end
    elif R[MEASURED, rid]:
        gaps[S[GAP_N]] = end - RF[LAST_TOK, rid]
        S[GAP_N] += 1
    R[GEN, rid] += 1
    if R[GEN, rid] >= R[OUT, rid]:
        finish(S, R, RF, rid, end, blocks_for(R[COMP, rid], bs))
    else:
        join_decode(S, F, R, counts, hk, hv, bs, rid, R[COMP, rid])


@jit
def pop_finished(S, F, R, RF, counts, hk, hv, bs, end):
    """engine._pop_finished: decodes whose last token came with this step leave."""
    while S[HEAP_N] and hk[0] // KEY_SPAN <= S[DSTEP]:
        rid, ver = hk[0] % KEY_SPAN, hv[0]
        heap_pop(hk, hv, S)
        if ver == R[VER, rid]:
            blocks = leave_decode(S, F, R, counts, bs, rid)
            R[GEN, rid] = R[OUT, rid]
            finish(S, R, RF, rid, end, blocks)


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
def step(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps,
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
                R[ELIGIBLE, wq[S[W_HEAD]]] = S[STEP_NO]
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
            prefill_done(S, F, R, RF, counts, hk, hv, gaps, bs, rid, end)
    if n_dec and hk[0] // KEY_SPAN <= S[DSTEP]:
        pop_finished(S, F, R, RF, counts, hk, hv, bs, end)
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
    wq[(S[W_HEAD] + S[N_WAIT]) % wq.size] = rid
    S[N_WAIT] += 1


@nb.njit(cache=True, error_model="numpy")
def loop(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps,
         tab, rows, delta, n_i, n_w, t_j, t_w, strides, enter, dropped, lag, max_steps, max_turns):  # fmt: skip
    """Turns of run._Run.loop for one replica and open-loop sends until the load is served (FINISHED),
    ``max_turns`` have run (RUNNING), an output buffer needs room (GROW_*) or the table is exceeded."""
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
        busy = S[N_RUN] or S[N_WAIT]
        if not busy and t_arr == np.inf:
            tl_record(F, S, tl, total, True)
            return FINISHED
        if busy and F[CLOCK] < t_arr:
            ok = step(S, F, R, RF, wq, pf, ch_r, ch_c, counts, hk, hv, tl, itl_s, itl_end, itl_w, itl_k, gaps,
                      tab, rows, delta, n_i, n_w, t_j, t_w, strides)  # fmt: skip
            if not ok:
                return TOO_LONG
        else:
            S[PTR] = ptr + 1
            if dropped[ptr]:
                S[DONE] += 1
            else:
                receive(S, F, R, wq, tl, total, ptr, t_arr, lag)
    return RUNNING
