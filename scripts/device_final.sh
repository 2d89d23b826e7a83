#!/usr/bin/env bash
# One device call that produces the committed per-case comparison (benchmarks/kernels.md) in ONE run:
#   1. compute-sanitizer memcheck / racecheck / synccheck on the gemm_wgmma family;
#   2. per paper case, the plans frozen in results/h200/plans_final_<workload>.json (the planner's
#      top-1 per strategy, the fastest earlier-measured hand plan per strategy, the two fastest
#      gemm_wgmma plans of results/h200/wgmma_trial.json), built, verified, timed next to PyTorch;
#   3. Nsight Compute DRAM / L2 / DSM bytes of every verified plan of step 2.
# Prepare HERE (kernels compiled here, the device only runs them):
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_final_*.json --sanitize
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_final.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_final.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "compute-sanitizer: gemm_wgmma"
timeout 200 python3 -m fusesim.gpu.sanitize --only gemm_wgmma --out "$DEST/sanitize_wgmma.json" || rc=1

for wl in gemm_chains gated_ffn conv_chains; do
  step "bench $wl"
  timeout 300 python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw hw_configs/h200.yaml \
    --plans "file:results/h200/plans_final_$wl.json" --top-k 99 --reps 50 --work /tmp/bench_work \
    --out "$DEST/final_paper_$wl.json" | tail -14 || rc=1
done
for wl in gemm_chains gated_ffn conv_chains; do
  step "ncu $wl"
  timeout 240 python3 -m fusesim.gpu.ncu --all "$DEST/final_paper_$wl.json" "$DEST/final_paper_$wl.json" | tail -2 || rc=1
done
step "done rc=$rc"
exit $rc
