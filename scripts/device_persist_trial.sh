#!/usr/bin/env bash
# One device call: scripts/persist_trial.py (gemm_wgmma's two GEMMs as one persistent cooperative kernel
# with a readiness flag per C' chunk, next to the generator's PDL pair). A smoke step first, in its own
# process with a short limit, so that a deadlocked flag wait costs that step only.
# Prepare HERE (the persistent form is a patch, not in the generator):
#   git apply results/h200/persist_trial.patch
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache python3 scripts/persist_trial.py --build-only
#   FUSESIM_CACHE=.fscache python3 scripts/persist_trial.py --stage /tmp/stage/.fscache && tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
# Then: run(command="scripts/device_persist_trial.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_persist_trial.sh OUT_DIR}
mkdir -p "$DEST"
step() { echo "== $(date -u +%H:%M:%S) $*"; }
source scripts/device_env.sh
step "smoke (G6, S2)"
timeout 90 python3 scripts/persist_trial.py "$DEST/persist_smoke.json" G6,S2
rc=$?
if [ $rc -ne 0 ]; then step "smoke failed rc=$rc: no full trial"; exit $rc; fi
step "persist trial"
timeout 420 python3 scripts/persist_trial.py "$DEST/persist_trial.json"
rc=$?
step "done rc=$rc"
exit $rc
