"""One description of a deployment: model, chip rates, precision, parallelism and memory policy.

Built once (:func:`deployment`) and read by every analysis; nothing else re-derives replicas,
groups, topology or usable memory.  Usable HBM follows what serving engines do: physical
capacity × a memory-utilization fraction (vLLM's ``gpu_memory_utilization``, default 0.9) minus
an activation reserve that grows with the tokens of a step.  A fraction of 1 is the book's
accounting: weights and KV fill all of HBM and nothing is reserved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from roofline.core.checks import check_array, check_count, check_instance, check_scalar
from roofline.core.errors import OptionError, RooflineError, shown
from roofline.core.units import DTYPE_BYTES, dtype_bytes
from roofline.deploy.engine import NO_ENGINE, EngineTerms, engine_terms
from roofline.deploy.layout import Parallelism, parallelism, replicas
from roofline.deploy.rates import Rates, at_achievable, chip_rates
from roofline.model import memory
from roofline.model.memory import Number
from roofline.specs import HardwareSpec, ModelSpec

#: Default fraction of physical HBM an engine may use (vLLM gpu_memory_utilization default 0.9).
DEFAULT_MEMORY_UTILIZATION = 0.9
#: Largest price accepted, in USD per chip-hour (the spec files' own limit).
MAX_PRICE_PER_CHIP_HOUR = 1e6


def check_model(value: object, name: str = "model") -> ModelSpec:
    """A ModelSpec argument (not None, not a name string): one OptionError line otherwise."""
    check_instance(value, name, ModelSpec, "from roofline.load_model('llama-3-8b')")
    return value  # type: ignore[return-value]


def check_hardware(value: object, name: str = "hw") -> HardwareSpec:
    """A HardwareSpec argument (not None, not a name string): one OptionError line otherwise."""
    check_instance(value, name, HardwareSpec, "from roofline.load_hardware('h100-sxm')")
    return value  # type: ignore[return-value]


def check_hardware_list(value: object, name: str = "hardware") -> list[HardwareSpec]:
    """A non-empty list of HardwareSpec (one chip alone or a name string is refused with a hint)."""
    if isinstance(value, (HardwareSpec, str)) or not isinstance(value, (list, tuple)) or not value:
        raise OptionError(
            f"{name}: must be a non-empty list of HardwareSpec, e.g. [roofline.load_hardware('h100-sxm')] "
            f"(got {shown(value)})",
            parameters=(name,),
        )
    for i, item in enumerate(value):
        check_hardware(item, f"{name}[{i}]")
    return list(value)


@dataclass(frozen=True)
class Precision:
    """Dtypes of a deployment: weights, KV cache and the matmul compute.

    ``weights`` is the default weight dtype; ``components`` overrides it per weight component
    (attention, mlp, experts, embeddings, lm_head), e.g. (("experts", "mxfp4"),).  Norms, biases,
    routers and SSM scalars keep the default.  ``compute`` is the default matmul dtype and
    ``compute_components`` overrides it per component the same way (fp4 experts beside fp8 attention).
    """

    weights: str = "bf16"
    kv: str = "bf16"
    compute: str = "bf16"
    components: tuple[tuple[str, str], ...] = ()
    compute_components: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for field in ("weights", "kv", "compute"):
            value = getattr(self, field)
            if not isinstance(value, str) or value not in DTYPE_BYTES:
                raise OptionError(
                    f"{field}: unknown dtype {shown(value)}; allowed: {', '.join(DTYPE_BYTES)}", parameters=(field,)
                )
        for field in ("components", "compute_components"):
            pairs = getattr(self, field)
            if not isinstance(pairs, tuple) or not all(isinstance(c, tuple) and len(c) == 2 for c in pairs):
                raise OptionError(
                    f"{field}: must be a tuple of (component, dtype) pairs (got {shown(pairs)})", parameters=(field,)
                )
            names = [c for c, _ in pairs]
            twice = sorted({c for c in names if names.count(c) > 1})
            if twice:
                raise OptionError(
                    f"{field}: {twice[0]!r} is given twice; give each component once", parameters=(field,)
                )
        for name, dtype in (*self.components, *self.compute_components):
            if name not in memory.WEIGHT_COMPONENTS:
                raise RooflineError(f"weight component {name!r} is not one of {', '.join(memory.WEIGHT_COMPONENTS)}")
            dtype_bytes(dtype)

    def weight_dtype(self, component: str) -> str:
        """The dtype of one weight component (the default where not overridden)."""
        return dict(self.components).get(component, self.weights)

    def compute_dtype(self, component: str) -> str:
        """The matmul dtype of one component's GEMMs (the default ``compute`` where not overridden)."""
        return dict(self.compute_components).get(component, self.compute)

    @property
    def compute_dtypes(self) -> tuple[str, ...]:
        """Every matmul dtype the deployment uses: the default first, then each override."""
        return tuple(dict.fromkeys([self.compute, *(d for _, d in self.compute_components)]))

    @property
    def mixed_compute(self) -> bool:
        """True where some component computes in another dtype than the default."""
        return any(dtype != self.compute for _, dtype in self.compute_components)

    @property
    def bytes_by_component(self) -> dict[str, float]:
        """Bytes per parameter of every component and of "other" (the default)."""
        out = {c: dtype_bytes(self.weight_dtype(c)) for c in memory.WEIGHT_COMPONENTS}
        out["other"] = dtype_bytes(self.weights)
        return out

    @property
    def gemm_weight_bytes(self) -> dict[str, float]:
        """Bytes per weight of each component stored narrower than its compute dtype (weight-only
        quantization: its GEMMs read them so and dequantize in the kernel); the rest are read at it."""
        return {
            c: b
            for c, b in self.bytes_by_component.items()
            if b < dtype_bytes(self.compute_dtype(c) if c != "other" else self.compute)
        }

    @property
    def mixed(self) -> bool:
        """True where some component differs from the default weight dtype."""
        return any(dtype != self.weights for _, dtype in self.components)

    def describe(self) -> str:
        """'bf16' or 'bf16, experts=mxfp4' (the per-component weights syntax)."""
        return ",".join([self.weights] + [f"{c}={d}" for c, d in self.components])

    def describe_compute(self) -> str:
        """'bf16' or 'fp8_block,experts=nvfp4' (the --compute-dtype syntax)."""
        return ",".join([self.compute] + [f"{c}={d}" for c, d in self.compute_components])

    def with_compute(self, text: str) -> Precision:
        """This precision computing in ``text``, the :meth:`describe_compute` form ('fp8' or
        'fp8_block,experts=nvfp4'): the inverse of that method."""
        default, *items = str(text).split(",")
        pairs = tuple(sorted((c, d) for c, _, d in (item.partition("=") for item in items)))
        return replace(self, compute=default, compute_components=pairs)

    @classmethod
    def checkpoint(cls, model: ModelSpec, kv: str = "bf16", compute: str = "bf16") -> Precision:
        """The model's own checkpoint precision (its ``precision`` field), bf16 where it has none."""
        spec = dict(model.precision or {})
        default = spec.pop("default", "bf16")
        return cls(default, kv, compute, tuple(sorted(spec.items())))

    @property
    def weight_bytes(self) -> float:
        """Bytes per parameter of the default weight dtype (mixed precision: see bytes_by_component)."""
        return dtype_bytes(self.weights)

    @property
    def kv_bytes(self) -> float:
        return dtype_bytes(self.kv)

    @property
    def activation_bytes(self) -> float:
        return dtype_bytes(self.compute)


@dataclass(frozen=True)
class Deployment:
    """A model served on ``chips`` of one kind: rates, precision, parallelism, memory policy, price."""

    model: ModelSpec
    hw: HardwareSpec
    rates: Rates
    precision: Precision
    par: Parallelism
    chips: Number
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    price_per_chip_hour: float = 0.0
    price_source: str = "hardware spec"
    comms_overlap: float = 0.0
    engine: EngineTerms = NO_ENGINE
    #: How tokens spread over an MoE layer's experts (the fused-MoE family's routing: balanced, uniform or
    #: power_law_<alpha>; the busiest GPU sets the time); None: the family's default (:attr:`routing`).
    moe_routing: str | None = None

    @property
    def routing(self) -> str:
        """The MoE routing kind in force: ``moe_routing``, else the fused-MoE family's default (power law 1.01)."""
        if self.moe_routing is not None:
            return self.moe_routing
        from roofline.kernels.moe import DEFAULT_ROUTING

        return DEFAULT_ROUTING

    def peak_flops(self, dtype: str) -> float:
        """FLOP/s of ``dtype`` matmuls on one chip: the spec sheet's peak, x the chip's achievable fraction
        where the rates are at the achievable defaults."""
        peak = self.hw.flops_for(dtype)
        if not self.rates.achievable:
            return peak
        from roofline.deploy.families import achievable

        return peak * achievable(self.hw).flops(dtype)

    @property
    def replicas(self) -> np.ndarray:
        """Model replicas in the slice (1 for the idealised group)."""
        return replicas(self.par, self.chips)

    @property
    def group_chips(self) -> np.ndarray:
        """Chips of one replica: tp·pp, or the whole slice when idealised."""
        return np.asarray(self.chips, dtype=float) / self.replicas

    @property
    def stage_chips(self) -> np.ndarray:
        """Chips of one pipeline stage (a tp group): group chips / pp."""
        return self.group_chips / self.par.pp

    @property
    def attention_chips(self) -> np.ndarray:
        """Chips of one attention data-parallel rank (its tp group): stage chips / attention_dp."""
        return self.stage_chips / self.par.attention_dp

    @property
    def weight_bytes(self) -> float:
        """Bytes of one full copy of the weights (each component in its dtype)."""
        return memory.model_weight_bytes(self.model, self.precision.bytes_by_component)

    @property
    def held_weight_bytes(self) -> float:
        """Weight bytes one replica holds: the routed experts once, every other weight once per attention
        data-parallel rank (each rank keeps its own copy of attention and the dense layers)."""
        dp = self.par.attention_dp
        if dp == 1:
            return self.weight_bytes
        return self.weight_bytes + (dp - 1) * memory.dense_weight_bytes(self.model, self.precision.bytes_by_component)

    @property
    def kv_copies(self) -> float:
        """Copies of each cached token an attention rank's chips hold: MLA's latent (one KV head shared by
        every query head) is replicated on each of the tp chips, as engines with tensor-parallel attention
        keep it; other caches split over heads (then batch), one copy (1 with no explicit tp)."""
        if self.model.kv_lora_rank is None or not self.par.explicit:
            return 1.0
        return float(self.par.tp)

    def group_capacity_bytes(self) -> np.ndarray:
        """Physical HBM of one replica: group chips × HBM per chip."""
        return self.group_chips * self.hw.hbm_bytes

    def activation_reserve_bytes(self, tokens: ArrayLike, sampled: ArrayLike | None = None) -> Number:
        """Activations of a step of T tokens on one replica: T·(2·D + 2·F)·act bytes + S·V·4, the fp32
        logits of the S rows it samples (S = T in decode; a prefill samples one row a prompt).

        Charged only when the memory-utilization fraction is below 1 (the book's accounting
        reserves nothing).
        """
        if self.memory_utilization >= 1.0:
            return np.zeros_like(np.asarray(tokens, dtype=float))
        m = self.model
        hidden = np.multiply(tokens, (2.0 * m.d_model + 2.0 * m.d_ff) * self.precision.activation_bytes)
        return np.add(hidden, np.multiply(tokens if sampled is None else sampled, 4.0 * m.vocab_size))

    def usable_hbm_bytes(self, tokens: ArrayLike = 0.0, sampled: ArrayLike | None = None) -> Number:
        """HBM one replica may fill with weights + KV: physical × utilization − activation reserve."""
        return self.group_capacity_bytes() * self.memory_utilization - self.activation_reserve_bytes(tokens, sampled)


def default_comms_overlap(hw: HardwareSpec) -> float:
    """Collectives' overlap with local work when nothing sets it: 1 on TPUs (XLA overlaps), 0 on GPUs."""
    return 1.0 if hw.kind == "tpu" else 0.0


def deployment(
    model: ModelSpec,
    hw: HardwareSpec,
    chips: ArrayLike = 1,
    precision: Precision | None = None,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    topology_text: str | None = None,
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION,
    price_per_chip_hour: float | None = None,
    rates: Rates | None = None,
    comms_overlap: float | None = None,
    engine: str | EngineTerms | None = None,
    attention_dp: int | None = None,
    moe_routing: str | None = None,
    achievable: bool | None = None,
) -> Deployment:
    """Validate and build a Deployment; collectives overlap by default on TPUs only (XLA), not GPUs.

    ``achievable`` prices the spec-sheet parts at the chip's achievable defaults (its YAML ``achievable:``
    fractions of peak); None: for models priced by their operator terms (MoE, MLA), whose fused-MoE and MLA
    kernels run at those defaults too, and with an engine entry in registry terms (a real engine's kernels
    reach those fractions, not the peaks; the entry's terms are host time only and must not absorb them).
    ``moe_routing`` is the experts' skew (default: power law, alpha 1.01).

    ``engine`` names an entry of the profile's ``engine:`` section (fitted engine terms), or gives
    the terms themselves; the engine's fitted collective overlap then applies.
    """
    check_model(model)
    check_hardware(hw)
    precision = Precision() if precision is None else precision
    check_instance(precision, "precision", Precision, "roofline.Precision(weights='fp8')")
    memory_utilization = check_scalar(memory_utilization, "memory_utilization", minimum=0.0, maximum=1.0)
    chips_arr = check_array(chips, "chips", minimum=1.0, open_low=False, whole=True)
    for name, degree in (("tp", tp), ("pp", pp), ("ep", ep)):
        if degree is not None:
            check_count(degree, name)
    if topology_text:  # fabric (and its collectives) only where a topology is given: keeps start-up lean
        from roofline.deploy.fabric import check_slice_topology

        check_slice_topology(hw, topology_text)
    par = parallelism(chips, tp, pp, ep, topology_text, model.num_experts, attention_dp)
    if par.pp > model.num_layers:
        raise OptionError(f"pp={par.pp} exceeds the model's {model.num_layers} layers", parameters=("pp",))
    price = (
        hw.price_per_chip_hour
        if price_per_chip_hour is None
        else check_scalar(price_per_chip_hour, "price_per_chip_hour", maximum=MAX_PRICE_PER_CHIP_HOUR)
    )
    if not np.isfinite(price) or price <= 0:
        raise OptionError(
            f"price_per_chip_hour must be a positive finite number (got {shown(price)})",
            parameters=("price_per_chip_hour",),
        )
    eng = engine if isinstance(engine, EngineTerms) else engine_terms(hw, engine)
    if comms_overlap is None and eng.comms_overlap is not None:  # an engine entry's own overlap
        comms_overlap = eng.comms_overlap
    overlap = default_comms_overlap(hw) if comms_overlap is None else float(comms_overlap)
    if not 0.0 <= overlap <= 1.0:
        raise OptionError(f"comms_overlap must be in [0, 1] (got {overlap})", parameters=("comms_overlap",))
    rates = rates or chip_rates(hw, precision.compute, kv_dtype=precision.kv)
    if achievable if achievable is not None else (operator_priced(model) or eng.registry_entry):
        rates = at_achievable(rates)
    return Deployment(
        model=model,
        hw=hw,
        rates=rates,
        precision=precision,
        par=par,
        chips=chips_arr if chips_arr.ndim else float(chips_arr),
        memory_utilization=float(memory_utilization),
        price_per_chip_hour=price,
        price_source="command line" if price_per_chip_hour is not None else "hardware spec",
        comms_overlap=overlap,
        engine=eng,
        moe_routing=check_routing(moe_routing),
    )


def operator_priced(model: ModelSpec) -> bool:
    """Whether the model has layers priced by operator terms at the achievable defaults: MoE or MLA."""
    return (model.num_experts > 1 and memory.moe_layer_count(model) > 0) or model.kv_lora_rank is not None


def check_routing(routing: str | None) -> str | None:
    """The MoE routing kind (None: the family's default), refused with the allowed kinds when unknown."""
    if routing is None:
        return None
    from roofline.kernels.moe import parse_routing

    try:
        parse_routing(routing)
    except (ValueError, RooflineError) as exc:
        raise OptionError(f"moe_routing: {exc}", parameters=("moe_routing",)) from None
    return routing
