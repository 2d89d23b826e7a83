#!/usr/bin/env bash
# One device call for fused_wgmma's staged E (the last E sub-tile through the drained ring, then 16-byte
# row pieces, where E goes straight out):
#   1. the GPU tests of the representatives that stage E (float32 reference, outputs poisoned; two
#      consumer warpgroups with a shuffle, predicated M, a long L in sub-tiles, an im2col smem kernel);
#   2. scripts/estage_trial.py: every such plan of results/h200/plans_estage.json, fragments vs staged;
#   3. bench: the conv chains C1-C8, per case and strategy the simulator's three fastest wgmma plans and
#      the fastest measured one of the final and im2col runs, with PyTorch (results/h200/plans_estage.json,
#      scripts/freeze_im2col_plans.py --all-cases);
#   4. compute-sanitizer memcheck / racecheck on the staged families;
#   5. the per-block timeline (scripts/probe_fused_wgmma_stages.py) of five im2col-run plans, now staged;
#   6. Nsight Compute bytes of every verified plan of the bench (last: what the time limit leaves).
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --plans-file
# results/h200/plans_estage.json --representatives --sanitize --stage DIR/.fscache; python3 scripts/estage_trial.py
# --stage DIR/.fscache; FUSESIM_CACHE=DIR/.fscache python3 scripts/probe_fused_wgmma_stages.py --from
# 'results/h200/wgmma_im2col_paper_*.json' --build $PROBE; tar -cJf .fscarry/cache.tar.xz -C DIR .fscache.
# Then: run(command="scripts/device_estage.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_estage.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
PROBE=${PROBE:-"C5:8 C5:5 C5:12 C6:6 C6:10"}
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests: staged-E representatives"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py -k "staged_e or conv3x3_smem or large_l" -p no:cacheprovider 2>&1 | tail -3 || rc=1
step "estage trial"
timeout 150 python3 scripts/estage_trial.py "$DEST/estage_trial.json" | cut -c1-220 || rc=1
step "bench conv_chains"
timeout 240 python3 -m fusesim.commands.bench workloads/paper_conv_chains.yaml --hw hw_configs/h200.yaml \
  --plans file:results/h200/plans_estage.json --top-k 99 --reps 50 --work /tmp/bench_work \
  --out "$DEST/estage_paper_conv_chains.json" | tail -12 || rc=1
for fam in "staged e" "conv3x3 smem" "large l"; do
  step "compute-sanitizer: $fam"
  timeout 90 python3 -m fusesim.gpu.sanitize --only "$fam" --tools memcheck,racecheck \
    --out "$DEST/sanitize_estage_${fam// /_}.json" | tail -2 || rc=1
done
step "timeline: $PROBE"
# shellcheck disable=SC2086
timeout 60 python3 scripts/probe_fused_wgmma_stages.py --from 'results/h200/wgmma_im2col_paper_*.json' \
  "$DEST/probe_estage.json" $PROBE | tail -7 || rc=1
step "ncu"
[ -f "$DEST/estage_paper_conv_chains.json" ] && { timeout ${NCU_S:-120} python3 -m fusesim.gpu.ncu --all "$DEST/estage_paper_conv_chains.json" \
  "$DEST/estage_paper_conv_chains.json" | tail -2 || rc=1; }
step "done rc=$rc"
exit $rc
