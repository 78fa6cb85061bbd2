"""The step model tabulated for the simulator: a few vectorised ``step_terms`` calls, then scalar lookups.

A simulated step is (n decodes over kv cached tokens) + (one prefill chunk of T tokens after c
cached ones).  Its time is read from two tables of the same step model, never restated:

* ``base[n][x]``: the decode-only step, for every n in 0..max_seqs (exact in n), at an even grid
  of mean contexts x (linear in between: exact for the spec sheet, whose step is affine in
  context), built lazily in blocks of :data:`N_BLOCK` sequence counts;
* ``delta[n_g, T_g, c_g(, x_g)]``: what the chunk adds to that step, on a grid that is dense
  where the kernels have steps (T = 0..16, every 16 tokens to 1024, then coarser, plus the
  load's own prompt lengths), multilinear in between.  The context axis is dropped where the
  chunk's increment does not depend on it (GPUs, whose collectives do not overlap local work).

So a step costs one row lookup and an 8- or 16-corner interpolation in plain Python.  Against
``step_terms`` on random shapes the mean relative error is below 0.1 % (``benchmarks/
bench_simulate.py --table``); decode-only steps and a lone prompt of a tabulated length are exact
in n and T.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.errors import RooflineError

#: (decodes, mean decode context, chunk tokens, chunk cached offset) -> seconds (numpy broadcasting).
PriceFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
#: (decodes, mean context, chunk tokens, chunk cached offset, device seconds) -> the step with the engine's host time.
PostFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
#: Mean-context grid points of a decode row.
CONTEXT_POINTS = 257
#: Chunk cached-offset grid points, and decode-context points of the increment when it depends on them.
CACHED_POINTS = 9
DELTA_CONTEXT_POINTS = 5
#: Sequence counts priced per lazy block of decode rows.
N_BLOCK = 64
#: Most extra chunk lengths taken from the load (lone prompts of these lengths are exact).
MAX_EXTRA_TOKENS = 256


def token_grid(max_tokens: int, extra: Sequence[int] = ()) -> np.ndarray:
    """Chunk lengths tabulated: 0..16, every 16 to 1024, every 64 to 4096, every 256 beyond, the budget,
    and up to :data:`MAX_EXTRA_TOKENS` of the load's own lengths (within the budget)."""
    g = set(range(0, 17)) | set(range(16, min(max_tokens, 1024) + 1, 16))
    g |= set(range(1024, min(max_tokens, 4096) + 1, 64)) | set(range(4096, max_tokens + 1, 256))
    g.add(max_tokens)
    own = sorted({int(t) for t in extra if 0 < t <= max_tokens} - g)
    if len(own) > MAX_EXTRA_TOKENS:
        own = [own[i] for i in np.linspace(0, len(own) - 1, MAX_EXTRA_TOKENS).astype(int)]
    return np.array(sorted(g | set(own)), dtype=float)


def seq_grid(max_seqs: int) -> np.ndarray:
    """Decode counts of the increment table: 0..8, every 8 to 128, then 16 geometric steps to max_seqs."""
    g = set(range(0, min(max_seqs, 8) + 1)) | set(range(8, min(max_seqs, 128) + 1, 8))
    if max_seqs > 128:
        g |= {int(v) for v in np.rint(np.geomspace(128, max_seqs, 16))}
    g.add(max_seqs)
    return np.array(sorted(g), dtype=float)


def _cell(grid: Sequence[float], x: float) -> tuple[int, float]:
    """(i, w): x lies in [grid[i], grid[i+1]] at fraction w (clamped to the last cell)."""
    i = bisect_right(grid, x) - 1
    last = len(grid) - 2
    if i > last:
        i = last
    elif i < 0:
        i = 0
    lo = grid[i]
    return i, (x - lo) / (grid[i + 1] - lo)


def _corner(
    d: list[float], a: int, s0: int, s1: int, s2: int, wn: float, wc: float, vc: float, wt: float, vt: float
) -> float:
    """The n-, T- and c-interpolated increment at flat index ``a`` (weights w and their complements v)."""
    b = a + s0
    lo_n = (d[a] * vc + d[a + s2] * wc) * vt + (d[a + s1] * vc + d[a + s1 + s2] * wc) * wt
    hi_n = (d[b] * vc + d[b + s2] * wc) * vt + (d[b + s1] * vc + d[b + s1 + s2] * wc) * wt
    return lo_n + wn * (hi_n - lo_n)


class KernelGrids:
    """The step model's times on the table's grids before any engine host time (shared by tables that
    differ only in their engine terms: :meth:`StepTable.with_post`)."""

    def __init__(self, price: PriceFn, max_seqs: int, max_tokens: int, max_context: float, lens: Sequence[int]):
        self.price = price
        self.ctx = np.linspace(0.0, max_context, CONTEXT_POINTS)
        self.ng, self.tg = seq_grid(max_seqs), token_grid(max_tokens, lens)
        self.cg = np.linspace(0.0, max_context, CACHED_POINTS)
        self.xg = np.linspace(0.0, max_context, DELTA_CONTEXT_POINTS)
        n4, t4 = self.ng[:, None, None, None], self.tg[None, :, None, None]
        c4, x4 = self.cg[None, None, :, None], self.xg[None, None, None]
        zero = np.zeros(1)
        self.full = np.broadcast_to(price(n4, x4, t4, c4), (self.ng.size, self.tg.size, self.cg.size, self.xg.size))
        self.plain = np.broadcast_to(
            price(self.ng[:, None], self.xg[None, :], zero, zero), (self.ng.size, self.xg.size)
        )
        self.blocks: dict[int, np.ndarray] = {}

    def block(self, lo: int, hi: int) -> np.ndarray:
        """Decode-only rows for n in [lo, hi) over the context grid (priced once)."""
        rows = self.blocks.get(lo)
        if rows is None:
            ns = np.arange(lo, hi, dtype=float)
            zero = np.zeros(1)
            rows = np.broadcast_to(self.price(ns[:, None], self.ctx[None, :], zero, zero), (ns.size, self.ctx.size))
            self.blocks[lo] = rows
        return rows


class StepTable:
    """Step times of one deployment for one scheduler shape (see the module docstring).

    ``price`` gives device times; ``post(n, ctx, tokens, cached, device)`` adds the engine's host time
    (None: ``price`` already includes it); ``base`` replaces the decode-only rows (speculative rounds).
    """

    def __init__(
        self,
        price: PriceFn,
        max_seqs: int,
        max_tokens: int,
        max_context: float,
        prompt_lens: Sequence[int] = (),
        base: PriceFn | None = None,
        post: PostFn | None = None,
        kernel: KernelGrids | None = None,
    ) -> None:
        self.max_seqs, self.max_tokens = int(max_seqs), int(max_tokens)
        self.max_context = float(max(max_context, 1.0))
        self.kernel = kernel or KernelGrids(price, self.max_seqs, self.max_tokens, self.max_context, prompt_lens)
        self.base, self.post = base, post
        self.ctx = self.kernel.ctx
        self.inv_dx = (CONTEXT_POINTS - 1) / self.max_context
        self.rows: list[list[float] | None] = [None] * (self.max_seqs + 1)
        self.arrays: dict[int, np.ndarray] = {}
        self._build_delta()

    def with_post(self, post: PostFn | None) -> StepTable:
        """The same table with other engine host time (the kernel grids are shared, not priced again)."""
        return StepTable(
            self.kernel.price,
            self.max_seqs,
            self.max_tokens,
            self.max_context,
            base=self.base,
            post=post,
            kernel=self.kernel,
        )

    # ------------------------------------------------------------------ building
    def _build_delta(self) -> None:
        k = self.kernel
        ng, tg, cg, xg = k.ng, k.tg, k.cg, k.xg
        full, plain = k.full, k.plain
        if self.post is not None:
            n4, t4 = ng[:, None, None, None], tg[None, :, None, None]
            full = np.broadcast_to(self.post(n4, xg[None, None, None], t4, cg[None, None, :, None], full), full.shape)
            zero = np.zeros(1)
            plain = np.broadcast_to(self.post(ng[:, None], xg[None, :], zero, zero, plain), plain.shape)
        delta = full - plain[:, None, None, :]
        scale = max(float(np.max(np.abs(full))), 1e-300)
        self.delta_has_ctx = bool(np.max(np.abs(delta - delta[..., :1])) > 1e-12 * scale)
        if not self.delta_has_ctx:
            delta = delta[..., 0]
        self.ng, self.tg, self.cg, self.xg = ng.tolist(), tg.tolist(), cg.tolist(), xg.tolist()
        self.inv_dc = (CACHED_POINTS - 1) / self.max_context
        self.inv_dxg = (DELTA_CONTEXT_POINTS - 1) / self.max_context
        self.delta_array = np.ascontiguousarray(delta)
        self.delta = self.delta_array.reshape(-1).tolist()
        self.strides = [s // 8 for s in self.delta_array.strides]
        self.s012 = tuple(self.strides[:3])
        # each decode count's cell on the n grid
        self.n_cell = [_cell(self.ng, float(n)) for n in range(self.max_seqs + 1)]
        self.t_cell = [_cell(self.tg, t) for t in range(self.max_tokens + 1)]  # each chunk length's cell

    def _block(self, n: int) -> list[float]:
        """Price the decode rows of n's block (one vectorised call) and return n's row."""
        if not 0 <= n <= self.max_seqs:
            raise RooflineError(f"simulated step has {n} decodes, more than the table's {self.max_seqs}")
        lo = (n // N_BLOCK) * N_BLOCK
        hi = min(lo + N_BLOCK, self.max_seqs + 1)
        ns = np.arange(lo, hi, dtype=float)
        zero = np.zeros(1)
        if self.base is not None:
            block = np.broadcast_to(self.base(ns[:, None], self.ctx[None, :], zero, zero), (ns.size, self.ctx.size))
        else:
            block = self.kernel.block(lo, hi)
            if self.post is not None:
                block = np.broadcast_to(self.post(ns[:, None], self.ctx[None, :], zero, zero, block), block.shape)
        for i in range(ns.size):
            self.arrays[lo + i] = np.array(block[i])
            self.rows[lo + i] = block[i].tolist()
        return self.rows[n]  # type: ignore[return-value]

    # ------------------------------------------------------------------ scalar lookups
    def decode_s(self, n: int, kv: float) -> float:
        """One decode-only step of n sequences over kv cached tokens in all."""
        return self.mixed_s(n, kv, 0, 0.0)

    def mixed_s(self, n: int, kv: float, tokens: int, pairs: float) -> float:
        """A step of n decodes (kv cached tokens in all) and ``tokens`` prefill tokens with ``pairs`` causal
        pairs (one chunk after c = pairs/T − (T+1)/2 cached tokens)."""
        row = self.rows[n] or self._block(n)
        if n:  # the decode-only step
            x = kv / n * self.inv_dx
            i = int(x)
            if i >= CONTEXT_POINTS - 1:
                if x > CONTEXT_POINTS - 1 + 1e-9:
                    self._too_long(kv / n)
                i = CONTEXT_POINTS - 2
            lo = row[i]
            base = lo + (x - i) * (row[i + 1] - lo)
        else:
            base = row[0]
        if not tokens:
            return base
        c = pairs / tokens - (tokens + 1) / 2
        if c > self.max_context * (1 + 1e-9):
            self._too_long(c)
        i, wn = self.n_cell[n]
        j, wt = self.t_cell[tokens] if 0 < tokens <= self.max_tokens else _cell(self.tg, tokens)
        x = (c if c > 0 else 0.0) * self.inv_dc
        k = int(x)
        if k >= CACHED_POINTS - 1:
            k = CACHED_POINTS - 2
        wc = x - k
        s0, s1, s2 = self.s012
        d = self.delta
        vc, vt = 1 - wc, 1 - wt
        a = i * s0 + j * s1 + k * s2
        if self.delta_has_ctx:
            y = (kv / n if n else 0.0) * self.inv_dxg
            m = min(int(y), DELTA_CONTEXT_POINTS - 2)
            wx = y - m
            a += m
            lo_x = _corner(d, a, s0, s1, s2, wn, wc, vc, wt, vt)
            hi_x = _corner(d, a + 1, s0, s1, s2, wn, wc, vc, wt, vt)
            # summed from 0.0 corner by corner, the order the reference step's sum uses (bit-identical results)
            return base + ((0.0 + (1 - wx) * lo_x) + wx * hi_x)
        return base + (0.0 + _corner(d, a, s0, s1, s2, wn, wc, vc, wt, vt))

    def decode_row(self, n: int) -> tuple[list[float], float, int]:
        """(n's decode row, grid points per context token, last cell index) for inline lookups."""
        return self.rows[n] or self._block(n), self.inv_dx, CONTEXT_POINTS - 1

    def decode_run(self, n: int, kv0: float, k: int) -> list[float]:
        """k consecutive decode-only steps of n sequences from kv0 cached tokens (each step adds n)."""
        if k <= 8:
            return [self.decode_s(n, kv0 + n * i) for i in range(k)]
        row = self.arrays.get(n)
        if row is None:
            self._block(n)
            row = self.arrays[n]
        ctx = kv0 / n + np.arange(k, dtype=float)
        if ctx[-1] > self.max_context * (1 + 1e-9):
            self._too_long(float(ctx[-1]))
        return np.interp(ctx, self.ctx, row).tolist()

    def _too_long(self, context: float) -> None:
        raise RooflineError(f"simulated context {context:.0f} exceeds the tabulated {self.max_context:.0f}")

    # ------------------------------------------------------------------ the StepCost protocol, vectorised
    def step_time_s(
        self,
        decode_seqs: ArrayLike,
        decode_kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike,
        prefill_attention_pairs: ArrayLike,
    ) -> np.ndarray:
        """The scalar lookups over broadcast arrays (a loop: for tests and small calls)."""
        n, kv, t, p = np.broadcast_arrays(
            *(
                np.asarray(v, dtype=float)
                for v in (decode_seqs, decode_kv_tokens, prefill_tokens, prefill_attention_pairs)
            )
        )
        out = [self.mixed_s(int(a), b, int(c), d) for a, b, c, d in zip(n.flat, kv.flat, t.flat, p.flat, strict=True)]
        return np.asarray(out, dtype=float).reshape(n.shape)
