#!/usr/bin/env bash
# One device call: time the unfused gemm_wgmma variants of the weight-streaming cases
# (results/h200/plans_wgmma_sweep.json, made here by scripts/wgmma_variants.py) next to PyTorch,
# then read Nsight Compute per-kernel duration and DRAM bytes of every verified variant.
# Prepare HERE:
#   bash scripts/device_wheels.sh
#   python3 scripts/wgmma_variants.py --out results/h200/plans_wgmma_sweep.json
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_wgmma_sweep.json
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_wgmma_sweep.sh $OUT", carry=[".whl", ".fscarry"]).
# PLANS and NAME (environment) pick another {case: [plans]} file and the outputs' name
# (scripts/device_dsm_split_trial.sh); GEMM_CASES, GATED_CASES, CONV_CASES other cases
# (scripts/device_dsm_split_small.sh); NCU=0 skips Nsight Compute (scripts/device_one_wave.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_wgmma_sweep.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
# the cases per workload (environment GEMM_CASES, GATED_CASES, CONV_CASES; a workload without any is skipped)
declare -A CASES=([gemm_chains]="${GEMM_CASES-G5 G8}" [gated_ffn]="${GATED_CASES-S1 S2 S3 S4 S5 S6 S7}"
                  [conv_chains]="${CONV_CASES-}")
for wl in gemm_chains gated_ffn conv_chains; do
  [ -n "${CASES[$wl]}" ] || continue
  args=()
  for c in ${CASES[$wl]}; do args+=(--case "$c"); done
  step "bench $wl"
  timeout 280 python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw hw_configs/h200.yaml "${args[@]}" \
    --strategy unfused --plans "file:${PLANS:-results/h200/plans_wgmma_sweep.json}" --top-k 99 --reps 50 \
    --work /tmp/bench_work --out "$DEST/${NAME:-wgmma_sweep}_$wl.json" | tail -12 || rc=1
  [ "${NCU:-1}" = 1 ] || continue
  step "ncu $wl"
  timeout 150 python3 -m fusesim.gpu.ncu --all "$DEST/${NAME:-wgmma_sweep}_$wl.json" "$DEST/${NAME:-wgmma_sweep}_$wl.json" | tail -2 || rc=1
done
step "done rc=$rc"
exit $rc
