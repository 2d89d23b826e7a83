#!/usr/bin/env bash
# One device call: the per-block timeline (scripts/probe_wgmma_timeline.py) of the final run's fastest
# unfused gemm_wgmma plans of G4, G7, G9, S8 (results/h200/plans_probe_small_splitk.json): how long
# their small split-K epilogues (red.add.v2 of 16-32 KiB partials, ticket, convert) take on the GPU,
# against the simulator's calibrated fragment-reduction rates. Kernels build there.
# Then: run(command="scripts/device_probe_small_splitk.sh $OUT", carry=[".whl"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_probe_small_splitk.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
timeout 200 python3 scripts/probe_wgmma_timeline.py "$DEST/probe_wgmma_timeline_small_splitk.json" \
  results/h200/plans_probe_small_splitk.json G4:0 G7:0 G9:0 S8:0
