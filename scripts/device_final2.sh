#!/usr/bin/env bash
# One device call that times every paper case with today's generator in ONE run (benchmarks/kernels.md's targets ask
# for one run on the H200): the GEMM chains and gated FFNs with the final run's frozen plans
# (results/h200/plans_final_<workload>.json), the conv chains with the staged-E run's (results/h200/plans_estage.json:
# per case and strategy the simulator's three fastest wgmma plans and the fastest measured one), each built, verified
# against the float32 reference and timed next to PyTorch; then Nsight Compute bytes (STEPS="bench ncu"; STEPS=ncu in
# a second call reads the first call's files from results/h200/). On an H100 the files end in _h100.
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --plans-file
# results/h200/plans_final_gemm_chains.json results/h200/plans_final_gated_ffn.json results/h200/plans_estage.json
# --stage DIR/.fscache [--strip]; tar -cf - -C DIR .fscache | xz -9 -T2 > .fscarry/cache.tar.xz (the tree and the
# carried files together within 64 MiB: final8's 543 kernels, stripped, 11.1 MB with xz -9e).
# Then: run(command="scripts/device_final2.sh $OUT", carry=[".whl", ".fscarry"]); with REQUIRE_GPU=H200 it stops at
# once on any other GPU (scripts/device_env.sh), so an H100 lent for an H200 costs its start only. GRAPH_LAUNCH=1: bench
# --graph-launch (each verified plan also captured into a CUDA graph, verified and timed as its replays).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_final2.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
HW=hw_configs/h200.yaml
case "$GPU" in *H100*) HW=hw_configs/h100_sxm.yaml ;; esac
echo "$GPU -> $HW"
rc=0
stored() { [ -f "$1" ] || [ -f "$1.gz" ]; }  # a committed result may be packed (fusesim.stored)
step() { echo "== $(date -u +%H:%M:%S) $*"; }
# PLANS_PREFIX: time results/h200/<PLANS_PREFIX><workload>.json instead (scripts/freeze_final_plans.py --extend --into)
plans_of() {
  if [ -n "${PLANS_PREFIX:-}" ]; then echo "results/h200/$PLANS_PREFIX$1.json"
  elif [ "$1" = conv_chains ]; then echo results/h200/plans_estage.json
  else echo "results/h200/plans_final_$1.json"; fi
}
STEPS=${STEPS:-bench ncu}
PREFIX=${PREFIX:-final2_paper_}  # the files' names: $PREFIX<workload>[_h100].json
WORKLOADS=${WORKLOADS:-gemm_chains gated_ffn conv_chains}
if [[ " $STEPS " == *" bench "* ]]; then
  for wl in $WORKLOADS; do
    step "bench $wl"
    # a repeat of a committed run comes back under its name: say so here, so it is renamed, not committed over it
    stored "results/h200/$PREFIX$wl$TAG.json" && echo "note: results/h200/$PREFIX$wl$TAG.json is committed; rename this run's file"
    timeout "${BENCH_TIMEOUT:-200}" python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw "$HW" --plans "file:$(plans_of "$wl")" \
      --top-k 99 --reps 50 ${GRAPH_LAUNCH:+--graph-launch} --work /tmp/bench_work --out "$DEST/$PREFIX$wl$TAG.json" \
      | tail -13 || rc=1
  done
fi
if [[ " $STEPS " == *" ncu "* ]]; then
  # ncu --all builds the kernels under each file's recorded generator switches, in parallel (the carried ones
  # are today's; until 2026-12-06 it built them one by one and scripts/prebuild_recorded.py ran first)
  for wl in $WORKLOADS; do
    B="$DEST/$PREFIX$wl$TAG.json"
    stored "$B" || B="results/h200/$PREFIX$wl$TAG.json"
    step "ncu $wl ($B)"
    stored "$B" && { timeout "${NCU_TIMEOUT:-100}" python3 -m fusesim.gpu.ncu --all "$B" "/tmp/ncu_$wl.json" | tail -2 \
      && cp "/tmp/ncu_$wl.json" "$DEST/$PREFIX$wl$TAG.json" || echo "ncu incomplete: $B keeps no counters"; }
  done
fi
step "done rc=$rc"
exit $rc
