#!/usr/bin/env bash
# One device call for the wgmma templates' implicit im2col by TMA in im2col mode (capability.WGMMA_IM2COL_TMA):
#   1. scripts/im2col_tma_trial.py: C5-C8's fastest wgmma plans per strategy and the implicit-im2col
#      representatives, cp.async copies vs one TMA im2col load per stage, verified and timed in turn;
#   2. compute-sanitizer memcheck / racecheck / synccheck on the wgmma im2col families, TMA im2col on.
# Prepare HERE (the switch is off in the generator until measured): bash scripts/device_wheels.sh; python3 scripts/im2col_tma_trial.py --stage DIR/.fscache;
# tar -cJf .fscarry/cache.tar.xz -C DIR .fscache. Then: run(command="scripts/device_im2col_tma.sh $OUT",
# carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_im2col_tma.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "TMA im2col trial"
timeout 240 python3 scripts/im2col_tma_trial.py "$DEST/im2col_tma_trial.json" | cut -c1-200 || rc=1
for fam in "gemm_wgmma implicit im2col" "conv3x3"; do
  step "compute-sanitizer: $fam, TMA im2col"
  timeout 150 python3 -m fusesim.gpu.sanitize --only "$fam" --switches '{"wgmma_im2col_tma": true}' \
    --out "$DEST/sanitize_im2col_tma_${fam// /_}.json" | tail -9 || rc=1
done
step "done rc=$rc"
exit $rc
