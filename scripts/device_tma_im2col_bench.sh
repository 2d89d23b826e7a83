#!/usr/bin/env bash
# One device call after WGMMA_IM2COL_TMA went on (the wgmma templates' implicit im2col A by TMA in im2col mode):
#   1. the GPU tests of the im2col representatives and every conv3x3 family (float32 reference, outputs poisoned);
#   2. odd shapes (fusesim.gpu.oddshapes: predicated M, two images, every dsm_comm form), verification only;
#   3. bench: the conv chains C1-C8 with the plans of the staged-E run (results/h200/plans_estage.json: per case and
#      strategy the simulator's three fastest wgmma plans and the fastest measured one), with PyTorch;
#   4. Nsight Compute bytes of the bench's verified plans (last: what the time limit leaves).
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --plans-file results/h200/plans_estage.json
# --representatives --oddshapes --stage DIR/.fscache; tar -cf - -C DIR .fscache | xz -9 -T2 > .fscarry/cache.tar.xz.
# Then: run(command="scripts/device_tma_im2col_bench.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_tma_im2col_bench.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
HW=hw_configs/h200.yaml
case "$GPU" in *H100*) HW=hw_configs/h100_sxm.yaml ;; esac
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests: im2col and conv3x3 ($HW)"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py -k "im2col or conv3x3" -p no:cacheprovider 2>&1 | tail -3 || rc=1
step "odd shapes"
timeout 120 python3 -m fusesim.gpu.oddshapes --out "$DEST/oddshapes_tma_im2col$TAG.json" | tail -4 || rc=1
step "bench conv_chains"
timeout 200 python3 -m fusesim.commands.bench workloads/paper_conv_chains.yaml --hw "$HW" \
  --plans file:results/h200/plans_estage.json --top-k 99 --reps 50 --work /tmp/bench_work \
  --out "$DEST/tma_im2col_paper_conv_chains$TAG.json" | tail -12 || rc=1
step "ncu bytes"
B="$DEST/tma_im2col_paper_conv_chains$TAG.json"
[ -f "$B" ] && { timeout 100 python3 -m fusesim.gpu.ncu --all "$B" /tmp/with_ncu.json | tail -3 && cp /tmp/with_ncu.json "$B" \
  || echo "ncu incomplete: the bench file keeps no counters"; }
step "done rc=$rc"
exit $rc
