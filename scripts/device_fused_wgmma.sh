#!/usr/bin/env bash
# One device call: build (16 jobs, on the device), verify and time the fused_wgmma family's hand plans
# on the paper cases, odd shapes and two tiny probes, next to each case's earlier best kernel and
# PyTorch (one run); then the earlier best plans alone with gemm0 prefetching D into L2 (two caps).
# A kernel that deadlocks is recorded as hung and the check resumes after it (up to 6 restarts).
# Prepare HERE: bash scripts/device_wheels.sh. Then:
#   run(command="scripts/device_fused_wgmma.sh $OUT", carry=[".whl"])
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_fused_wgmma.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
check() {  # OUTFILE ARGS...: the check with hang recovery
  local out=$1; shift
  local rc=1
  for attempt in 1 2 3 4 5 6; do
    echo "== $(date -u +%H:%M:%S) $(basename "$out") attempt $attempt"
    timeout "${FW_TIMEOUT:-300}" python3 -m fusesim.gpu.fused_wgmma_check --out "$out" --reps 30 \
      --ref results/h200/final_paper_*.json "$@" | tail -40
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 7 ] || [ "$rc" -eq 124 ] || break
  done
  cp "$out.partial" "$DEST/" 2>/dev/null
  return "$rc"
}
rc=0
check "$DEST/fused_wgmma_trial.json" --torch --per-case "${FW_PER_CASE:-8}" || rc=1
for cap in ${FW_PREFETCH_CAPS:-16777216 41943040}; do
  check "$DEST/prefetch_d_$cap.json" --refs-only --d-prefetch "$cap" || rc=1
done
echo "== $(date -u +%H:%M:%S) done rc=$rc"
exit $rc
