"""Fuzzing every CLI option of every command: a bad value is one line naming the flag, exit 2.

The commands and their options are read from the CLI itself, so an option added later must get
an entry in :data:`KINDS` (or :data:`NOT_FUZZED`, with the reason) before this suite passes.
Each case starts from a valid command line (:data:`BASE`), replaces one option's value with a
bad one drawn by hypothesis, runs ``roofline`` in-process in an empty folder, and asserts: exit
status 2, nothing on stdout, one line on stderr naming the flag, no traceback, no file left.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.views.cli import register_commands
from tests.inprocess import assert_refused, run_roofline

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = str(REPO / "examples" / "hf" / "Meta-Llama-3.1-8B" / "config.json")
FEW = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# --------------------------------------------------------------------------- the commands


def _leaves() -> dict[str, object]:
    """'plan' / 'calibrate fit' -> its click command, for every command of the CLI."""
    from typer.main import get_command

    out: dict[str, object] = {}

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out[" ".join(path)] = cmd

    walk(get_command(register_commands()), [])
    return out


COMMANDS = _leaves()

#: A valid command line per command (what the bad value replaces one option of).
M, H = ["--model", "llama-3-8b"], ["--hardware", "h100-sxm"]
BASE: dict[str, list[str]] = {
    "step": [*M, *H],
    "request": [*M, *H, "-i", "128", "-o", "16"],
    "textbook": ["--only", "crit-batch"],
    "plan": [*M, *H, "--qps", "1", "-i", "128", "-o", "16", "--weights", "bf16", "--kv-dtype", "bf16"],
    "inverse": [*M, *H, "--tpot-slo", "10ms"],
    "diff": [*M, *H, "--with", "chips=2"],
    "collective": ["--op", "allgather", "--bytes", "1e6", "--hardware", "tpu-v5e", "--devices", "8"],
    "shard": ["--model", "book-exercise", "--hardware", "tpu-v5e", "--chips", "16"],
    "serve": [*M, *H, "-i", "128", "-o", "16"],
    "sweep": [*M, *H, "--batch", "1,8", "--chips", "1"],
    "pareto": [*M, *H, "--batch", "1,8", "--chips", "1"],
    "report": ["--models", "llama-3-8b", "--hardware", "h100-sxm", "--batch", "1", "--chips", "1", "--no-tails"],
    "simulate": [*M, *H, "--arrival-rate", "1", "-i", "64", "-o", "8", "--requests", "20"],
    "validate": ["--source", "splitwise"],
    "calibrate fit": ["missing.csv", "--out", "p.yaml"],
    "calibrate evaluate": ["missing.csv", "--profile", "h100-sxm"],
    "calibrate import": ["missing.csv", "--out", "t.csv"],
    "measure": ["--out", "m.csv"],
    "e2e import": ["missing.json", "--out", "r.csv", "--hardware", "h100-sxm"],
    "e2e list": [],
    "hardware list": [],
    "hardware show": ["h100-sxm"],
    "hardware add": ["missing.yaml"],
    "model list": [],
    "model show": ["llama-3-8b"],
    "model add": ["missing.yaml"],
    "model import": [EXAMPLE_CONFIG],
}

# --------------------------------------------------------------------------- bad values by kind

HUGE = st.sampled_from([str(10**22), str(10**30), "1" + "0" * 400, "1e400"])
NOT_NUMBERS = st.sampled_from(["abc", "", " ", "nan", "inf", "-inf", "1,2", "0x10", "true", "1e400", "∞"])


def _out_of(low: float, high: float) -> st.SearchStrategy[str]:
    """Finite numbers outside [low, high], as text."""
    return (
        st.one_of(
            st.floats(max_value=low, exclude_max=True, allow_nan=False, allow_infinity=False),
            st.floats(min_value=high, exclude_min=True, allow_nan=False, allow_infinity=False),
        )
        .filter(math.isfinite)
        .map(repr)
    )


def count(low: int = 1, high: int = 2**31 - 1) -> st.SearchStrategy[str]:
    return st.one_of(
        NOT_NUMBERS,
        HUGE,
        st.integers(max_value=low - 1).map(str),
        st.integers(min_value=high + 1).map(str),
        st.sampled_from(["1.5", "2.25", "1 GB"]),
    )


def number(low: float, high: float, *units: str) -> st.SearchStrategy[str]:
    return st.one_of(NOT_NUMBERS, HUGE, _out_of(low, high), st.sampled_from([*units] or ["abc"]))


# No "bf16 ": --weights/--compute-dtype are component lists ("fp8,experts=nvfp4"), which trim the
# spaces around each item as every list option does.
DTYPES = st.sampled_from(["bf17", "int3", "BF16", "", "fp64", "fp8,experts=bf17"])
PATHS_OUT = st.sampled_from(["folder/", "exists-dir", "afile/x.out"])  # see _prepare
NAMES = st.sampled_from(["", "  ", "no-such-thing-xyz", "a\nb", "x" * 300])
LISTS = st.sampled_from(["", ",", "1,,2", "0", "-1", "1..", "..8", "4..2", "a", str(10**22), "1.5", "1..2..4"])
DTYPE_LISTS = st.sampled_from(["", ",", "bf16,,int8", "bf17", "bf16,int3"])
NAME_LISTS = st.sampled_from(["", ",", "h100-sxm,,tpu-v5e", "no-such-chip"])
PRICE_LISTS = st.sampled_from(
    ["nan", "inf", "1e400", "0", "-1", "abc", "h100-sxm=nan", "nope=1", "", "1,,2", "h100-sxm=", "=2"]
)

KINDS: dict[str, st.SearchStrategy[str]] = {
    "count": count(),
    "count0": count(0),
    "degree": count(1, 2**31 - 1),
    "fraction": number(0, 1),
    "probability": number(0, 1),
    "price": number(0, 1e6, "2 GB", "3 s"),
    "rate": number(0, 1e9, "5 GB", "3 ms"),
    "seconds": number(0, 1e7, "50 GB", "5 GB/s", "1 TFLOP/s", "3 ks"),
    "seconds0": st.sampled_from(["-1", "nan", "inf", "1e400", "50 GB", "abc", ""]),
    "bytes": number(0, 1e21, "360 ms", "5 GB/s", "16 G", "2 us"),
    "bytes/s": number(0, 1e21, "5 ms", "80 GB", "1 TFLOP/s"),
    "cv": number(0, 100),
    "dtype": DTYPES,
    "optional_dtype": st.sampled_from(["bf17", "int3", "BF16", "fp64"]),
    "name": NAMES,
    "topology": st.sampled_from(["", "4y4", "0x4", "4x", "x", "4x4x", str(10**30) + "x2"]),
    "int_list": LISTS,
    "dtype_list": DTYPE_LISTS,
    "name_list": NAME_LISTS,
    "price_list": PRICE_LISTS,
    "choice": st.sampled_from(["nope", "", "ALL", "static "]),
    "objective": st.sampled_from(["nope", "", ",", "latency-throughput,,cost-latency"]),
    "path_out": PATHS_OUT,
    "path_in": st.sampled_from(["missing-file.csv", "exists-dir"]),
    "lengths": st.sampled_from(["1:2:nan", "0:5", "abc", "1e400:2", "1:2:3:4", "", "5:-1", "1:2:-3", ",", "1:2,,3:4"]),
    "overrides": st.sampled_from(
        [
            "foo=1",
            "batch=0",
            "price=nan",
            "chips",
            "",
            "context=1e400",
            "weights=bf17",
            "memory_utilization=2",
            "tp=" + str(10**22),
        ]
    ),
    "axes": st.sampled_from(["a", "-1", "0,,1", "99", ""]),
    "only": st.sampled_from(["no-such-case", "zzz"]),
    "catalog_name": st.sampled_from(["", "Has Space", "a/b", "x" * 80, "llama-3-8b.yaml", "UPPER"]),
    "text_match": st.sampled_from(["no-such-source-xyz"]),
    "stages": st.sampled_from(["5:-600", "abc", "", "c0:10", "5:0", ",", "5:nan", "1e400:10", "c1.5:10"]),
    "workload": st.sampled_from(["pool:0", "abc", "", "system:1:1", "chat:0:1", "pool:x", "pool:1e400"]),
    "acceptance_list": st.sampled_from(["", "1.5", "abc", "0.5,,0.2", "nan", "-0.1"]),
}

#: (command, flag) -> kind; a flag without a command ("*") holds for every command that has it.
KINDS_BY_FLAG: dict[tuple[str, str], str] = {
    ("*", "--model"): "name",
    ("*", "--hardware"): "name",
    ("*", "--draft-model"): "name",
    ("*", "--chips"): "count",
    ("*", "--batch"): "count",
    ("*", "--context"): "count",
    ("*", "--tp"): "count",
    ("*", "--pp"): "count",
    ("*", "--ep"): "count",
    ("*", "--attention-dp"): "count",
    ("*", "--input-len"): "count",
    ("*", "--output-len"): "count",
    ("*", "--devices"): "count",
    ("*", "--weights"): "dtype",
    ("*", "--kv-dtype"): "dtype",
    ("*", "--compute-dtype"): "dtype",
    ("*", "--price"): "price",
    ("*", "--memory-utilization"): "fraction",
    ("*", "--mfu"): "fraction",
    ("*", "--topology"): "topology",
    ("*", "--qps"): "rate",
    ("*", "--arrival-rate"): "rate",
    ("*", "--ttft-slo"): "seconds",
    ("*", "--tpot-slo"): "seconds",
    ("*", "--lengths"): "lengths",
    ("*", "--lengths-csv"): "path_in",
    ("*", "--csv"): "path_out",
    ("*", "--html"): "path_out",
    ("*", "--out"): "path_out",
    ("*", "--report"): "path_out",
    # list options of the sweeping commands
    **{
        (c, f): k
        for c in ("sweep", "pareto", "report")
        for f, k in (
            ("--batch", "int_list"),
            ("--chips", "int_list"),
            ("--context", "int_list"),
            ("--tp", "int_list"),
            ("--pp", "int_list"),
            ("--weights", "dtype_list"),
            ("--kv-dtype", "dtype_list"),
            ("--hardware", "name_list"),
            ("--price", "price_list"),
        )
    },
    ("report", "--models"): "name_list",
    ("report", "--scenario"): "path_in",
    ("plan", "--hardware"): "name_list",
    ("plan", "--weights"): "dtype_list",
    ("plan", "--kv-dtype"): "dtype_list",
    ("plan", "--tp"): "int_list",
    ("plan", "--pp"): "int_list",
    ("plan", "--price"): "price_list",
    ("plan", "--max-chips"): "count",
    ("plan", "--top"): "count",
    ("plan", "--percentile"): "choice",
    ("plan", "--load-profile"): "path_in",
    ("plan", "--trough"): "probability",
    ("plan", "--confidence"): "probability",
    ("plan", "--min-replicas"): "count0",
    ("plan", "--load-bandwidth"): "bytes/s",
    ("plan", "--spare"): "count0",
    ("plan", "--spare-nodes"): "count0",
    ("plan", "--node-chips"): "count",
    ("plan", "--max-replicas"): "count",
    ("plan", "--executor"): "choice",
    ("plan", "--workers"): "count",
    ("plan", "--ray-address"): "name",
    ("plan", "--requests"): "count",
    ("textbook", "--only"): "only",
    ("diff", "--with"): "overrides",
    ("collective", "--op"): "choice",
    ("collective", "--bytes"): "bytes",
    ("collective", "--axes"): "axes",
    ("collective", "--dcn-bandwidth"): "bytes/s",
    ("shard", "--expert-ways"): "count",
    ("serve", "--mode"): "choice",
    ("serve", "--prefix-len"): "count",
    ("serve", "--prefix-hit-rate"): "probability",
    ("serve", "--num-prefixes"): "count",
    ("serve", "--prefix-store"): "choice",
    ("serve", "--draft-len"): "count",
    ("serve", "--acceptance"): "probability",
    ("pareto", "--objective"): "objective",
    ("pareto", "-o"): "objective",
    ("pareto", "--group"): "choice",
    ("simulate", "--concurrency"): "count",
    ("simulate", "--trace"): "path_in",
    ("simulate", "--requests"): "count",
    ("simulate", "--seed"): "count0",
    ("simulate", "--max-num-seqs"): "count",
    ("simulate", "--max-num-batched-tokens"): "count",
    ("simulate", "--block-size"): "count",
    ("simulate", "--prefix-hit-rate"): "probability",
    ("simulate", "--cv"): "cv",
    ("simulate", "--think-time"): "seconds0",
    ("simulate", "--ramp"): "seconds0",
    ("simulate", "--warmup"): "count0",
    ("simulate", "--replicas"): "count",
    ("simulate", "--prefill-replicas"): "count0",
    ("simulate", "--balancer"): "choice",
    ("simulate", "--stages"): "stages",
    ("simulate", "--stage-warmup"): "seconds0",
    ("simulate", "--workload"): "workload",
    ("simulate", "--prefix-caching"): "choice",
    ("simulate", "--policy"): "name",
    ("simulate", "--preemption"): "choice",
    ("simulate", "--event-loop"): "choice",
    ("simulate", "--timeout"): "seconds",
    ("simulate", "--frontend-in"): "seconds0",
    ("simulate", "--frontend-out"): "seconds0",
    ("simulate", "--schedule-lag"): "count0",
    ("simulate", "--offload-bytes"): "bytes",
    ("simulate", "--offload-bandwidth"): "bytes/s",
    ("simulate", "--draft"): "name",
    ("simulate", "--draft-len"): "count",
    ("simulate", "--acceptance"): "acceptance_list",
    ("simulate", "--requests-csv"): "path_out",
    ("validate", "--source"): "text_match",
    ("validate", "--rows"): "path_in",
    ("calibrate fit", "--dtype"): "optional_dtype",
    ("calibrate fit", "--max-rows"): "count",
    ("calibrate fit", "--seed"): "count0",
    ("calibrate fit", "--op"): "choice",
    ("calibrate fit", "--save"): "catalog_name",
    ("calibrate evaluate", "--profile"): "name",
    ("calibrate evaluate", "--dtype"): "optional_dtype",
    ("measure", "--device"): "choice",
    ("e2e import", "--format"): "choice",
    ("e2e import", "--dp"): "count",
    ("e2e list", "--source"): "text_match",
    ("hardware add", "--name"): "catalog_name",
    ("model add", "--name"): "catalog_name",
    ("model import", "-o"): "path_out",
}
#: Options not fuzzed, with why (booleans cannot be bad; free text is any text).
NOT_FUZZED: dict[tuple[str, str], str] = {
    **{
        ("*", f): "an on/off flag"
        for f in (
            "--json",
            "--explain",
            "--wide",
            "--full",
            "--force",
            "--cases",
            "--wraparound",
            "--save",
            "--help",
            "--holdout",
            "--scale-out-tp",
            "--diurnal",
            "--mix",
        )
    },
    ("*", "--spec-speed"): "one of two words; another is refused with both (typer choice)",
    ("*", "--moe-routing"): "a routing kind; an unknown one is refused with the kinds (tests/test_attention_dp.py)",
    ("*", "--engine"): "a profile's engine key; an unknown one is refused with the keys the profile has "
    "(tests/test_engine_legacy.py)",
    ("report", "--traces"): "bound,prediction; checked by the report (tests/test_report.py)",
    ("report", "--tails"): "an on/off flag (--tails/--no-tails)",
    ("report", "--compare"): "an on/off flag; its two entries are arguments (tests/test_report_cli.py)",
    ("model import", "--name"): "any one-line name (checked by the model spec it becomes)",
    ("e2e import", "--hardware"): "free text naming the rows' hardware",
    ("e2e import", "--model"): "free text naming the rows' model",
    ("e2e import", "--engine"): "free text",
    ("e2e import", "--engine-version"): "free text",
    ("e2e import", "--source"): "free text",
    ("e2e import", "--license"): "free text",
    ("e2e import", "--input-len"): "checked, but only after the input file is read",
    ("e2e import", "--prefix-hit-rate"): "a number in [0, 1) checked by its parser (values.number)",
    ("e2e import", "--timeout"): "a number of seconds > 0 checked by its parser (values.number)",
    ("e2e import", "--output-len"): "checked, but only after the input file is read",
    ("calibrate import", "--hardware"): "free text naming the rows' hardware",
    ("calibrate fit", "--hardware"): "loaded before the measurements; a missing file names itself",
    ("report", "--models"): "roofline/cli/report.py belongs to the report helper",
    ("report", "--hardware"): "roofline/cli/report.py belongs to the report helper",
    ("report", "--out"): "roofline/cli/report.py belongs to the report helper (it creates folders)",
}


def kind_of(command: str, flag: str) -> str | None:
    return KINDS_BY_FLAG.get((command, flag), KINDS_BY_FLAG.get(("*", flag)))


def _not_fuzzed(command: str, flag: str) -> bool:
    return (command, flag) in NOT_FUZZED or ("*", flag) in NOT_FUZZED


def _options(command: str) -> list[tuple[str, tuple[str, ...]]]:
    """(first flag, every flag) of each option of ``command``."""
    out = []
    for param in COMMANDS[command].params:  # type: ignore[attr-defined]
        if param.param_type_name == "option":
            out.append((param.opts[0], tuple(param.opts) + tuple(param.secondary_opts)))
    return out


CASES = [
    (c, flag, names)
    for c in sorted(COMMANDS)
    for flag, names in _options(c)
    if not _not_fuzzed(c, flag) and kind_of(c, flag) is not None
]


def test_every_command_and_option_is_fuzzed_or_exempted():
    assert set(BASE) == set(COMMANDS), set(COMMANDS) ^ set(BASE)
    missing = [(c, f) for c in COMMANDS for f, _ in _options(c) if kind_of(c, f) is None and not _not_fuzzed(c, f)]
    assert not missing, f"give these options a kind in KINDS_BY_FLAG (or a reason in NOT_FUZZED): {missing}"


# --------------------------------------------------------------------------- running a case


def _prepare(folder: Path, value: str) -> str:
    """Paths in a fresh folder: 'exists-dir' an existing folder, 'afile/x.out' under a file."""
    (folder / "exists-dir").mkdir()
    (folder / "afile").write_text("not a folder\n")
    return value


def _with_value(args: list[str], names: tuple[str, ...], value: str) -> list[str]:
    """``args`` with the option (any of its names) set to ``value`` (added when absent)."""
    out, i, replaced = [], 0, False
    while i < len(args):
        if args[i] in names:
            out += [args[i], value]
            i, replaced = i + 2, True
        else:
            out.append(args[i])
            i += 1
    return out if replaced else [*out, names[0], value]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "flag", "names"), CASES, ids=[f"{c}:{f}" for c, f, _ in CASES])
@FEW
@given(data=st.data())
def test_a_bad_value_is_one_line_naming_the_flag(command, flag, names, data):
    value = data.draw(KINDS[kind_of(command, flag)], label="value")
    base = list(BASE[command])
    if flag == "--axes":
        base = ["--op", "allgather", "--bytes", "1e6", "--hardware", "tpu-v5e", "--topology", "4x4"]
    args = [*command.split(), *_with_value(base, names, value)]
    saved = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _prepare(folder, value)
        before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
        os.chdir(folder)
        try:
            run = run_roofline(*args)
        finally:
            os.chdir(saved)
        after = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    assert_refused(run)
    assert any(n in run.stderr for n in names), (names, run.stderr)
    assert after == before, f"left behind: {sorted(set(after) - set(before))}"


def test_usage_errors_are_one_line_too():
    for args, needle in (
        (("step", "--model", "llama-3-8b"), "--hardware"),
        (("step", "--bogus"), "--bogus"),
        (("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm"), "--qps"),
        (("nosuchcommand",), "nosuchcommand"),
    ):
        run = run_roofline(*args)
        assert_refused(run, needle)


def test_the_issue_cases():
    """Each input named in issue 12 and 14: one line naming the flag (the value where it helps)."""
    cases = [
        (("step", *M, *H, "--batch", str(10**22)), "--batch"),
        (("sweep", *M, *H, "--batch", f"1..{10**22}"), "--batch"),
        (("step", *M, *H, "--chips", str(10**30)), "--chips"),
        (("step", *M, *H, "--context", str(10**30)), "--context"),
        (("step", *M, *H, "--tp", str(10**30)), "--tp"),
        (("step", *M, "--hardware", "tpu-v5e", "--topology", f"{10**30}x2"), "--topology"),
        (("plan", *M, *H, "--qps", "1", "-i", str(10**30), "-o", "10"), "--input-len"),
        (("plan", *M, *H, "--qps", "inf", "-i", "100", "-o", "10"), "--qps"),
        (("serve", *M, *H, "-i", "100", "-o", "0"), "--output-len"),
        (("serve", *M, *H, "-i", "100", "-o", "-1"), "--output-len"),
        (("serve", *M, *H, "-i", "100", "-o", "10", "--prefix-len", "10", "--num-prefixes", "-1"), "--num-prefixes"),
        (("plan", *M, *H, "--qps", "1", "-i", "100", "-o", "10", "--ttft-slo", "1e400"), "--ttft-slo"),
        (
            ("collective", "--op", "allgather", "--bytes", "360 ms", "--hardware", "tpu-v5e", "--devices", "8"),
            "--bytes",
        ),
        (("plan", *M, *H, "--qps", "1", "-i", "100", "-o", "10", "--tpot-slo", "50 GB"), "--tpot-slo"),
        (
            (
                "collective",
                "--op",
                "allgather",
                "--bytes",
                "1e6",
                "--hardware",
                "tpu-v5e",
                "--devices",
                "8",
                "--dcn-bandwidth",
                "50 GB",
            ),
            "--dcn-bandwidth",
        ),
        (("step", *M, "--hardware", "tpu-v5e", "--topology", ""), "--topology"),
        (
            (
                "collective",
                "--op",
                "allgather",
                "--bytes",
                "1e6",
                "--hardware",
                "tpu-v5e",
                "--devices",
                "8",
                "--axes",
                "0",
            ),
            "--axes",
        ),
        (("sweep", *M, *H, "--weights", "bf16,,int8", "--batch", "1"), "--weights"),
        (
            ("calibrate", "fit", "builtin:h100-sxm", "--hardware", "h100-sxm", "--dtype", "bf17", "--out", "p.yaml"),
            "--dtype",
        ),
        (("textbook", "--only", "no-such-case"), "--only"),
    ]
    for price in ("nan", "inf", "1e400"):
        cases += [
            (("step", *M, *H, "--price", price), "--price"),
            (("diff", *M, *H, "--with", f"price={price}"), "price"),
            (("plan", *M, *H, "--qps", "1", "-i", "100", "-o", "10", "--price", price), "--price"),
            (("sweep", *M, *H, "--batch", "1", "--price", price), "--price"),
            (("pareto", *M, *H, "--batch", "1", "--price", price), "--price"),
            (("report", "--price", price, "--out", "never.html"), "--price"),
        ]
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.getcwd()
        os.chdir(tmp)
        try:
            for args, needle in cases:
                assert_refused(run_roofline(*args), needle)
            assert not list(Path(tmp).iterdir())
        finally:
            os.chdir(saved)


def test_output_paths_are_all_checked_before_any_is_written(tmp_path):
    # Issue 12: `calibrate fit --out p.yaml --report DIR/` wrote p.yaml, then failed on the report path.
    folder = tmp_path / "reports"
    folder.mkdir()
    run = run_roofline(
        "calibrate",
        "fit",
        "builtin:h100-sxm",
        "--hardware",
        "h100-sxm",
        "--out",
        str(tmp_path / "p.yaml"),
        "--report",
        f"{folder}/",
    )
    assert_refused(run, "--report", "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


def test_sweep_says_which_combinations_it_skipped():
    # 4x4 and 2x8 slices with tp 4 and 16: a tp group spans leading axes, so 2x8 allows tp 1, 2 and 16
    # (not 4): 3 of the 4 (slice, tp) pairs run, and the fourth is named with the reason.
    run = run_roofline(
        "sweep",
        "--model",
        "llama-2-13b",
        "--hardware",
        "tpu-v5e",
        "--topology",
        "4x4,2x8",
        "--tp",
        "4,16",
        "--batch",
        "1,8",
        "--json",
    )
    assert run.code == 0, run.stderr
    import json

    data = json.loads(run.stdout)
    assert data["evaluated"] == 6
    assert data["skipped"] == ["topology 2x8 with tp 4: a tp group spans leading axes, so tp must be one of 1, 2, 16"]


def test_a_grid_beyond_the_memory_budget_is_refused_before_allocating():
    # 4096 batches x 2048 contexts of a model that fits everywhere: 8.4 M points > the 2 M budget.
    run = run_roofline(
        "sweep",
        "--model",
        "llama-3-8b",
        "--hardware",
        "b200",
        "--chips",
        "8",
        "--batch",
        ",".join(map(str, range(1, 4097))),
        "--context",
        ",".join(map(str, range(1, 2049))),
    )
    assert_refused(run, "2,000,000", "smaller grid")


def test_python_api_errors_name_the_parameter_not_the_flag():
    import roofline as rl
    from roofline.core.errors import OptionError

    model, chip = rl.load_model("llama-3-8b"), rl.load_hardware("h100-sxm")
    for kwargs, name in (
        ({"batch": 0}, "batch"),
        ({"chips": 0}, "chips"),
        ({"context": -1}, "context"),
        ({"price_per_chip_hour": float("nan")}, "price_per_chip_hour"),
        ({"memory_utilization": 2.0}, "memory_utilization"),
        ({"tp": 3, "chips": 4}, "tp"),
    ):
        with pytest.raises(OptionError) as err:
            rl.decode_step(model, chip, **kwargs)
        assert str(err.value).startswith(name), str(err.value)
        assert "--" not in str(err.value), str(err.value)
    # The CLI says the flag for the same mistake.
    assert_refused(run_roofline("step", *M, *H, "--tp", "3", "--chips", "4"), "--tp 3 must divide --chips 4")
