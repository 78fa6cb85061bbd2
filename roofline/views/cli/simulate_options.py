"""The options of `roofline simulate` that no other command shares (declared once, with their parsers)."""

from __future__ import annotations

import typer

from roofline.analyses.simulate.load import MAX_REQUESTS
from roofline.views.cli import values

CONCURRENCY = typer.Option(
    None,
    "--concurrency",
    parser=values.count(maximum=MAX_REQUESTS),
    help="Closed loop: clients, each waiting for its reply.",
)
ARRIVAL_RATE = typer.Option(
    None, "--arrival-rate", "--qps", parser=values.rate, help="Open loop: requests/s (alias --qps; Poisson, see --cv)."
)
TRACE = typer.Option(
    None,
    "--trace",
    parser=values.name,
    help="CSV with columns arrival_time_s, input_len, output_len; optional prefix_id, prefix_len, session_id "
    "(at most 10^6 rows, 128 MiB).",
)
STAGES = typer.Option(
    None,
    "--stages",
    help="Staged load, stages in turn: rate:seconds or cCLIENTS:seconds, e.g. 5:600,10:600 (backlog carried).",
)
STAGE_WARMUP = typer.Option(
    None,
    "--stage-warmup",
    parser=values.seconds_or_zero,
    metavar="TIME",
    help="Staged load: requests sent in each stage's first TIME are not measured (default 0).",
)
WORKLOAD = typer.Option(
    None,
    "--workload",
    help="Shared prefixes: pool:P (P prompts cycled), system:N:M:S (N system prompts of S tokens, M users each) "
    "or chat:S:T (S sessions of T turns; chat:S:T:SYS with a system prompt).",
)
REQUESTS = typer.Option(
    None,
    "--requests",
    "-n",
    parser=values.count(maximum=MAX_REQUESTS),
    help=f"Requests to simulate (default 1000, at most {MAX_REQUESTS:,}; a trace: all).",
)
SEED = typer.Option(0, "--seed", parser=values.count(0), help="Random seed (the run is deterministic for a seed).")
MAX_NUM_SEQS = typer.Option(
    None,
    "--max-num-seqs",
    parser=values.count(maximum=1 << 20),
    help="Most sequences in a step (default: engine's, 256).",
)
MAX_NUM_BATCHED_TOKENS = typer.Option(
    None,
    "--max-num-batched-tokens",
    parser=values.count(maximum=1 << 24),
    help="Token budget per step (default: engine's, 8192).",
)
BLOCK_SIZE = typer.Option(
    16, "--block-size", parser=values.count(maximum=1 << 16), help="KV cache block size in tokens."
)
PREFIX_HIT_RATE = typer.Option(
    None,
    "--prefix-hit-rate",
    parser=values.probability,
    help="Shortcut: this share of every prompt is cached (no cache modelled).",
)
PREFIX_CACHING = typer.Option(
    "on",
    "--prefix-caching",
    parser=values.choice("on", "off"),
    help="Block prefix cache serving the load's shared prefixes: on or off.",
)
POLICY = typer.Option(
    None, "--policy", parser=values.name, help="Scheduling policy: decode-first (vLLM) or prefill-first (SGLang)."
)
PREEMPTION = typer.Option(
    "recompute",
    "--preemption",
    parser=values.choice("recompute", "swap"),
    help="Preempt by recompute or swap (needs --offload-bytes).",
)
EVENT_LOOP = typer.Option(
    "auto",
    "--event-loop",
    parser=values.choice("auto", "python", "compiled"),
    help="auto: long runs of one replica in the compiled loop (same results); python; compiled.",
)
CV = typer.Option(
    None,
    "--cv",
    parser=values.number(0.0, 100.0, open_low=False),
    help="Open loop: coefficient of variation of the gaps (default 1: Poisson).",
)
THINK_TIME = typer.Option(
    None,
    "--think-time",
    parser=values.seconds_or_zero,
    metavar="TIME",
    help="Closed loop: seconds between reply and next send (default 0).",
)
RAMP = typer.Option(
    None,
    "--ramp",
    parser=values.seconds_or_zero,
    metavar="TIME",
    help="Closed loop: start the clients evenly over TIME (default: one client cycle on an idle engine; 0: at once).",
)
TIMEOUT = typer.Option(
    None,
    "--timeout",
    parser=values.seconds,
    metavar="TIME",
    help="Client timeout: a request not finished after TIME is abandoned and counts failed.",
)
FRONTEND_IN = typer.Option(
    None, "--frontend-in", parser=values.seconds_or_zero, metavar="TIME", help="Front end before the queue."
)
FRONTEND_OUT = typer.Option(
    None, "--frontend-out", parser=values.seconds_or_zero, metavar="TIME", help="Front end after each token."
)
SCHEDULE_LAG = typer.Option(
    None, "--schedule-lag", parser=values.count(0, 1), help="1: async scheduling (a new request waits a step)."
)
OFFLOAD_BYTES = typer.Option(
    None,
    "--offload-bytes",
    parser=values.number(0.0, dimension="bytes"),
    metavar="BYTES",
    help="Host-memory KV tier per replica, e.g. 200GB (at most the host DRAM).",
)
OFFLOAD_BANDWIDTH = typer.Option(
    None,
    "--offload-bandwidth",
    parser=values.number(0.0, dimension="bytes/s"),
    help="Host link bandwidth per replica (default: the chip's host link x chips).",
)
DRAFT = typer.Option(None, "--draft", parser=values.name, help="Speculative decoding: draft model, or mtp.")
DRAFT_LEN = typer.Option(
    None, "--draft-len", parser=values.count(1, 16), help="Speculative decoding: drafts per round."
)
ACCEPTANCE = typer.Option(
    None, "--acceptance", help="Speculative decoding: acceptance, one value or one per position (0.8,0.6,0.5)."
)
WARMUP = typer.Option(
    None,
    "--warmup",
    parser=values.count(0, MAX_REQUESTS),
    help="First requests excluded from latencies (default 10%).",
)
REPLICAS = typer.Option(
    1, "--replicas", parser=values.count(maximum=4096), help="Identical replicas (decode replicas when disaggregated)."
)
PREFILL_REPLICAS = typer.Option(
    0, "--prefill-replicas", parser=values.count(0, 4096), help="> 0: disaggregated prefill replicas."
)
BALANCER = typer.Option(
    "round-robin",
    "--balancer",
    parser=values.choice("round-robin", "least-outstanding"),
    help="round-robin or least-outstanding.",
)
HTML = typer.Option(
    None, "--html", help="Write latency CDFs and the batch, queue and KV use over time to this HTML file."
)
REQUESTS_CSV = typer.Option(
    None,
    "--requests-csv",
    help="Write one row per request: arrival, first token, finish, tokens, cached tokens, preemptions, failed.",
)
