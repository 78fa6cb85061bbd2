"""`roofline step` (one decode step) and `roofline request` (TTFT, TPOT, end-to-end)."""

from __future__ import annotations

import typer

from roofline.analyses.request import request_from
from roofline.analyses.step import step_from
from roofline.core.errors import RooflineError
from roofline.core.fmt import format_bytes, format_seconds
from roofline.views.cli._common import (
    EXPLAIN_OPTION,
    JSON_OPTION,
    console,
    emit,
    explanations_into,
    print_assumptions,
    print_explanations,
    quantity_table,
)
from roofline.views.cli.options import (  # noqa: E402  (re-exported: other command modules import them from here)
    ACHIEVABLE,
    ATTENTION_DP,
    BATCH,
    CHIPS,
    COMPUTE,
    CONTEXT,
    ENGINE,
    EP,
    HARDWARE,
    INPUT_LEN,
    KV_DTYPE,
    LENGTHS,
    LENGTHS_CSV,
    MEMORY_UTILIZATION,
    MFU,
    MODEL,
    MOE_ROUTING,
    OUTPUT_LEN,
    PP,
    PRICE,
    TOPOLOGY,
    TP,
    WEIGHTS,
    deployment_from_options,
    load_hardware_option,
    load_model_option,
    precision_from_options,
)

__all__ = ["BATCH", "CHIPS", "COMPUTE", "HARDWARE", "KV_DTYPE", "MODEL", "PRICE", "WEIGHTS", "precision_from_options"]


def why_line(r: dict[str, object], bw_total: float) -> str:
    """One sentence naming the binding term, e.g. 'memory-bound: 26 GB of weights + ...'."""
    if r["bound"] == "network":
        return (
            f"network-bound: {format_seconds(r['comms_time_upper_s'])} of tp-{r['tp']} activation "
            f"collectives exceed the {format_seconds(r['local_step_time_s'])} of HBM and FLOPs work"
        )
    if r["bound"] == "compute":
        return (
            f"compute-bound: {format_seconds(r['compute_time_s'])} of matmul FLOPs exceed "
            f"{format_seconds(r['kv_time_s'] + r['weight_time_s'])} of HBM reads "
            f"(batch is above the critical batch {r['critical_batch']:.0f})"
        )
    if r["replicas"] > 1:  # each replica reads its own weights and its sequences' KV over its chips
        return (
            f"memory-bound: the busiest of {r['replicas']:.0f} replicas reads {format_bytes(r['param_bytes'])} "
            f"of weights + {format_bytes(r['replica_kv_bytes'])} of KV over "
            f"{format_bytes(bw_total / r['replicas'])}/s"
        )
    return (
        f"memory-bound: {format_bytes(r['param_bytes'])} of weights + "
        f"{format_bytes(r['kv_bytes'])} of KV over {format_bytes(bw_total)}/s"
    )


def step_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    chips: int = CHIPS,
    batch: int = BATCH,
    context: int = CONTEXT,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    price: float = PRICE,
    tp: int = TP,
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    moe_routing: str = MOE_ROUTING,
    achievable: str = ACHIEVABLE,
    topology: str = TOPOLOGY,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    explain: bool = EXPLAIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """One decode step: memory, fit, step time, throughput, cost and the binding term.

    Example: roofline step --model llama-2-13b --hardware tpu-v5e --chips 8 --batch 16 --context 8192
    """
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    dep = deployment_from_options(
        m,
        hw,
        chips,
        weights,
        kv_dtype,
        compute_dtype,
        tp,
        pp,
        ep,
        topology,
        memory_utilization,
        price,
        engine,
        attention_dp,
        moe_routing,
        achievable,
    )
    prec = dep.precision
    res = step_from(dep, batch, context)
    data: dict[str, object] = {
        "model": m.name,
        "hardware": hw.name,
        "chips": chips,
        "batch": batch,
        "context": context,
        "weights": prec.weights,
        "kv_dtype": prec.kv,
        "compute_dtype": prec.compute,
        "weight_dtypes": prec.describe(),
        "compute_dtypes": prec.describe_compute(),
        **{k: _scalar(v) for k, v in res.as_dict().items()},
    }
    data["max_batch"], data["min_chips"] = int(data["max_batch"]), int(data["min_chips"])
    data["terms"] = named_terms(data)
    if not data["fits"]:  # a configuration that does not fit gets no throughput (the keys stay, null)
        for key in ("tokens_per_s", "tokens_per_s_per_chip", "cost_per_million_tokens"):
            data[key] = None
    bw_total = dep.rates.hbm_bandwidth_bytes_per_s * chips
    data["why"] = why_line(data, bw_total)
    if explain:
        from roofline.views.explain import explain_step  # only when asked: keeps start-up lean
    explanations = explanations_into(data, explain_step(dep, batch, context, res) if explain else [])

    def render() -> None:
        table = quantity_table(
            f"{m.name} on {chips}x {hw.name}, batch {batch}, context {context}, "
            f"{prec.describe()} weights / {prec.kv} KV / {prec.describe_compute()} FLOPs"
        )
        busiest = f"; {data['replica_batch']:.0f} on one replica" if data["replicas"] > 1 else ""
        fits = "yes" if data["fits"] else f"[bold red]NO[/] (over by {format_bytes(data['overflow_bytes'])}{busiest})"
        rows = [
            (
                "parameters (total / active)",
                f"{data['param_count'] / 1e9:.2f} B / {data['active_param_count'] / 1e9:.2f} B",
            ),
            ("weights", format_bytes(data["param_bytes"])),
            ("KV per token", format_bytes(data["kv_bytes_per_token"])),
            ("KV cache (batch)", format_bytes(data["kv_bytes"])),
            (
                "total memory / usable HBM",
                f"{format_bytes(data['total_bytes'])} / {format_bytes(data['usable_hbm_bytes'])}",
            ),
            ("fits", fits),
            ("max batch at this context", f"{data['max_batch']:.0f}"),
            ("min chips for this batch", f"{data['min_chips']:.0f}"),
            ("critical batch", f"{data['critical_batch']:.0f}"),
            ("step time (prediction)", f"[bold]{format_seconds(data['step_time_s'])}[/]"),
            ("step time (all-bandwidth bound)", format_seconds(data["min_step_time_s"])),
            (
                "  attention / GEMMs",
                f"{format_seconds(data['attention_time_s'])} / {format_seconds(data['gemm_time_s'])}",
            ),
            (
                "  KV read / weight load / matmul",
                f"{format_seconds(data['kv_time_s'])} / {format_seconds(data['weight_time_s'])} / "
                f"{format_seconds(data['compute_time_s'])}",
            ),
            *(
                [
                    ("tokens/s", f"{data['tokens_per_s']:,.1f}"),
                    ("tokens/s per chip", f"{data['tokens_per_s_per_chip']:,.1f}"),
                    ("$ per million tokens", f"{data['cost_per_million_tokens']:.3f}"),
                ]
                if data["fits"]
                else [("tokens/s", "none: does not fit")]
            ),
            ("bound", f"[bold yellow]{data['bound']}[/]"),
        ]
        if data["tp"] > 1 or data["pp"] > 1:
            rows[-1:-1] = [
                (f"collectives (tp {data['tp']}, pp {data['pp']})", format_seconds(data["comms_time_upper_s"])),
                ("step without collectives", format_seconds(data["local_step_time_s"])),
                (
                    "bounds: overlapped / serialized",
                    f"{format_seconds(data['step_time_lower_s'])} / {format_seconds(data['step_time_upper_s'])}",
                ),
            ]
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(data["why"])
        console.print(f"[dim]hardware: {data['sources']['hardware']}[/]", highlight=False)
        print_assumptions(sources=data["sources"])
        if explain:
            print_explanations(explanations, "where each number comes from")

    emit(data, as_json, render)


def request_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    input_len: int = INPUT_LEN,
    output_len: int = OUTPUT_LEN,
    lengths: str = LENGTHS,
    lengths_csv: str = LENGTHS_CSV,
    chips: int = CHIPS,
    batch: int = BATCH,
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    mfu: float = MFU,
    tp: int = TP,
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    moe_routing: str = MOE_ROUTING,
    achievable: str = ACHIEVABLE,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    explain: bool = EXPLAIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """A whole request: TTFT, TPOT and end-to-end latency, with and without a KV cache.

    Example: roofline request --model llama-3-8b --hardware h100-sxm --input-len 2048 --output-len 256
    """
    from roofline.analyses.bands import band_line, bands_for
    from roofline.analyses.lengths import (  # request only: keeps `step` start-up lean
        averaged_request,
        lengths_from_options,
    )

    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    dep = deployment_from_options(
        m,
        hw,
        chips,
        weights,
        kv_dtype,
        compute_dtype,
        tp,
        pp,
        ep,
        None,
        memory_utilization,
        engine=engine,
        attention_dp=attention_dp,
        moe_routing=moe_routing,
        achievable=achievable,
    )
    dist = lengths_from_options(input_len, output_len, lengths, lengths_csv, m)
    data: dict[str, object]
    if dist.input_len.size > 1:
        if explain:
            raise RooflineError("--explain needs one fixed length (--input-len and --output-len)")
        means = averaged_request(dep, dist, batch=batch, mfu=mfu)
        data = {
            "model": m.name,
            "hardware": hw.name,
            "chips": chips,
            "batch": batch,
            "lengths": dist.source,
            "points": int(dist.input_len.size),
            **means,
        }
    else:
        res = request_from(dep, dist.input_len[0], dist.output_len[0], batch, mfu)
        data = {
            "model": m.name,
            "hardware": hw.name,
            "chips": chips,
            "batch": batch,
            **{k: _scalar(v) for k, v in res.as_dict().items()},
        }
    shape = (
        f"{input_len} in, {output_len} out"
        if input_len is not None
        else f"mean over {dist.source}: {dist.mean_input:.0f} in, {dist.mean_output:.0f} out"
    )
    if explain:
        from roofline.views.explain import explain_request  # only when asked: keeps start-up lean
    explanations = explanations_into(data, explain_request(dep, batch, mfu, res) if explain else [])
    keys = ("ttft_s", "client_ttft_s", "tpot_s", "tokens_per_s_per_chip")
    data["bands"] = bands_for(dep, {k: float(data[k]) for k in keys if isinstance(data.get(k), (int, float))})

    def render() -> None:
        table = quantity_table(f"{m.name} on {chips}x {hw.name}: {shape}, batch {batch}")
        bound = " (spec bound)" if dep.rates.calibrated else ""  # the book's comparison: spec peaks
        client = bool(data.get("frontend_s"))  # the entry's front end: the client's figures are longer
        for label, key in (
            ("TTFT (prefill)", "ttft_s"),
            *((("TTFT at the client (+ front end)", "client_ttft_s"),) if client else ()),
            ("TPOT (mean)", "tpot_s"),
            ("first / last decode step", None),
            ("end-to-end latency", "latency_s"),
            *((("end-to-end at the client", "client_latency_s"),) if client else ()),
            (f"without KV cache{bound}", "no_cache_latency_s"),
        ):
            if key is None:
                table.add_row(
                    label, f"{format_seconds(data['first_step_time_s'])} / {format_seconds(data['last_step_time_s'])}"
                )
            else:
                table.add_row(label, format_seconds(data[key]))
        table.add_row(f"no-cache slowdown{bound}", f"{data['no_cache_slowdown']:.1f}x")
        table.add_row(
            "output tokens/s per chip",
            f"{data['tokens_per_s_per_chip']:,.1f}" if data["fits"] == 1 else "none: does not fit",
        )
        if data.get("tp", 1) > 1 or data.get("pp", 1) > 1:
            table.add_row(
                "collectives: prefill / per decode step",
                f"{format_seconds(data['prefill_comms_s'])} / {format_seconds(data['decode_comms_s'])}",
            )
        table.add_row("fits at the final context", "yes" if data["fits"] == 1 else "[bold red]NO[/]")
        console.print(table)
        console.print(band_line(data["bands"]), highlight=False)  # type: ignore[arg-type]
        print_assumptions(mfu=mfu, sources=data.get("sources"), memory_utilization=memory_utilization)
        if explain:
            print_explanations(explanations, "where each number comes from")

    emit(data, as_json, render)


#: The named terms of a step in ``step --json``'s ``terms`` object: its key -> the result's field (seconds).
NAMED_TERMS = {
    "attention_s": "attention_time_s",
    "mla_s": "mla_time_s",
    "mla_bmm_s": "mla_bmm_time_s",
    "gemm_s": "gemm_time_s",
    "dense_gemm_s": "dense_gemm_time_s",
    "moe_s": "moe_time_s",
    "small_kernels_s": "small_kernels_time_s",
    "comms_s": "comms_time_upper_s",
    "moe_comms_s": "moe_comms_time_s",
    "comms_exposed_s": "comms_exposed_s",
    "engine_overhead_s": "overhead_time_s",
    "engine_host_s": "engine_host_s",
    "pipeline_bubble_s": "pipeline_bubble_s",
}


def named_terms(data: dict[str, object]) -> dict[str, object]:
    """The step's named terms (seconds per step) from its result's fields: what makes up the step time."""
    return {key: data[field] for key, field in NAMED_TERMS.items() if field in data}


def _scalar(value: object) -> object:
    """0-d numpy values to Python scalars for display and JSON."""
    if hasattr(value, "ndim") and value.ndim == 0:
        return value.item()
    return value


def register(app: typer.Typer) -> None:
    app.command("step")(step_command)
    app.command("request")(request_command)
