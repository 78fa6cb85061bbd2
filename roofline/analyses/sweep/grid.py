"""What a sweep evaluates, as one frozen config: the Cartesian axes and the deployment options every
point shares.  :func:`roofline.analyses.sweep.run.sweep` and :func:`roofline.analyses.sweep.frontier.frontier`
take it; ``decode_sweep`` / ``decode_frontier`` are their keyword forms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from numpy.typing import ArrayLike

from roofline.analyses.step import DEFAULT_CONTEXT
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION


@dataclass(frozen=True)
class SweepGrid:
    """A sweep's grid: batch x chips (or slice ``topologies``) x context x weights x KV dtypes x tp x pp x
    expert layouts, each point one decode step of the step model.

    ``chips`` is the slice that serves the batch (default 1); ``tp`` the model-parallel degrees to try
    (each divides the chip count; None: the whole slice is one group, the book's figure); ``ep`` expert
    degrees (``wide_ep``: ep over the whole stage, with attention TP and with attention DP); ``labels``
    names each chip's points (default: its name); ``prices`` USD per chip-hour by chip name.
    """

    batch: ArrayLike
    chips: ArrayLike | None = None
    context: ArrayLike = (DEFAULT_CONTEXT,)
    weights: Sequence[str] = ("bf16",)
    kv_dtypes: Sequence[str] = ("bf16",)
    tp: Sequence[int] | None = None
    compute_dtype: str = "bf16"
    prices: Mapping[str, float] | None = None
    topologies: Sequence[str] | None = None
    pp: Sequence[int] | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    ep: int | Sequence[int] | None = None
    labels: Sequence[str] | None = None
    engine: str | None = None
    wide_ep: bool = False
    #: Per-component matmul dtypes over ``compute_dtype`` (Precision.compute_components), e.g. (("experts", "nvfp4"),).
    compute_components: tuple[tuple[str, str], ...] = ()
