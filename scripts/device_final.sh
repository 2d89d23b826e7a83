#!/usr/bin/env bash
# One device call that produces the committed per-case comparison (benchmarks/kernels.md) in ONE run:
#   1. compute-sanitizer memcheck / racecheck / synccheck on the TMA + wgmma families (gemm_wgmma,
#      fused_wgmma);
#   2. per paper case, the plans frozen in results/h200/plans_final_<workload>.json by
#      scripts/freeze_final_plans.py (the planner's top-3 per strategy, the fastest earlier-measured
#      plan per strategy and instruction, the best fused_wgmma hand plans), built, verified, timed
#      next to PyTorch;
#   3. Nsight Compute DRAM / L2 / DSM bytes of every verified plan of step 2.
# STEPS (env) picks steps: "sanitize bench ncu" (default), e.g. STEPS=ncu for a second call that
# reads the first call's JSONs from results/h200/.
# Prepare HERE (kernels compiled here, the device only runs them):
#   bash scripts/device_wheels.sh
#   python3 scripts/freeze_final_plans.py --previous results/h200/final_paper_*.json
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_final_*.json --sanitize
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_final.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_final.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }

STEPS=${STEPS:-sanitize bench ncu}
if [[ " $STEPS " == *" sanitize "* ]]; then
  step "compute-sanitizer: gemm_wgmma, fused_wgmma"
  timeout 240 python3 -m fusesim.gpu.sanitize --only wgmma --out "$DEST/sanitize_wgmma.json" | tail -12 || rc=1
fi
if [[ " $STEPS " == *" bench "* ]]; then
  for wl in gemm_chains gated_ffn conv_chains; do
    step "bench $wl"
    timeout 300 python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw hw_configs/h200.yaml \
      --plans "file:results/h200/plans_final_$wl.json" --top-k 99 --reps 50 --work /tmp/bench_work \
      --out "$DEST/final_paper_$wl.json" | tail -14 || rc=1
  done
fi
if [[ " $STEPS " == *" ncu "* ]]; then
  for wl in gemm_chains gated_ffn conv_chains; do
    src="$DEST/final_paper_$wl.json"
    [ -f "$src" ] || src="results/h200/final_paper_$wl.json"
    step "ncu $wl ($src)"
    timeout 240 python3 -m fusesim.gpu.ncu --all "$src" "$DEST/final_paper_$wl.json" | tail -2 || rc=1
  done
fi
step "done rc=$rc"
exit $rc
