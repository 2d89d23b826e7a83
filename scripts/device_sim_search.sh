#!/usr/bin/env bash
# One device call that checks the simulator's own picks (scripts/sim_search.py): per paper case the
# simulator's top plans of a pool wider than the final run's, next to the final run's measured-best
# plan, built, verified and timed in one run with PyTorch; then Nsight Compute bytes of each.
# Prepare HERE (kernels compiled here, the device only runs them):
#   bash scripts/device_wheels.sh
#   python3 scripts/sim_search.py --picks 3 --out results/h200/plans_sim_search.json
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_sim_search.json
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_sim_search.sh $OUT", carry=[".whl", ".fscarry"]).
# Another frozen set: PLANS=results/h200/plans_sim_search_2.json PREFIX=sim_search2_paper_ (the second
# round, frozen on 2026-12-04 by the simulator with the cluster-barrier skew, the measured stage
# handshake and the bulk DSM rate, before any of its picks was timed). And PLANS=results/h200/plans_verdict.json
# PREFIX=verdict_paper_: per case and strategy the plan `fusesim simulate` runs (--rank simulated) and the
# final run's fastest of that strategy (scripts/freeze_verdict_plans.py, 2026-12-05, before any was timed),
# for benchmarks/verdict.py out of sample. .fscarry/cache.tar.xz, when made for it, holds both sets' kernels.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_sim_search.sh OUT_DIR}
PLANS=${PLANS:-results/h200/plans_sim_search.json}
PREFIX=${PREFIX:-sim_search_paper_}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
HW=hw_configs/h200.yaml
case "$GPU" in *H100*) HW=hw_configs/h100_sxm.yaml ;; esac  # an H100 lent for an H200: files end in _h100
echo "$GPU -> $HW"
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
for wl in gemm_chains gated_ffn conv_chains; do
  step "bench $wl"
  timeout 240 python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw "$HW" \
    --plans "file:$PLANS" --top-k 99 --reps 50 --work /tmp/bench_work \
    --out "$DEST/$PREFIX$wl$TAG.json" | tail -12 || rc=1
done
for wl in gemm_chains gated_ffn conv_chains; do
  [ "${NCU:-1}" = 0 ] && break  # NCU=0: times only (the verdict needs no bytes)
  step "ncu $wl"
  [ -f "$DEST/$PREFIX$wl$TAG.json" ] || continue
  timeout 200 python3 -m fusesim.gpu.ncu --all "$DEST/$PREFIX$wl$TAG.json" "$DEST/$PREFIX$wl$TAG.json" \
    | tail -2 || rc=1
done
step "done rc=$rc"
exit $rc
