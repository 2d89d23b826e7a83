#!/usr/bin/env bash
# One device call (the staged-epilogue trial, 2026-12-03; template change not kept): re-time the final run's unfused gemm_wgmma plans (results/h200/plans_epilogue_trial.json)
# with the current template next to PyTorch, then the per-block timeline probe. The trial ran with
# `git apply results/h200/epilogue_trial.patch` (gemm0's epilogue staged through SMEM) applied.
# Prepare HERE: FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_epilogue_trial.json
#   (and the probe's kernels), tar -cJf .fscarry/cache.tar.xz .fscache; carry .whl and .fscarry.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_epilogue_trial.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
for wl in gemm_chains gated_ffn; do
  echo "== $(date -u +%H:%M:%S) bench $wl"
  timeout 200 python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw hw_configs/h200.yaml --strategy unfused \
    --plans file:results/h200/plans_epilogue_trial.json --top-k 99 --reps 50 --work /tmp/bench_work \
    --out "$DEST/epilogue_trial_$wl.json" | tail -30 || rc=1
done
echo "== $(date -u +%H:%M:%S) timeline"
timeout 120 python3 scripts/probe_wgmma_timeline.py "$DEST/probe_wgmma_timeline_staged.json" || rc=1
exit $rc
