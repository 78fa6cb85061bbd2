#!/usr/bin/env bash
# One prepared run for a lent NVIDIA GPU machine (the workplace's `device` tool; run it with
# carry [".whl"] and timeout_s 480): measure this GPU's kernels with `roofline measure --device gpu`,
# fit a profile from them, and score the shipped calibrated profile against them (its evaluate
# output gives the spec sheet's error beside it). Everything lands in $OUT (6 files), so that the
# measurements can be kept in the repo.
#
# The machine has torch, numpy, typer, rich and pyyaml but no pydantic. Make its wheels here first,
# in the repo root (.whl/ is ignored through .git/info/exclude):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
# (the versions of the dev venv's `pip list`; plotly is not needed by these commands).
set -uo pipefail
OUT=${OUT:-/tmp/roofline-device}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
python3 -c 'import pydantic' 2>/dev/null ||
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl >>"$LOG" 2>&1 || { echo "wheel install failed (see log.txt)"; exit 3; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1

roofline() { python3 -c 'import sys; sys.argv[0] = "roofline"; from roofline.cli import main; main()' "$@"; }

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version \
    --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_properties(0))'
} >>"$LOG" 2>&1

start=$SECONDS
roofline measure --device gpu --full --out "$OUT/measured.csv" --json >"$OUT/measure.json" 2>>"$LOG" \
  || { echo "measure failed (see log.txt)"; tail -20 "$LOG"; exit 4; }
echo "measure: $((SECONDS - start)) s" >>"$LOG"
name=$(awk -F, 'NR == 2 { print $1 }' "$OUT/measured.csv")

roofline calibrate fit "$OUT/measured.csv" --out "$OUT/${name}-measured.yaml" --json \
  >"$OUT/fit.json" 2>>"$LOG" || echo "calibrate fit failed (see log.txt)"
roofline calibrate evaluate --profile "${name}-cal" "$OUT/measured.csv" --json \
  >"$OUT/evaluate-shipped.json" 2>>"$LOG" || echo "evaluate failed (see log.txt)"
echo "done in $SECONDS s; files:" && ls -la "$OUT" && tail -5 "$LOG"
