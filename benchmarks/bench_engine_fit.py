"""Speed of an engine fit through the simulator (issue 25 target: 50 rows in < 60 s on 2 cores).

    python benchmarks/bench_engine_fit.py          # 50 rows, prints seconds (CPU and wall)
    python benchmarks/bench_engine_fit.py --rows 20

The rows are the shared vLLM runs' Llama-2-7B shapes on one H100 (the shipped calibrated profile) at 50
load points (10 rates x 5 workloads) whose "measured" TTFT, TPOT and E2E are the simulator's own at a
known entry (step_host_s 0.3 ms, frontend_out_s 4 ms) with +-3% noise: the fit must find the entry again,
and the time is what a user's fit of 50 rows costs (spread and held-out refits included).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.fit import fit_entry, fit_rows, with_values
from roofline.deploy import engine_terms
from roofline.specs import load_hardware


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=50)
    args = parser.parse_args()
    hw = load_hardware("h100-sxm-cal")
    base = engine_terms(hw, "vllm/0.15.1")
    truth = with_values(base, {"step_host_s": 3e-4, "frontend_out_s": 4e-3})
    stages = [r for r in load_shipped("vllm-serving") if not r.num_failed]
    rng = np.random.default_rng(0)
    rows = []
    for k in range(args.rows):
        st = stages[k % len(stages)]
        rate = float(st.arrival_rate) * (0.5 + 0.1 * (k // len(stages)))
        row = replace(st, id=f"bench/{k}", arrival_rate=rate, num_requests=400, num_failed=0)
        pred = fit_rows([row], hw)[0].predict(truth)
        noise = rng.normal(1.0, 0.03, 3)
        rows.append(
            replace(
                row, ttft_s=pred["ttft_s"] * noise[0], tpot_s=pred["tpot_s"] * noise[1], e2e_s=pred["e2e_s"] * noise[2]
            )
        )
    start, cpu = time.perf_counter(), time.process_time()
    fit = fit_entry("vllm/bench", fit_rows(rows, hw), replace(base, values={**base.values, "step_host_s": 0.0}))
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    print(f"{len(rows)} simulated rows fitted in {wall:.1f} s wall, {used:.1f} s CPU (target < 60 s on 2 cores)")
    print(f"fitted {', '.join(f'{n} {fit.values[n]:.3g} ± {fit.spread.get(n, 0):.2g}' for n in fit.fitted)}")


if __name__ == "__main__":
    main()
