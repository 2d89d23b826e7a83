#!/usr/bin/env bash
# One device call: the three held-out gemm_wgmma sets of earlier calls -- the 154 plans of
# results/h200/wgmma_trial.json, the 144 weight-streaming variants (plans_wgmma_sweep.json) and the 82
# DSM split-K trial plans (plans_dsm_split_trial.json) -- timed again with today's template (staged
# epilogues), each file recording the generator switches it ran (`codegen` block); the sweep and trial
# also read Nsight Compute bytes.
# Prepare HERE: bash scripts/device_wheels.sh;
#   FUSESIM_CACHE=.fscache_retime python3 scripts/prebuild.py --plans-file results/h200/rerun_plans.json \
#     results/h200/plans_wgmma_sweep.json results/h200/plans_dsm_split_trial.json
#   rm -rf /tmp/stage && mkdir -p /tmp/stage && cp -r .fscache_retime /tmp/stage/.fscache && tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
# Then: run(command="scripts/device_retime_wgmma.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_retime_wgmma.sh OUT_DIR}
mkdir -p "$DEST"
rc=0
(
  source scripts/device_env.sh
  echo "== $(date -u +%H:%M:%S) wgmma_check --plans-from results/h200/wgmma_trial.json"
  timeout 200 python3 -m fusesim.gpu.wgmma_check --torch --reps 50 --plans-from results/h200/wgmma_trial.json \
    --out "$DEST/wgmma_trial_retime.json" | tail -3
) || rc=1
PLANS=results/h200/plans_dsm_split_trial.json NAME=dsm_split_trial_retime scripts/device_wgmma_sweep.sh "$DEST" || rc=1
PLANS=results/h200/plans_wgmma_sweep.json NAME=wgmma_sweep_retime scripts/device_wgmma_sweep.sh "$DEST" || rc=1
echo "== $(date -u +%H:%M:%S) done rc=$rc"
exit $rc
