#!/usr/bin/env bash
# One device call after the DSM split-K trial: the GPU tests of the two DSM split-K representatives
# (verified against the fp32 reference), compute-sanitizer on the DSM split-K family plan, and the
# per-block timeline of the control and three DSM split-K plans of results/h200/plans_dsm_split_trial.json
# (does gemm1 still start while gemm0 drains when it launches as clusters?). Kernels build there.
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_dsm_split_check.sh $OUT", carry=[".whl"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_dsm_split_check.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests (DSM split-K representatives)"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py -k dsm_split -p no:cacheprovider 2>&1 | tail -4 || rc=1
step "compute-sanitizer (DSM split-K)"
timeout 200 python3 -m fusesim.gpu.sanitize --only "through DSM" --out "$DEST/sanitize_dsm_split.json" | tail -8 || rc=1
step "timeline"
timeout 150 python3 scripts/probe_wgmma_timeline.py "$DEST/probe_wgmma_timeline_dsm_split.json" \
  results/h200/plans_dsm_split_trial.json G5:0 G5:2 G8:0 G8:2 S1:0 S1:4 || rc=1
step "done rc=$rc"
exit $rc
