#!/usr/bin/env bash
# One device call: scripts/l2_lookahead_trial.py (gemm_wgmma's second GEMM prefetching its next weight tiles
# into L2 before griddepcontrol.wait: off, 8, 32 tiles; each case's fastest final11 unfused wgmma plan).
# A trial, not kept: git apply results/h200/l2_lookahead_trial.patch first. Kernels prebuilt here and carried:
#   FUSESIM_CACHE=DIR PYTHONPATH=scripts python3 scripts/l2_lookahead_trial.py --build-only
#   FUSESIM_CACHE=DIR PYTHONPATH=scripts python3 scripts/l2_lookahead_trial.py --stage S/.fscache
#   tar -cf - -C S .fscache | xz -6 -T2 > .fscarry/cache.tar.xz
# Then: run(command="scripts/device_l2_lookahead.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_l2_lookahead.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
export PYTHONPATH=$PYTHONPATH:$PWD/scripts
echo "== $(date -u +%H:%M:%S) on $GPU"
timeout "${T_TRIAL:-420}" python3 scripts/l2_lookahead_trial.py "$DEST/l2_lookahead_trial$TAG.json" 2>&1 \
  | cut -c1-230 | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //'
echo "== $(date -u +%H:%M:%S) done"
