#!/usr/bin/env bash
# One device call: unfused gemm_wgmma rings as run, 8 deep, and as deep as a part's k tiles
# (scripts/deep_ring_trial.py), twice; kernels built on the GPU machine (a few seconds each).
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_deep_ring.sh $OUT", carry=[".whl"]).
# RUNS="1": one run only.
# Files end in _h100 on an H100. MODE=per-gemm: the second trial (each GEMM deeper alone, or
# launched one block per SM; files deep_ring_per_gemm_*).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_deep_ring.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, $GPU, $TAG
export PYTHONPATH=$PYTHONPATH:$PWD/scripts
echo "== $(date -u +%H:%M:%S) on $GPU"
MODE=${MODE:-}
NAME=deep_ring_trial; [ "$MODE" = per-gemm ] && NAME=deep_ring_per_gemm
python3 scripts/deep_ring_trial.py --build-only $MODE | tail -1
for run in ${RUNS:-1 2}; do
  echo "== $(date -u +%H:%M:%S) trial $run"
  timeout "${T_TRIAL:-200}" python3 scripts/deep_ring_trial.py "$DEST/${NAME}_run${run}$TAG.json" $MODE 2>&1 \
    | cut -c1-250 | tail -32 | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //'
done
echo "== $(date -u +%H:%M:%S) done"
