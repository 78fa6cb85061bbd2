"""p10-p90 bands around a prediction, from the held-out errors of the data tier that made it.

A latency L predicted as L₀ lies in [L₀·r₁₀, L₀·r₉₀] with the measured/predicted ratios r at the 10th and
90th percentiles of the tier's held-out rows (:mod:`roofline.deploy.bands`); a throughput likewise.  The
pessimistic edge at confidence c is L₀·r_c for a latency (c of runs are no slower) and T₀·r₁₋c for a
throughput.  Where no band was built for the tier, the result says so instead of inventing one.
"""

from __future__ import annotations

from collections.abc import Mapping

from roofline.deploy import Deployment
from roofline.deploy.bands import band_table, data_tier

#: Result keys -> the band quantity that covers them.
KEYS = {
    "ttft_s": "ttft_s",
    "client_ttft_s": "ttft_s",
    "tpot_s": "tpot_s",
    "tokens_per_s_per_chip": "throughput",
    "output_tokens_per_s": "throughput",
    "tokens_per_s": "throughput",
}
RATES = ("throughput",)
LABELS = {"ttft_s": "TTFT", "tpot_s": "TPOT", "throughput": "tokens/s"}


def bands_for(dep: Deployment, values: Mapping[str, float]) -> dict[str, object]:
    """``{tier, source, <key>: {p10, p90, n}}`` for each of ``values`` (result key -> prediction) a band covers."""
    return tier_bands(data_tier(dep), values)


def tier_bands(tier: str, values: Mapping[str, float]) -> dict[str, object]:
    """:func:`bands_for` of a prediction made by data tier ``tier`` (one of :data:`roofline.deploy.bands.TIERS`)."""
    table = band_table().get(tier, {})
    out: dict[str, object] = {"tier": tier}
    if not table:
        out["source"] = f"no band for the {tier} tier (roofline/data/bands.yaml has none)"
        return out
    covered = ", ".join(f"{LABELS.get(q, q)} {b.coverage:.0%}" for q, b in table.items())
    out["source"] = (
        f"held-out end-to-end rows of the {tier} tier: a new source's spread of log measured/predicted "
        f"(between-source offset + within-source scatter); p10-p90 covered {covered} of rows held out by source"
    )
    for key, value in values.items():
        band = table.get(KEYS.get(key, ""))
        if band is None or value is None:
            continue
        out[key] = {"p10": float(value) * band.quantile(0.1), "p90": float(value) * band.quantile(0.9), "n": band.n}
    return out


def band_line(bands: Mapping[str, object]) -> str:
    """One line of a result's bands for a terminal: 'p10-p90 (tier): TTFT a-b ms, ...'."""
    parts = []
    ttft = "client_ttft_s" if isinstance(bands.get("client_ttft_s"), dict) else "ttft_s"  # what the rows measured
    for key, label, scale, unit in ((ttft, "TTFT", 1e3, "ms"), ("tpot_s", "TPOT", 1e3, "ms")):
        if isinstance(b := bands.get(key), dict):
            parts.append(f"{label} {b['p10'] * scale:.3g}-{b['p90'] * scale:.3g} {unit}")
    for key in ("tokens_per_s_per_chip", "output_tokens_per_s"):
        if isinstance(b := bands.get(key), dict):
            parts.append(f"tokens/s {b['p10']:.4g}-{b['p90']:.4g}")
    if not parts:
        return f"p10-p90: {bands.get('source', 'none')}"
    return f"p10-p90 ({bands['tier']} tier, held-out rows): " + ", ".join(parts)


def pessimistic(dep: Deployment, key: str, value: float, confidence: float) -> float:
    """The prediction at the band's pessimistic edge for ``confidence`` (latency high, throughput low);
    the prediction itself where the tier has no band."""
    quantity = KEYS.get(key, key)
    band = band_table().get(data_tier(dep), {}).get(quantity)
    if band is None:
        return value
    level = 1.0 - confidence if quantity in RATES else confidence
    return value * band.quantile(level)
