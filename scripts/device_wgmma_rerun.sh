#!/usr/bin/env bash
# One device call: time exactly the 154 plans of results/h200/wgmma_trial.json (measured 2026-12-02
# with an earlier gemm_wgmma revision, before commit 1cfb359 stopped ptxas serializing the split-K
# wgmmas) again with today's template, next to PyTorch, so that the validation's gemm_wgmma set
# compares the simulator with kernels the generator emits now.
# Prepare HERE: bash scripts/device_wheels.sh; the plans as {case: [plan]} (see results/h200/README.md),
#   FUSESIM_CACHE=.fscache_rerun python3 scripts/prebuild.py --plans-file PLANS.json, then stage
#   .fscache_rerun as .fscache in .fscarry/cache.tar.xz (as scripts/device_dsm_split_trial.sh says).
# Then: run(command="scripts/device_wgmma_rerun.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_wgmma_rerun.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
echo "== $(date -u +%H:%M:%S) wgmma_check --plans-from results/h200/wgmma_trial.json"
timeout 540 python3 -m fusesim.gpu.wgmma_check --torch --reps 50 --plans-from results/h200/wgmma_trial.json \
  --out "$DEST/wgmma_trial_rerun.json" | tail -25
