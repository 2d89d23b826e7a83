#!/usr/bin/env bash
# One device call for fused_wgmma's producer warp waiting on the entry cluster barrier between its load jobs
# (capability.FUSED_PRODUCER_EARLY_WAIT, on since this passed on an H100 on 2026-12-06: results/h200/
# sanitize_aliased_early_wait_h100.json, producer_wait_trial_h100.json; racecheck deadlocks with the wait after the loop,
# results/h200/racecheck_probe_*_h100.json; a first form hung on the GPU, producer_early_wait_hang_h100.json):
#   1. compute-sanitizer memcheck, racecheck and synccheck on the aliased reduce-scatter family, switch on
#      (a hang shows as rc -9 at the 90 s limit; memcheck and synccheck took 9.5 s with the switch off);
#   2. scripts/producer_wait_trial.py: per case the three fastest affected plans of the final run, both ways,
#      each verified against the float32 reference (a hang raises KernelHung after 10 s) and timed.
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --representatives --sanitize --stage
# DIR/.fscache; python3 scripts/producer_wait_trial.py --stage DIR/.fscache; tar -cf - -C DIR .fscache | xz -9 -T2
# > .fscarry/cache.tar.xz. Then: run(command="scripts/device_producer_wait.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_producer_wait.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "compute-sanitizer: reduce receive aliased, producer early wait ($GPU)"
timeout 100 python3 -m fusesim.gpu.sanitize --only "reduce receive aliased" --job-timeout-s 90 \
  --switches '{"fused_producer_early_wait": true}' --out "$DEST/sanitize_aliased_early_wait$TAG.json" | tail -3 || rc=1
step "producer wait trial"
timeout 240 python3 scripts/producer_wait_trial.py "$DEST/producer_wait_trial$TAG.json" | cut -c1-200 | tail -40 || rc=1
step "done rc=$rc"
exit $rc
