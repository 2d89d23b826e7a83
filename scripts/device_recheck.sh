#!/usr/bin/env bash
# One device call after a change to the device header every template includes (here: the MUFU
# GELU/SiLU of fusesim/codegen/include/tile.cuh): the GPU tests (one representative per family and
# dsm_comm form, verified against the fp32 reference) and the 54 odd-shape plans, built there.
# Then: run(command="scripts/device_recheck.sh $OUT", carry=[".whl"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_recheck.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
echo "== $(date -u +%H:%M:%S) gpu tests"
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tail -4 || rc=1
echo "== $(date -u +%H:%M:%S) odd shapes"
timeout 250 python3 -m fusesim.gpu.oddshapes --out "$DEST/oddshapes.json" | tail -4 || rc=1
echo "== $(date -u +%H:%M:%S) done rc=$rc"
exit $rc
