#!/usr/bin/env bash
# One device call that completes the measured dataset and the hardening evidence:
#   1. the planner's top-1 plan per strategy for G1-G10 (results/h200/plans_planner_gemm_chains.json), built, verified and timed next to PyTorch;
#   2. Nsight Compute DRAM / L2 / DSM bytes of every verified planner plan (G, S and C suites),
#      written back into copies of the bench JSONs (`ncu` block per plan row);
#   3. a detailed Nsight Compute profile (stall reasons, occupancy) of the smallest cases' best kernels;
#   4. compute-sanitizer memcheck / racecheck / synccheck per template family and cluster size.
# Prepare HERE first (no nvcc time on the device):
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --hw hw_configs/h200.yaml --top-k 1 \
#       workloads/paper_gemm_chains.yaml --from-bench results/h200/planner_paper_{conv_chains,gated_ffn}.json
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_audit.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_audit.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "bench: planner top-1, G1-G10"
# the plans: the planner's top-1 per strategy, frozen here into a file (so that a planner change in the
# working tree cannot swap them): results/h200/plans_planner_gemm_chains.json
python3 -m fusesim.commands.bench workloads/paper_gemm_chains.yaml --hw hw_configs/h200.yaml \
  --plans file:results/h200/plans_planner_gemm_chains.json --top-k 1 --reps 50 --work /tmp/bench_work --out "$DEST/planner_paper_gemm_chains.json" || rc=1

step "ncu: every verified planner plan"
for wl in gemm_chains gated_ffn conv_chains; do
  src="$DEST/planner_paper_$wl.json"
  [ -f "$src" ] || src="results/h200/planner_paper_$wl.json"
  timeout 400 python3 -m fusesim.gpu.ncu --all "$src" "$DEST/planner_paper_${wl}_ncu.json" | tail -4 || rc=1
done

step "ncu: stall reasons of the smallest cases"
timeout 200 python3 -m fusesim.gpu.ncu --detail "$DEST/planner_paper_gemm_chains.json" G1,G3 "$DEST/ncu_small_cases.txt" || rc=1

step "compute-sanitizer per family and cluster size"
timeout 500 python3 -m fusesim.gpu.sanitize --out "$DEST/sanitize_clusters.json" || rc=1
step "done rc=$rc"
exit $rc
