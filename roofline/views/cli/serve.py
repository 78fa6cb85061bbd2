"""`roofline serve`: TTFT, TPOT and cost of static, interleaved, disaggregated or mixed serving engines."""

from __future__ import annotations

import typer

from roofline.analyses.bands import band_line, bands_for
from roofline.analyses.serve import serve
from roofline.core.fmt import format_bytes, format_seconds
from roofline.formulas.serving import MODES
from roofline.views.cli import values
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
from roofline.views.cli.options import (
    ATTENTION_DP,
    BATCH,
    CHIPS,
    COMPUTE,
    ENGINE,
    EP,
    HARDWARE,
    KV_DTYPE,
    MEMORY_UTILIZATION,
    MFU,
    MODEL,
    PP,
    TP,
    WEIGHTS,
    deployment_from_options,
    load_hardware_option,
    load_model_option,
    refuse_without,
)
from roofline.views.explain import explain_serve


def serve_command(
    model: str = MODEL,
    hardware: str = HARDWARE,
    mode: str = typer.Option(
        "disaggregated",
        "--mode",
        parser=values.choice(*MODES),
        help=f"Engine design: {', '.join(MODES)} (default disaggregated, said in the output).",
    ),
    input_len: int = typer.Option(..., "--input-len", "-i", parser=values.count(), help="Prompt tokens."),
    output_len: int = typer.Option(..., "--output-len", "-o", parser=values.count(), help="Generated tokens."),
    chips: int = CHIPS,
    batch: int = BATCH,
    mfu: float = MFU,
    arrival_rate: float = typer.Option(
        None,
        "--arrival-rate",
        "--qps",
        parser=values.rate,
        help="Requests/s (alias --qps): continuous-batching steady state.",
    ),
    prefix_len: int = typer.Option(
        None, "--prefix-len", parser=values.count(), help="Shared-prefix tokens (prefix caching)."
    ),
    prefix_hit_rate: float = typer.Option(
        None,
        "--prefix-hit-rate",
        parser=values.probability,
        help="Share of requests hitting the cache (default 1; needs --prefix-len).",
    ),
    num_prefixes: int = typer.Option(
        None,
        "--num-prefixes",
        parser=values.count(),
        help="Distinct prefixes held in the cache (default 1; needs --prefix-len).",
    ),
    prefix_store: str = typer.Option(
        None,
        "--prefix-store",
        parser=values.choice("hbm", "host"),
        help="Where the cache lives: hbm (default) or host (needs --prefix-len).",
    ),
    draft_model: str = typer.Option(
        None, "--draft-model", parser=values.name, help="Speculative decoding: the draft model."
    ),
    draft_len: int = typer.Option(
        None, "--draft-len", parser=values.count(maximum=1024), help="Speculative decoding: drafted tokens γ."
    ),
    acceptance: float = typer.Option(
        None, "--acceptance", parser=values.probability, help="Speculative decoding: acceptance rate α."
    ),
    weights: str = WEIGHTS,
    kv_dtype: str = KV_DTYPE,
    compute_dtype: str = COMPUTE,
    tp: int = TP,
    pp: int = PP,
    ep: int = EP,
    attention_dp: int = ATTENTION_DP,
    memory_utilization: float = MEMORY_UTILIZATION,
    engine: str = ENGINE,
    explain: bool = EXPLAIN_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Serving-engine design: TTFT, TPOT, tokens/s per chip; optional continuous batching, prefix cache, speculation.

    Example: roofline serve --model llama-3-8b --hardware h100-sxm --mode interleaved -i 2048 -o 512 -b 32
    """
    refuse_without(
        "--prefix-len",
        prefix_len is not None,
        {"--prefix-hit-rate": prefix_hit_rate, "--num-prefixes": num_prefixes, "--prefix-store": prefix_store},
    )
    m, hw = load_model_option(model), load_hardware_option(hardware, compute_dtype=compute_dtype)
    draft = load_model_option(draft_model, "--draft-model") if draft_model else None
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
    )
    res = serve(
        dep,
        mode,
        input_len,
        output_len,
        batch,
        mfu,
        arrival_rate,
        prefix_len,
        1.0 if prefix_hit_rate is None else prefix_hit_rate,
        1 if num_prefixes is None else num_prefixes,
        prefix_store or "hbm",
        draft,
        draft_len,
        acceptance,
    )
    data: dict[str, object] = {
        "model": m.name,
        "hardware": hw.name,
        "input_len": input_len,
        "output_len": output_len,
        "batch": batch,
        **res.as_dict(),
    }
    explanations = explanations_into(data, explain_serve(res, batch, output_len) if explain else [])
    data["bands"] = bands_for(
        dep, {"ttft_s": res.ttft_s, "tpot_s": res.tpot_s, "tokens_per_s_per_chip": res.tokens_per_s_per_chip}
    )

    def render() -> None:
        default = " (the default --mode)" if mode == "disaggregated" else ""
        table = quantity_table(
            f"{m.name} on {chips}x {hw.name} per server, {mode}{default}: {input_len} in, "
            f"{output_len} out, batch {batch}"
        )
        rows = [
            ("TTFT", f"[bold]{format_seconds(res.ttft_s)}[/]"),
            ("TPOT", f"[bold]{format_seconds(res.tpot_s)}[/]"),
            (
                "tokens/s per chip",
                f"{res.tokens_per_s_per_chip:,.1f}"
                if res.fits
                else f"[bold red]none: batch {batch} does not fit[/] ({format_bytes(res.total_bytes)} > usable "
                f"{format_bytes(res.usable_hbm_bytes)}; max batch {res.max_batch:.0f})",
            ),
            ("chips per decode server (+ its prefill share)", f"{res.chips:.2f}"),
            (
                "batch-1 prefill / batch prefill",
                f"{format_seconds(res.prefill_s)} / {format_seconds(res.batch_prefill_s)}",
            ),
            ("decode step at the mean context", format_seconds(res.step_time_s)),
            ("decode stall per prefill (interleaved)", format_seconds(res.decode_stall_s)),
            ("prefill : decode servers", f"{res.prefill_to_decode_ratio:.2f} : 1"),
            ("KV transfer (disaggregated)", format_seconds(res.kv_transfer_s)),
        ]
        if res.tp > 1 or res.pp > 1:
            rows.append(
                (
                    "collectives: prefill / per decode step",
                    f"{format_seconds(res.prefill_comms_s)} / {format_seconds(res.decode_comms_s)}",
                )
            )
        if res.continuous:
            c = res.continuous
            rows += [
                ("continuous: concurrency per replica", f"{c['concurrency_per_replica']:.0f}"),
                ("continuous: decode replicas + prefill servers", f"{c['decode_replicas']} + {c['prefill_servers']}"),
                (
                    "continuous: TTFT (with queueing) / TPOT",
                    f"{format_seconds(c['ttft_s'])} / {format_seconds(c['tpot_s'])}",
                ),
                ("continuous: chips needed", str(c["chips_needed"])),
            ]
        if res.prefix_cache:
            p = res.prefix_cache
            rows += [
                ("prefix: FLOPs saved per request", f"{p['flops_saved_per_request']:.3g}"),
                (
                    "prefix: cache held",
                    f"{format_bytes(p['cache_bytes'])} in {p['cache_store']}"
                    + ("" if p["cache_fits"] else " [bold red](does not fit)[/]"),
                ),
                (
                    "prefix: TTFT without / with cache",
                    f"{format_seconds(p['ttft_without_cache_s'])} / {format_seconds(p['ttft_with_cache_s'])}",
                ),
            ]
        if res.speculative:
            s = res.speculative
            rows += [
                ("speculative: tokens per target step", f"{s['tokens_per_target_step']:.2f}"),
                ("speculative: TPOT / speedup", f"{format_seconds(s['tpot_s'])} / {s['speedup']:.2f}x"),
                ("speculative: stops paying at batch", f"{s['break_even_batch']:.0f}"),
            ]
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(band_line(data["bands"]), highlight=False)  # type: ignore[arg-type]
        if res.continuous:
            console.print(f"[dim]queueing: {res.continuous['queueing_model']}[/]")
        print_assumptions(mfu=mfu, sources=res.sources)
        if explain:
            print_explanations(explanations, "where each number comes from")

    emit(data, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
