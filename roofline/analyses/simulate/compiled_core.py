"""The compiled scheduler's primitives (numba): the Python engine's, restated over arrays, one for one.

Scope (:func:`~roofline.analyses.simulate.compiled.unsupported` says what is out): one replica,
open-loop sends known ahead (a trace, an open loop, open stages) or closed-loop clients, client
timeouts, the hit-rate shortcut; no block prefix cache, no KV offload, no speculative decoding; the built-in
``decode-first`` and ``prefill-first`` policies, preemption by recompute.  Every step is priced on
its own from the tabulated step model (the arrays of a
:class:`~roofline.analyses.simulate.table.StepTable`), so the results equal the Python engine's
step-by-step reference (``SimConfig(stepwise=True)``; tests/test_simulate_compiled.py).

State lives in arrays the caller owns (layout: :mod:`~roofline.analyses.simulate.compiled_parts`);
the turn and the step are :mod:`~roofline.analyses.simulate.compiled_loop`.  Arrays are passed one by
one (a tuple's items would be reference-counted at every use); the step is inlined into the loop, the
routines here are called (inlining them too saves a fifth of a run and doubles the first compile).
"""

from __future__ import annotations

import numba as nb

from roofline.analyses.simulate.compiled_parts import (
    CACHED,
    CLOCK,
    COMP,
    D0,
    DEADLINE,
    DECODED,
    DECODING,
    DL_PTR,
    DONE,
    DSTEP,
    ELIGIBLE,
    FAILED,
    FINISH,
    FIRST,
    FREE,
    GAP_N,
    GEN,
    GONE,
    HEAP_N,
    IN_RUN,
    INP,
    KEY_SPAN,
    KV0,
    KV_SUM,
    LAST_TOK,
    MEASURED,
    N_CH,
    N_DEC,
    N_FAIL,
    N_FIN,
    N_MEAS,
    N_PREF,
    N_RUN,
    N_WAIT,
    OUT,
    PAIRS,
    PREEMPTED,
    PREEMPTS,
    PTR,
    RUN_NEW,
    STEP_NO,
    TARGET,
    TOKENS,
    VER,
    W_HEAD,
    W_LEN,
    blocks_for,
    heap_pop,
    heap_push,
    phase,
    pop_head,
    pref_remove,
    run_append,
    run_unlink,
)  # fmt: skip

jit = nb.njit(cache=True, error_model="numpy")


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
def finish(S, R, RF, fin, rid, end, blocks):
    """engine._release + _finish: the request leaves with its last token at ``end``, freeing ``blocks``
    (``fin``: this step's finished requests, in order; None for an open loop, which needs no list)."""
    if fin is not None:
        fin[S[N_FIN]] = rid
        S[N_FIN] += 1
    S[FREE] += blocks
    run_unlink(R, S, rid)
    RF[FINISH, rid] = end
    R[GONE, rid] = 1
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
    S[W_LEN] += 1
    S[N_WAIT] += 1


@jit
def expire(S, F, R, RF, pf, counts, bs, dropped, fails):
    """lifecycle._expire: requests whose client gave up by now leave, freeing their KV.  Deadlines follow the
    send order (a fixed timeout after sorted sends), so the due ones are the next received in that order."""
    while S[DL_PTR] < S[PTR] and RF[DEADLINE, S[DL_PTR]] <= F[CLOCK]:
        rid = S[DL_PTR]
        S[DL_PTR] += 1
        if dropped[rid] or R[GONE, rid]:
            continue
        R[GONE, rid], R[FAILED, rid] = 1, 1
        if fails is not None:
            fails[S[N_FAIL]] = rid
            S[N_FAIL] += 1
        if R[IN_RUN, rid]:
            run_unlink(R, S, rid)
            if R[DECODING, rid]:
                blocks = leave_decode(S, F, R, counts, bs, rid)
            else:
                blocks = blocks_for(R[COMP, rid], bs)
                pref_remove(pf, S, rid)
            S[FREE] += blocks
        else:
            S[N_WAIT] -= 1
        S[DONE] += 1


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
    while used < budget and S[N_WAIT] and S[N_RUN] < max_seqs:
        rid = wq[S[W_HEAD]]
        if R[GONE, rid]:
            pop_head(S, wq)
            continue
        if R[ELIGIBLE, rid] > S[STEP_NO]:
            break
        comp = min(int(hit_rate * R[INP, rid]), R[TARGET, rid] - 1) if hit_rate else 0
        c = min(R[TARGET, rid] - comp, budget - used)
        need = blocks_for(comp + c, bs)
        if need > S[FREE]:
            break
        pop_head(S, wq)
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
def prefill_done(S, F, R, RF, counts, hk, hv, gaps, fin, bs, rid, end):
    """engine._prefill_done: the chunk that completes a prefill samples the next token."""
    if R[GEN, rid] == 0:
        RF[FIRST, rid] = end
    elif R[MEASURED, rid]:
        gaps[S[GAP_N]] = end - RF[LAST_TOK, rid]
        S[GAP_N] += 1
    R[GEN, rid] += 1
    if R[GEN, rid] >= R[OUT, rid]:
        finish(S, R, RF, fin, rid, end, blocks_for(R[COMP, rid], bs))
    else:
        join_decode(S, F, R, counts, hk, hv, bs, rid, R[COMP, rid])


@jit
def pop_finished(S, F, R, RF, counts, hk, hv, fin, bs, end):
    """engine._pop_finished: decodes whose last token came with this step leave."""
    while S[HEAP_N] and hk[0] // KEY_SPAN <= S[DSTEP]:
        rid, ver = hk[0] % KEY_SPAN, hv[0]
        heap_pop(hk, hv, S)
        if ver == R[VER, rid]:
            blocks = leave_decode(S, F, R, counts, bs, rid)
            R[GEN, rid] = R[OUT, rid]
            finish(S, R, RF, fin, rid, end, blocks)
