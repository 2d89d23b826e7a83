#!/usr/bin/env bash
# One device call: calibrate's icache group (a cold instruction stream's cost), its kernel_start group (a
# block's first data after the flush: TMA through the parameter's descriptor, a descriptor-less bulk copy)
# and scripts/code_warm_trial.py (each paper case's fastest kernel after the flush, and after the flush plus
# one launch of its own code).
# Kernels and the calib binary are prebuilt here (scripts/prebuild.py or code_warm_trial.py --build into
# .fscarry; fusesim.calibrate.runner.build into build/calibrate, carried).
#     bash scripts/device_code_warm.sh $OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: device_code_warm.sh OUT}
source scripts/device_env.sh
python3 -m fusesim.calibrate.runner --out "$OUT/calibration_icache${TAG}.json" --build-dir build/calibrate \
  --groups info,icache 2>&1 | tail -3
python3 -m fusesim.calibrate.runner --out "$OUT/calibration_kernel_start${TAG}.json" --build-dir build/calibrate \
  --groups info,clock,kernel_start 2>&1 | tail -3
python3 - "$OUT/calibration_icache${TAG}.json" "$OUT/calibration_kernel_start${TAG}.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["groups"]["icache"]
for c in g.get("cases", []):
    print(f"{c['case']:14s} " + " ".join(f"{s} {c[s]['ns_median']:8.0f} ns (max {c[s]['ns_max_median']:8.0f})"
                                        for s in ("cold", "warm", "l2")))
k = json.load(open(sys.argv[2]))["groups"]["kernel_start"]
for c in k.get("cases", []):
    print(f"{c['mode']:9s} data {c['data']:4s} issue {c['issue_ns_median']:6.0f} ns, landed {c['landed_ns_median']:6.0f} ns "
          f"(max {c['landed_ns_max_median']:6.0f})")
for grp in (g, k):
    if "error" in grp: print(grp["error"])
PY
timeout 420 python3 scripts/code_warm_trial.py "$OUT/code_warm_trial${TAG}.json"
