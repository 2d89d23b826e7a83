#!/usr/bin/env bash
# One device call: the one-block-per-SM trial of gemm_wgmma's second GEMM (scripts/solo_sm_trial.py, the 26 plans of
# final8 that capability.gemm_solo_sm changes, both ways, two runs), then final8's whole run with the generator as
# committed (GEMM_SOLO_SECONDARY off: the plans frozen before, as frozen; STEPS=bench, kernels carried).
# Prepare HERE: bash scripts/device_wheels.sh (and .fscarry/cache.tar.xz, scripts/device_final2.sh says how).
# Then: run(command="scripts/device_solo_final8.sh $OUT", carry=[".whl", ".fscarry"]). Files end in _h100 on an H100.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_solo_final8.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
export PYTHONPATH=$PYTHONPATH:$PWD/scripts
echo "== $(date -u +%H:%M:%S) on $GPU"
python3 scripts/solo_sm_trial.py --build-only | tail -1
for run in 1 2; do
  echo "== $(date -u +%H:%M:%S) solo trial $run"
  timeout 120 python3 scripts/solo_sm_trial.py "$DEST/solo_sm_trial_run${run}$TAG.json" 2>&1 \
    | cut -c1-200 | tail -26 | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //'
done
BENCH_TIMEOUT=${BENCH_TIMEOUT:-200} STEPS=bench PREFIX=final8_paper_ PLANS_PREFIX=plans_final8_ scripts/device_final2.sh "$DEST"
