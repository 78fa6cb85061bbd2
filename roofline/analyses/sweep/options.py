"""A sweep's options: list parsing, dtype checks, the size limits, and the (tp, pp) groups of chip counts.

Every check names the option, the value and what is allowed (:class:`roofline.core.errors.OptionError`).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import numpy as np

from roofline.core.checks import check_count
from roofline.core.errors import OptionError, shown
from roofline.core.units import DTYPE_BYTES
from roofline.deploy import topology

#: Most configurations that fit in HBM one sweep holds (about 450 bytes each with the
#: temporaries of evaluating them: 2 million is about 1 GB); a larger grid is refused before
#: it is allocated.
MAX_SWEEP_POINTS = 2_000_000
#: Most (chips, context) slots screened at once per chip and dtype pair.
MAX_SWEEP_SLOTS = 1_000_000
#: Most values one list option (a batch list ``1,2,...``) may hold.
MAX_LIST_VALUES = 4096


def parse_int_list(text: str, option: str, maximum: int = 2**31 - 1) -> np.ndarray:
    """'1,2,8' -> [1, 2, 8]; 'A..B' -> powers of two from A up to B (then B); each in [1, maximum]."""
    hint = f"give whole numbers from 1 to {maximum} like '1,2,8' or a doubling range like '1..4096'"
    text = str(text)
    if len(text) > 64 * MAX_LIST_VALUES:
        raise OptionError(f"{option}: too long ({len(text)} characters); {hint}", parameters=(option,))
    values: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        bounds = part.split("..") if ".." in part else [part]
        try:
            lo, hi = (check_count(x.strip(), "", maximum=maximum) for x in (bounds[0], bounds[-1]))
            if len(bounds) > 2 or hi < lo:
                raise ValueError
        except ValueError:
            raise OptionError(f"{option}: cannot read {shown(part)}; {hint}", parameters=(option,)) from None
        n = lo
        while n < hi:
            values.append(n)
            n *= 2
        values.append(hi)
        if len(values) > MAX_LIST_VALUES:
            raise OptionError(f"{option}: more than {MAX_LIST_VALUES} values", parameters=(option,))
    return np.unique(np.asarray(values, dtype=np.int64))


def check_dtypes(values: Sequence[str], option: str) -> tuple[str, ...]:
    """Validate dtype names, naming the option and the allowed values."""
    for value in values:
        if isinstance(value, str) and "=" in value:
            where = " (per-component weights: step, request, serve, simulate)" if "weights" in option else ""
            raise OptionError(
                f"{option}: {shown(value)} is a component=dtype item; a sweep or plan tries whole-model dtypes, "
                f"comma-separated (e.g. bf16,fp8); allowed: {', '.join(DTYPE_BYTES)}{where}",
                parameters=(option,),
            )
        if value not in DTYPE_BYTES:
            raise OptionError(
                f"{option}: unknown dtype {shown(value)}; allowed: {', '.join(DTYPE_BYTES)}", parameters=(option,)
            )
    if not values:
        raise OptionError(f"{option}: give at least one dtype", parameters=(option,))
    return tuple(dict.fromkeys(values))


def feasible_points(batch: np.ndarray, max_batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``batch`` and ``max_batch`` per slot: (slot index, batch) of each B ≤ max.

    Fit in HBM is monotone in batch (P + B·KV ≤ HBM  ⇔  B ≤ max batch), so the points that
    fit are a prefix of the sorted batch axis in every (chips, context) slot.
    """
    counts = np.searchsorted(batch, max_batch.reshape(-1), side="right")
    slot = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    position = np.arange(slot.size) - np.repeat(starts, counts)
    return slot, batch[position]


def tp_groups(
    chips: np.ndarray,
    tp: Sequence[int] | None,
    topologies: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> list[tuple[int, np.ndarray, str | None]]:
    """(tp degree, indices into ``chips``, slice shape) of each decode_step call.

    tp = the whole slice when ``tp`` is None; otherwise each degree with the chip counts it
    divides, or the slice shapes (``4x4``, each its own group) whose leading axes it spans.
    Each (slice, degree) pair left out is described in ``skipped`` (when given), with why.
    """
    notes = [] if skipped is None else skipped
    degrees = None if tp is None else sorted(set(tp))
    if degrees is not None and any(t <= 0 for t in degrees):
        raise OptionError(f"tp: degrees must be positive integers (got {shown(tp)})", parameters=("tp",))
    groups: list[tuple[int, np.ndarray, str | None]] = []
    if topologies:
        for text in dict.fromkeys(topologies):
            sizes = topology.parse_topology(text)
            n = topology.topology_chips(sizes)
            row = np.flatnonzero(chips == n)
            # A tp group spans leading ICI axes: degree 1 or a product of the first k axis sizes.
            allowed = {1, *itertools.accumulate(sizes, operator.mul)}
            groups += [(d, row, text) for d in (degrees or [n]) if d in allowed]
            notes += [
                f"topology {text} with tp {d}: a tp group spans leading axes, so tp must be one of "
                f"{', '.join(map(str, sorted(allowed)))}"
                for d in (degrees or [n])
                if d not in allowed
            ]
    elif degrees is None:
        groups = [(int(c), np.asarray([i]), None) for i, c in enumerate(chips)]
    else:
        groups = [(int(t), np.flatnonzero(chips % t == 0), None) for t in degrees]
        notes += [f"{int(c)} chips with tp {t}: {t} does not divide {int(c)}" for t in degrees for c in chips if c % t]
        groups = [g for g in groups if g[1].size]
    if not groups:
        where = f"topologies={list(topologies)}" if topologies else f"chips={chips.tolist()}"
        raise OptionError(f"tp: no degree in {list(tp or [])} fits {where}", parameters=("tp",))
    return groups


def parallel_groups(
    chips: np.ndarray,
    tp: Sequence[int] | None,
    pp: Sequence[int] | None,
    topologies: Sequence[str] | None = None,
    skipped: list[str] | None = None,
) -> list[tuple[int, int, np.ndarray, str | None]]:
    """(tp, pp, indices into ``chips``, slice shape) of each block: tp groups × pipeline depths.

    Without ``pp`` every block is one stage; with it, each depth p keeps the chip counts that
    tp·p divides (tp = chips / p when no tp is given).
    """
    stages = sorted(set(pp or [1]))
    if any(p <= 0 for p in stages):
        raise OptionError(f"pp: depths must be positive integers (got {shown(pp)})", parameters=("pp",))
    if stages == [1]:
        return [(d, 1, rows, shape) for d, rows, shape in tp_groups(chips, tp, topologies, skipped)]
    if topologies:
        raise OptionError("pp with topologies is not supported: give chips and tp", parameters=("pp", "topologies"))
    notes = [] if skipped is None else skipped
    groups: list[tuple[int, int, np.ndarray, str | None]] = []
    for p in stages:
        if tp is None:
            groups += [(int(c) // p, p, np.asarray([i]), None) for i, c in enumerate(chips) if c % p == 0]
        else:
            groups += [(int(t), p, np.flatnonzero(chips % (t * p) == 0), None) for t in sorted(set(tp))]
        if tp is None:
            notes += [f"{int(c)} chips with pp {p}: {p} does not divide {int(c)}" for c in chips if c % p]
        else:
            notes += [
                f"{int(c)} chips with tp {t} x pp {p}: {t * p} does not divide {int(c)}"
                for t in sorted(set(tp))
                for c in chips
                if c % (t * p)
            ]
    groups = [g for g in groups if g[2].size]
    if not groups:
        raise OptionError(
            f"tp/pp: no tp x pp in {list(tp or [])} x {stages} divides chips={chips.tolist()}",
            parameters=("tp", "pp", "chips"),
        )
    return groups


def expert_layouts(
    chips: np.ndarray,
    groups: list[tuple[int, int, np.ndarray, str | None]],
    ep: Sequence[int] | None,
    wide_ep: bool,
    num_experts: int,
    skipped: list[str] | None = None,
) -> list[tuple[int, int, int | None, np.ndarray, str | None]]:
    """(tp, pp, ep, indices into ``chips``, slice shape) of each block: the (tp, pp) groups with each expert
    degree of ``ep`` (None: no expert parallelism), each kept on the chip counts its layout divides (tp·attention
    dp·pp, attention dp = ep / tp where ep exceeds tp).  ``wide_ep`` (MoE models) adds, per chip count c of a
    group, ep = c / pp over the whole stage: with the group's tp (attention tensor-parallel) and, where that tp
    is the whole stage, with tp 1 (attention data-parallel over every chip), as DeepSeek-class models are served.
    """
    from roofline.deploy.layout import attention_dp_for

    notes = [] if skipped is None else skipped
    degrees: list[int | None] = [None] if not ep else sorted(set(int(e) for e in ep))
    if any(e is not None and e <= 0 for e in degrees):
        raise OptionError(f"ep: degrees must be positive integers (got {shown(ep)})", parameters=("ep",))
    out: list[tuple[int, int, int | None, np.ndarray, str | None]] = []
    for tp, pp, rows, shape in groups:
        for e in degrees:
            if e is None or e == 1:
                out.append((tp, pp, e, rows, shape))
                continue
            if num_experts % e or (e > tp and e % tp) or (e < tp and tp % e):
                notes.append(
                    f"tp {tp} with ep {e}: ep must divide the {num_experts} experts, and tp or a multiple of tp"
                )
                continue
            group = tp * attention_dp_for(tp, e, None, num_experts) * pp
            kept = rows[chips[rows] % group == 0]
            notes += [
                f"{int(c)} chips with tp {tp} x ep {e}: {group} does not divide {int(c)}"
                for c in chips[rows]
                if c % group
            ]
            if kept.size:
                out.append((tp, pp, e, kept, shape))
        if not (wide_ep and num_experts > 1):
            continue
        for row in rows:
            stage = int(chips[row]) // pp
            if stage < 2 or num_experts % stage or stage % tp:
                continue
            pick = np.asarray([row])
            if stage not in degrees:
                out.append((tp, pp, stage, pick, shape))
            if tp == stage:
                out.append((1, pp, stage, pick, shape))
    if not out:
        why = f" ({notes[-1]})" if notes else ""
        raise OptionError(f"ep: no degree in {list(ep or [])} fits chips={chips.tolist()}{why}", parameters=("ep",))
    return out
