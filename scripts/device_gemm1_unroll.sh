#!/usr/bin/env bash
# One device call: fused_wgmma's GEMM1 k-tile loop rolled vs unrolled (scripts/gemm1_unroll_trial.py), the kernels
# built on the GPU machine (16 cores) first. Prepare HERE: bash scripts/device_wheels.sh.
# Then: run(command="scripts/device_gemm1_unroll.sh $OUT", carry=[".whl", ".fscarry"]). Files end in _h100 on an H100.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_gemm1_unroll.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
echo "== $(date -u +%H:%M:%S) build"
python3 scripts/gemm1_unroll_trial.py --build-only || exit 1
echo "== $(date -u +%H:%M:%S) trial"
timeout "${T_TRIAL:-400}" python3 scripts/gemm1_unroll_trial.py "$DEST/gemm1_unroll_trial$TAG.json" | cut -c1-220 | tail -50
echo "== $(date -u +%H:%M:%S) done"
