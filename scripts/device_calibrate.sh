#!/usr/bin/env bash
# The one command for the device machine: build the calibration microbenchmarks, run them all
# (median of several runs each), verify instruction counts with Nsight Compute, time the torch bf16
# matmul ceiling, and write the raw JSON under $OUT; prints a short table last.
# Then, on a machine with fusesim installed:
#   fusesim calibrate --from results/h200/calibration.json --out hw_configs/h200_calibrated.yaml
# Needs nvcc, nvidia-smi and python3 (standard library; torch optional); no fusesim dependencies.
set -uo pipefail
OUT=${OUT:-out/calibrate}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
  --format=csv | tee "$OUT/smi_before.txt"
python3 -m fusesim.calibrate.runner --out "$OUT/calibration.json" --build-dir build/calibrate --ncu --torch "$@" \
  2>&1 | tee "$OUT/runner.log"
rc=${PIPESTATUS[0]}
if command -v cuobjdump >/dev/null; then
  for b in build/calibrate/calib-*; do
    case "$b" in *.txt) ;; *) cuobjdump --dump-sass "$b" | gzip > "$OUT/calib_sass.txt.gz" ;; esac
  done
fi
cp build/calibrate/*.ptxas.txt "$OUT/" 2>/dev/null || true
echo "=== summary ==="
python3 -m fusesim.calibrate.derive "$OUT/calibration.json" | tee "$OUT/summary.txt"
exit "$rc"
