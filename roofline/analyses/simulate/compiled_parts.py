"""The compiled event loop's layout and leaf routines: state indices, the tabulated step price, the
timeline's records, the running list, the waiting ring and the finish heap (numba; see compiled_core).

Scalars are kept in ``S`` (integers) and ``F`` (floats) at the indices below; per-request integers in
the rows of ``R``, floats in ``RF``.  Each routine restates one of the Python engine's, named in its
docstring, step for step (the same float operations in the same order).
"""

from __future__ import annotations

import numba as nb

from roofline.analyses.simulate import blocks, table
from roofline.analyses.simulate.table import CACHED_POINTS, CONTEXT_POINTS, DELTA_CONTEXT_POINTS

# ---- integer scalars (S)
STEP_NO, DSTEP, FREE, N_DEC, N_MEAS, N_WAIT, W_HEAD, N_RUN, RUN_OLD, RUN_NEW = range(10)
N_PREF, HEAP_N, STEPS, PREEMPTS, PTR, DONE, ITL_N, RUNS_N, GAP_N, TL_N = range(10, 20)
LAST_DEC_STEP, N_CH, TOKENS, DECODED, STATUS, TURNS = range(20, 26)
BS, MAX_SEQS, MAX_TOKENS, POLICY, TOTAL = range(26, 31)  # the scheduler's settings (constant)
W_LEN, DL_PTR = 31, 32  # entries of the waiting ring (abandoned ones included); next request whose deadline is due
SENT, LIMIT, EV_N, SEQ, ACTIVE, CLIENTS, THINK_I, N_FIN, N_FAIL = range(33, 42)  # closed-loop clients
N_INT = 42
# ---- float scalars (F)
CLOCK, KV_SUM, C_BATCH, C_KV, C_INSYS, C_QUEUE, C_TOKENS, MIN_DT, LAST_T, PAIRS, ERR_VALUE, HIT_RATE = range(12)
TIMEOUT, FRONT_IN, FRONT_OUT, THINK = range(12, 16)  # client timeout (inf: none), request path, mean think time
N_FLOAT = 16
# ---- per-request integer rows (R) and float rows (RF)
INP, OUT, COMP, TARGET, GEN, KV0, D0, VER, CACHED, PREEMPTED, ELIGIBLE, MEASURED, DECODING, PREV, NEXT = range(15)
GONE, IN_RUN, FAILED = 15, 16, 17  # finished or abandoned; in the running list; abandoned (its client gave up)
N_ROWS = 18
FIRST, LAST_TOK, FINISH, DEADLINE, SEND = range(5)
N_FROWS = 5
# ---- closed-loop client events (run._ISSUE, run._ENTER)
ISSUE, ENTER = 0, 1
# ---- status codes a call returns
RUNNING, FINISHED, GROW_ITL, GROW_GAPS, TOO_LONG, STEPS_EXCEEDED, GROW_HEAP = range(7)
#: Heap keys: decode step x KEY_SPAN + request id (ids stay below it: at most MAX_REQUESTS).
KEY_SPAN = 1 << 20
#: Timeline columns and the most records kept (as records.Timeline).
TL_COLS = 9
MAX_RECORDS = 1 << 13
CHECK_TURNS = 4096


#: The Python engine's own block count and step-table corner, compiled (one formula each, two runtimes).
blocks_for = nb.njit(cache=True, error_model="numpy")(blocks.blocks_for)
corner = nb.njit(cache=True, error_model="numpy")(table._corner)


@nb.njit(cache=True, error_model="numpy")
def phase(x, bs):
    """x mod bs in [0, bs) (Python's modulo, whatever the sign)."""
    return ((x % bs) + bs) % bs


@nb.njit(cache=True, error_model="numpy")
def mixed_s(tab, rows, delta, n_i, n_w, t_j, t_w, strides, n, kv, tokens, pairs, F, S):
    """StepTable.mixed_s on the table's arrays; -1.0 (and S[STATUS] = TOO_LONG) beyond the tabulated context.
    ``tab``: inv_dx, inv_dc, inv_dxg, max_context, has_ctx."""
    inv_dx, inv_dc, inv_dxg, max_context, has_ctx = tab[0], tab[1], tab[2], tab[3], tab[4]
    last = CONTEXT_POINTS - 1
    if n:
        x = kv / n * inv_dx
        i = int(x)
        if i >= last:
            if x > last + 1e-9:
                F[ERR_VALUE], S[STATUS] = kv / n, TOO_LONG
                return -1.0
            i = last - 1
        lo = rows[n, i]
        base = lo + (x - i) * (rows[n, i + 1] - lo)
    else:
        base = rows[n, 0]
    if not tokens:
        return base
    c = pairs / tokens - (tokens + 1) / 2
    if c > max_context * (1 + 1e-9):
        F[ERR_VALUE], S[STATUS] = c, TOO_LONG
        return -1.0
    i, wn = n_i[n], n_w[n]
    j, wt = t_j[tokens], t_w[tokens]
    x = (c if c > 0 else 0.0) * inv_dc
    k = int(x)
    if k >= CACHED_POINTS - 1:
        k = CACHED_POINTS - 2
    wc = x - k
    s0, s1, s2 = strides[0], strides[1], strides[2]
    vc, vt = 1 - wc, 1 - wt
    a = i * s0 + j * s1 + k * s2
    if has_ctx:
        y = (kv / n if n else 0.0) * inv_dxg
        m = min(int(y), DELTA_CONTEXT_POINTS - 2)
        wx = y - m
        a += m
        lo_x = corner(delta, a, s0, s1, s2, wn, wc, vc, wt, vt)
        hi_x = corner(delta, a + 1, s0, s1, s2, wn, wc, vc, wt, vt)
        return base + ((0.0 + (1 - wx) * lo_x) + wx * hi_x)
    return base + (0.0 + corner(delta, a, s0, s1, s2, wn, wc, vc, wt, vt))


# ------------------------------------------------------------------ the timeline (records.Timeline)
@nb.njit(cache=True, error_model="numpy")
def tl_integrate(F, S, dt, total):
    running, waiting = S[N_RUN], S[N_WAIT]
    F[C_BATCH] += running * dt
    F[C_KV] += dt * (total - S[FREE]) / total
    F[C_INSYS] += (running + waiting) * dt
    F[C_QUEUE] += waiting * dt


@nb.njit(cache=True, error_model="numpy")
def tl_record(F, S, tl, total, force):
    """Append the state at the clock (unless closer than MIN_DT to the last record); halve when full."""
    if not force and F[CLOCK] - F[LAST_T] < F[MIN_DT]:
        return
    n = S[TL_N]
    F[LAST_T] = F[CLOCK]
    tl[0, n], tl[1, n], tl[2, n], tl[3, n] = F[CLOCK], F[C_BATCH], F[C_KV], F[C_INSYS]
    tl[4, n], tl[5, n], tl[6, n], tl[7, n] = F[C_QUEUE], F[C_TOKENS], S[N_RUN], S[N_WAIT]
    tl[8, n] = (total - S[FREE]) / total
    n += 1
    if n > MAX_RECORDS:  # keep every other record (and the last), space later ones twice as far
        keep_last = (n - 1) % 2 != 0
        m = (n + 1) // 2
        for c in range(TL_COLS):
            last = tl[c, n - 1]
            for j in range(m):
                tl[c, j] = tl[c, 2 * j]
            if keep_last:
                tl[c, m] = last
        n = m + 1 if keep_last else m
        F[MIN_DT] = max(2 * F[MIN_DT], (tl[0, n - 1] - tl[0, 0]) / MAX_RECORDS)
    S[TL_N] = n


# ------------------------------------------------------------------ queues
@nb.njit(cache=True, error_model="numpy")
def run_unlink(R, S, rid):
    p, q = R[PREV, rid], R[NEXT, rid]
    if p >= 0:
        R[NEXT, p] = q
    else:
        S[RUN_OLD] = q
    if q >= 0:
        R[PREV, q] = p
    else:
        S[RUN_NEW] = p
    S[N_RUN] -= 1
    R[IN_RUN, rid] = 0


@nb.njit(cache=True, error_model="numpy")
def run_append(R, S, rid):
    last = S[RUN_NEW]
    R[PREV, rid], R[NEXT, rid] = last, -1
    if last >= 0:
        R[NEXT, last] = rid
    else:
        S[RUN_OLD] = rid
    S[RUN_NEW] = rid
    S[N_RUN] += 1
    R[IN_RUN, rid] = 1


@nb.njit(cache=True, error_model="numpy")
def head(R, S, wq):
    """The first live request of the waiting ring (abandoned ones dropped from the front: engine._head)."""
    cap = wq.size
    while R[GONE, wq[S[W_HEAD]]]:
        S[W_HEAD] = (S[W_HEAD] + 1) % cap
        S[W_LEN] -= 1
    return wq[S[W_HEAD]]


@nb.njit(cache=True, error_model="numpy")
def pop_head(S, wq):
    S[W_HEAD] = (S[W_HEAD] + 1) % wq.size
    S[W_LEN] -= 1


@nb.njit(cache=True, error_model="numpy")
def pref_remove(pf, S, rid):
    n = S[N_PREF]
    j = 0
    while pf[j] != rid:
        j += 1
    for k in range(j, n - 1):
        pf[k] = pf[k + 1]
    S[N_PREF] = n - 1


@nb.njit(cache=True, error_model="numpy")
def heap_push(hk, hv, S, key, ver):
    n = S[HEAP_N]
    hk[n], hv[n] = key, ver
    while n:
        p = (n - 1) // 2
        if hk[p] <= hk[n]:
            break
        hk[p], hk[n] = hk[n], hk[p]
        hv[p], hv[n] = hv[n], hv[p]
        n = p
    S[HEAP_N] += 1


@nb.njit(cache=True, error_model="numpy")
def heap_pop(hk, hv, S):
    n = S[HEAP_N] - 1
    hk[0], hv[0] = hk[n], hv[n]
    S[HEAP_N] = n
    i = 0
    while True:
        a, b, s = 2 * i + 1, 2 * i + 2, i
        if a < n and hk[a] < hk[s]:
            s = a
        if b < n and hk[b] < hk[s]:
            s = b
        if s == i:
            return
        hk[s], hk[i] = hk[i], hk[s]
        hv[s], hv[i] = hv[i], hv[s]
        i = s


@nb.njit(cache=True, error_model="numpy")
def ev_before(ev_t, ev_q, a, b):
    """Event a comes before event b: earlier, or as early and pushed first."""
    return ev_t[a] < ev_t[b] or (ev_t[a] == ev_t[b] and ev_q[a] < ev_q[b])


@nb.njit(cache=True, error_model="numpy")
def ev_swap(ev_t, ev_q, ev_k, ev_r, a, b):
    ev_t[a], ev_t[b] = ev_t[b], ev_t[a]
    ev_q[a], ev_q[b] = ev_q[b], ev_q[a]
    ev_k[a], ev_k[b] = ev_k[b], ev_k[a]
    ev_r[a], ev_r[b] = ev_r[b], ev_r[a]


@nb.njit(cache=True, error_model="numpy")
def ev_push(ev_t, ev_q, ev_k, ev_r, S, t, kind, rid):
    """run.push: an event at t (ties: in push order)."""
    S[SEQ] += 1
    n = S[EV_N]
    ev_t[n], ev_q[n], ev_k[n], ev_r[n] = t, S[SEQ], kind, rid
    while n:
        p = (n - 1) // 2
        if ev_before(ev_t, ev_q, p, n):
            break
        ev_swap(ev_t, ev_q, ev_k, ev_r, p, n)
        n = p
    S[EV_N] += 1


@nb.njit(cache=True, error_model="numpy")
def ev_pop(ev_t, ev_q, ev_k, ev_r, S):
    """Remove the earliest event (read it from index 0 first)."""
    n = S[EV_N] - 1
    ev_t[0], ev_q[0], ev_k[0], ev_r[0] = ev_t[n], ev_q[n], ev_k[n], ev_r[n]
    S[EV_N] = n
    i = 0
    while True:
        a, b, m = 2 * i + 1, 2 * i + 2, i
        if a < n and ev_before(ev_t, ev_q, a, m):
            m = a
        if b < n and ev_before(ev_t, ev_q, b, m):
            m = b
        if m == i:
            return
        ev_swap(ev_t, ev_q, ev_k, ev_r, m, i)
        i = m
