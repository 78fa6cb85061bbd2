"""The cheapest mix of chip types: traffic split by length bucket, each chip type with its own shape.

The request lengths are cut into buckets (each point of the distribution, or powers-of-two bins of the
input length when there are many).  Every candidate shape is evaluated for every bucket alone
(:mod:`roofline.analyses.plan.shapes`): λ[s, b] is the rate one replica of shape s carries of bucket b
within the SLOs.  A mixed-integer program (:func:`scipy.optimize.milp`, HiGHS) then picks, for each chip
type, at most one shape and the buckets it serves, each bucket served by exactly one chip type:

    minimise   Σ_s n_s · chips_s · price_s
    subject to Σ_s y[s,b] = 1 (every bucket served),  y[s,b] ≤ z_s,  Σ_{s of chip h} z_s ≤ 1,
               n_s ≥ Σ_b q_b / λ[s,b] · y[s,b] + spare_s · z_s,     y, z binary, n integer ≥ 0,

a bucket's load on a replica being its rate over what the replica carries of it alone (loads add).  The
plan's TTFT target is a mean over requests, so a bucket whose own prefill is longer than the target
counts by its other limits (concurrency, TPOT).  Each chip type's share is then planned exactly as a
steady plan of its own buckets (their mixture's queueing and mean TTFT, the best shape for it), and
the mix is compared with the best single chip type serving all the traffic (the steady plan): when
no mix is cheaper, the answer is that single type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from roofline.analyses.lengths import LengthDistribution, from_points
from roofline.analyses.plan.capacity import PlanCandidate, PlanConfig, check_plan_inputs, plan_with, rank_at_rate
from roofline.analyses.plan.queueing import cost_per_million_output_tokens
from roofline.analyses.plan.shapes import ShapeTable, candidate_shapes
from roofline.analyses.plan.spares import check_spares_below, node_size, replicas_lost
from roofline.core.errors import OptionError, shown
from roofline.specs import HardwareSpec, ModelSpec

#: Most length buckets a mix splits the traffic into.
MAX_BUCKETS = 8
#: Shapes per (chip type, bucket) the program considers: the cheapest per unit of that bucket's load.
SHAPES_PER_BUCKET = 6


@dataclass(frozen=True)
class Bucket:
    """A share of the traffic by length: its points, its rate, a name for tables."""

    name: str
    lengths: LengthDistribution
    qps: float


@dataclass(frozen=True)
class MixPart:
    """One chip type's share: the buckets it serves, their rate, and its steady plan."""

    hardware: str
    buckets: list[str]
    qps: float
    deployment: PlanCandidate


@dataclass(frozen=True)
class MixPlan:
    """The cheapest mix, the best single chip type beside it, and what the mix saves."""

    parts: list[MixPart]
    dollars_per_hour: float
    cost_per_million_output_tokens: float
    best_single: PlanCandidate | None
    single_per_hardware: dict[str, PlanCandidate]
    saving_dollars_per_hour: float
    saving_fraction: float
    program_dollars_per_hour: float
    buckets: list[Bucket]
    evaluated: int
    sources: dict[str, str] = field(default_factory=dict)


def length_buckets(lengths: LengthDistribution, qps: float, max_buckets: int = MAX_BUCKETS) -> list[Bucket]:
    """Each point a bucket when there are at most ``max_buckets``; else points binned by input length in
    powers of two, the lightest adjacent pair merged until ``max_buckets`` remain."""
    inp, out, w = lengths.input_len, lengths.output_len, lengths.weight
    if inp.size <= max_buckets:
        groups = [np.array([k]) for k in np.argsort(inp, kind="stable")]
    else:
        bins = np.floor(np.log2(inp)).astype(int)
        groups = [np.flatnonzero(bins == b) for b in np.unique(bins)]
        while len(groups) > max_buckets:
            pair = int(np.argmin([w[groups[k]].sum() + w[groups[k + 1]].sum() for k in range(len(groups) - 1)]))
            groups[pair : pair + 2] = [np.concatenate(groups[pair : pair + 2])]
    out_buckets = []
    for g in groups:
        lo, hi = int(inp[g].min()), int(inp[g].max())
        name = f"in {lo}" if lo == hi else f"in {lo}-{hi}"
        name += f", out {int(out[g].min())}" if g.size == 1 else ""
        share = float(w[g].sum())
        out_buckets.append(Bucket(name, from_points(inp[g], out[g], w[g], source=name), qps * share))
    return out_buckets


def check_prices(hardware: Sequence[HardwareSpec], prices: dict[str, float]) -> None:
    """A mix compares costs: every chip needs a finite, positive price per chip-hour."""
    for hw in hardware:
        price = prices.get(hw.name, getattr(hw, "price_per_chip_hour", None))
        if price is None or not (isinstance(price, (int, float)) and math.isfinite(price) and price > 0):
            raise OptionError(
                f"prices: {hw.name} has no price per chip-hour (got {shown(price)}); a mix compares costs, "
                f"give one (price {hw.name}=USD)",
                parameters=("prices",),
            )


def plan_mix(
    model: ModelSpec,
    hardware: Sequence[HardwareSpec],
    qps: float,
    lengths: LengthDistribution,
    config: PlanConfig,
) -> MixPlan:
    """The cheapest split of the traffic by length bucket over the chip types (see the module)."""
    check_plan_inputs(qps, config.targets, hardware)
    check_spares_below(config.spares, config.max_replicas)
    check_prices(hardware, dict(config.space.prices))
    buckets = length_buckets(lengths, qps)
    workloads = [b.lengths for b in buckets] + [lengths]
    table = candidate_shapes(model, hardware, workloads, config.targets, config.space, config.executor)
    by_name = {hw.name: hw for hw in hardware}
    nodes = {h: node_size(by_name[h], config.spares.node_chips) for h in by_name}
    single = rank_at_rate(table, len(buckets), qps, replace(config, top=1), nodes)
    assignment, estimate = solve_assignment(table, buckets, config, nodes)
    parts = []
    for name, served in assignment.items():
        share = [buckets[b] for b in served]
        sub = mixture(share)
        sub_qps = sum(b.qps for b in share)
        hw = [by_name[name]]
        exact = plan_with(model, hw, sub_qps, sub, replace(config, top=1)).best
        if exact is None:  # the program's additive loads fit, the mixture's queueing does not
            parts = []
            break
        parts.append(MixPart(name, [b.name for b in share], sub_qps, exact))
    total = sum(p.deployment.dollars_per_hour for p in parts) if parts else math.inf
    best_single = single.best
    if best_single is not None and (not parts or total >= best_single.dollars_per_hour):
        names = [b.name for b in buckets]
        parts, total = [MixPart(best_single.hardware, names, qps, best_single)], best_single.dollars_per_hour
    saving = (best_single.dollars_per_hour - total) if best_single else math.nan
    sources = {
        **single.sources,
        "mix": "scipy.optimize.milp (HiGHS): one shape per chip type, each length bucket on one type, "
        "loads additive; each type's share then planned exactly (its buckets' mixture)",
        "buckets": f"{len(buckets)} length buckets of {lengths.source}",
    }
    return MixPlan(
        parts,
        float(total),
        float(cost_per_million_output_tokens(total, qps, lengths.mean_output)) if parts else math.inf,
        best_single,
        single.best_per_hardware,
        float(saving),
        float(saving / best_single.dollars_per_hour) if best_single else math.nan,
        float(estimate),
        buckets,
        table.evaluated,
        sources,
    )


def mixture(buckets: Sequence[Bucket]) -> LengthDistribution:
    """The lengths of several buckets together, weighted by their rates."""
    inp = np.concatenate([b.lengths.input_len for b in buckets])
    out = np.concatenate([b.lengths.output_len for b in buckets])
    w = np.concatenate([b.lengths.weight * b.qps for b in buckets])
    return from_points(inp, out, w, source=" + ".join(b.name for b in buckets))


def program_rates(table: ShapeTable, buckets: int) -> np.ndarray:
    """(S, B) what one replica carries of each bucket alone for the program: every limit, the TTFT one
    only where the bucket can meet the target at all (the target is a mean over all requests)."""
    lim = {k: v[:, :buckets] for k, v in table.limits.items()}
    ttft = np.where(lim["TTFT SLO"] > 0, lim["TTFT SLO"], np.inf)
    rate = np.minimum.reduce([lim["concurrency"], lim["TPOT SLO"], ttft])
    return np.where(table.usable[:, :buckets], rate, 0.0)


def shortlist(table: ShapeTable, lam: np.ndarray, per_bucket: int = SHAPES_PER_BUCKET) -> np.ndarray:
    """Shapes worth a variable: per chip type and bucket, the cheapest per unit of that bucket's load."""
    cost = table.dollars_per_replica_hour()
    keep: set[int] = set()
    for hw in np.unique(table.fields["hardware"]):
        rows = np.flatnonzero(table.fields["hardware"] == hw)
        for b in range(lam.shape[1]):
            ok = rows[lam[rows, b] > 0]
            per_load = cost[ok] / lam[ok, b]
            keep.update(int(i) for i in ok[np.argsort(per_load, kind="stable")[:per_bucket]])
    return np.array(sorted(keep), dtype=np.int64)


def solve_assignment(
    table: ShapeTable, buckets: Sequence[Bucket], config: PlanConfig, nodes: dict[str, tuple[int, str]]
) -> tuple[dict[str, list[int]], float]:
    """The program's answer: chip type -> the buckets it serves, and its cost estimate ($/h; inf: none)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    rates = program_rates(table, len(buckets))
    shapes = shortlist(table, rates)
    n_s, n_b = shapes.size, len(buckets)
    if n_s == 0:
        return {}, math.inf
    hw = table.fields["hardware"][shapes]
    node = np.array([nodes[str(h)][0] for h in hw], dtype=np.int64)
    spare = replicas_lost(table.fields["chips"][shapes], node, config.spares).astype(float)
    lam = rates[shapes]
    q = np.array([b.qps for b in buckets])

    # Variables: y[s, b] (n_s·n_b), z[s] (n_s), n[s] (n_s).
    def y(s: int, b: int) -> int:
        return s * n_b + b

    z0, r0 = n_s * n_b, n_s * n_b + n_s
    size = r0 + n_s
    chips_cost = table.dollars_per_replica_hour()[shapes]
    c = np.zeros(size)
    c[r0:] = chips_cost
    types = np.unique(hw)
    rows = n_b + n_s * n_b + len(types) + n_s
    a = lil_matrix((rows, size))
    lb, ub = np.full(rows, -np.inf), np.zeros(rows)
    for b in range(n_b):  # every bucket served once
        for s in range(n_s):
            a[b, y(s, b)] = 1.0
        lb[b] = ub[b] = 1.0
    r = n_b
    for s in range(n_s):  # y[s, b] <= z[s]
        for b in range(n_b):
            a[r, y(s, b)], a[r, z0 + s] = 1.0, -1.0
            r += 1
    for h in types:  # one shape per chip type
        for s in np.flatnonzero(hw == h):
            a[r, z0 + s] = 1.0
        ub[r] = 1.0
        r += 1
    for s in range(n_s):  # replicas carry the load and the spares
        for b in range(n_b):
            if lam[s, b] > 0:
                a[r, y(s, b)] = q[b] / lam[s, b]
        a[r, z0 + s], a[r, r0 + s] = spare[s], -1.0
        r += 1
    upper = np.ones(size)
    upper[:r0] = 1.0
    upper[: n_s * n_b] = (lam > 0).ravel().astype(float)  # a shape that cannot carry a bucket never serves it
    upper[r0:] = np.inf if config.max_replicas is None else config.max_replicas
    res = milp(c, constraints=LinearConstraint(a.tocsr(), lb, ub), integrality=np.ones(size), bounds=Bounds(0, upper))
    if res.x is None:
        return {}, math.inf
    x = np.round(res.x)
    served: dict[str, list[int]] = {}
    for s in range(n_s):
        for b in range(n_b):
            if x[y(s, b)] > 0.5:
                served.setdefault(str(hw[s]), []).append(b)
    return served, float(res.fun)
