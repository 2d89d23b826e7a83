#!/usr/bin/env bash
# One device call for the wgmma templates' implicit im2col (3x3 conv chains C5-C8):
#   1. the GPU tests of the im2col representatives (float32 reference, outputs poisoned; batch 2, image
#      edges, predicated M, split-K, cls_k 2);
#   2. bench: per case and strategy the simulator's four fastest wgmma plans next to the final run's
#      fastest mma.sync plan, with PyTorch (results/h200/plans_im2col.json, scripts/freeze_im2col_plans.py);
#   3. Nsight Compute DRAM / L2 / DSM bytes of every verified plan;
#   4. compute-sanitizer memcheck / racecheck / synccheck of the im2col wgmma kernels.
# Prepare HERE (kernels compiled here): bash scripts/device_wheels.sh; build the plans with
# scripts/prebuild.py --plans-file results/h200/plans_im2col.json --representatives --stage DIR/.fscache and
# tar -cJf .fscarry/cache.tar.xz -C DIR .fscache. Then: run(command="scripts/device_im2col.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_im2col.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
export FUSESIM_WGMMA_IM2COL=1  # whatever the default, these runs are of the im2col kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests: im2col representatives"
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu.py -k conv3x3 -p no:cacheprovider 2>&1 | tail -4 || rc=1
step "bench conv_chains"
timeout 300 python3 -m fusesim.commands.bench workloads/paper_conv_chains.yaml --hw hw_configs/h200.yaml --case C5 --case C6 --case C7 --case C8 \
  --plans file:results/h200/plans_im2col.json --top-k 99 --reps 50 --work /tmp/bench_work \
  --out "$DEST/wgmma_im2col_paper_conv_chains.json" | tail -16 || rc=1
step "ncu"
[ -f "$DEST/wgmma_im2col_paper_conv_chains.json" ] && { timeout 150 python3 -m fusesim.gpu.ncu --all "$DEST/wgmma_im2col_paper_conv_chains.json" \
  "$DEST/wgmma_im2col_paper_conv_chains.json" | tail -2 || rc=1; }
step "compute-sanitizer"
timeout 240 python3 -m fusesim.gpu.sanitize --only conv3x3 --out "$DEST/sanitize_wgmma_im2col.json" | tail -12 || rc=1
step "done rc=$rc"
exit $rc
