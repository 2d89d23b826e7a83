#!/usr/bin/env bash
# One device call: the per-block %globaltimer timeline of the fused_wgmma implicit-im2col kernels
# (scripts/probe_fused_wgmma_stages.py, with the producer's stamps: when it found each stage empty and
# when it arrived on each GEMM0 stage), nine plans of the wgmma im2col run (results/h200/wgmma_im2col_paper_*.json,
# CASE:INDEX into its plans) that the simulator timed 14-43% short; scripts/probe_wgmma_timeline.py on the
# unfused gemm_wgmma im2col plan 0 of each case (results/h200/plans_im2col.json); then, if VERDICT=1, the verdict set
# frozen before it was timed (scripts/device_sim_search.sh with PLANS=results/h200/plans_verdict.json, NCU=0; run
# 2026-12-05 15:05-15:09 UTC: results/h200/probe_*_im2col.json, verdict_paper_*.json).
# Prepare HERE: bash scripts/device_wheels.sh; FUSESIM_CACHE=DIR/.fscache python3 scripts/probe_fused_wgmma_stages.py
# --from "results/h200/wgmma_im2col_paper_*.json" --build PICKS... (and the timeline probe's four instrumented
# sources: probe_wgmma_timeline.py --build results/h200/plans_im2col.json C5:0 C6:0 C7:0 C8:0); tar -cJf .fscarry/cache.tar.xz -C DIR .fscache.
# Then: run(command="scripts/device_probe_im2col.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_probe_im2col.sh OUT_DIR}
PICKS=${PICKS:-C5:8 C5:5 C5:12 C6:6 C6:10 C7:12 C7:5 C8:10 C8:7}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "probe fused_wgmma im2col"
# shellcheck disable=SC2086
timeout 240 python3 scripts/probe_fused_wgmma_stages.py --from "results/h200/wgmma_im2col_paper_*.json" \
  "$DEST/probe_fused_wgmma_im2col.json" $PICKS || rc=1
step "probe gemm_wgmma im2col (unfused C5-C8: each GEMM's blocks)"
timeout 120 python3 scripts/probe_wgmma_timeline.py "$DEST/probe_wgmma_im2col.json" results/h200/plans_im2col.json \
  C5:0 C6:0 C7:0 C8:0 || rc=1
if [ "${VERDICT:-0}" = 1 ]; then
  step "verdict set"
  NCU=0 PLANS=results/h200/plans_verdict.json PREFIX=verdict_paper_ bash scripts/device_sim_search.sh "$DEST" 2>&1 | tail -45 || rc=1
fi
step "done rc=$rc"
exit $rc
