#!/usr/bin/env bash
# One device call for fused_wgmma's producer waiting on the entry cluster barrier inside its load loop
# (capability.FUSED_PRODUCER_EARLY_WAIT; racecheck deadlocked with the wait after the loop,
# results/h200/racecheck_probe_*_h100.json):
#   1. the GPU tests of every fused_wgmma representative (float32 reference, outputs poisoned);
#   2. compute-sanitizer memcheck, racecheck and synccheck on the aliased reduce-scatter family;
#   3. scripts/producer_wait_trial.py: per case the three fastest affected plans of the final run, both ways.
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --representatives --sanitize --stage
# DIR/.fscache; python3 scripts/producer_wait_trial.py --stage DIR/.fscache; tar -cf - -C DIR .fscache | xz -9 -T2
# > .fscarry/cache.tar.xz. Then: run(command="scripts/device_producer_wait.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_producer_wait.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
TAG=""; case "$GPU" in *H100*) TAG=_h100 ;; esac
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests: fused_wgmma representatives ($GPU)"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py -k fused_wgmma -p no:cacheprovider 2>&1 | tail -3 || rc=1
step "compute-sanitizer: reduce receive aliased"
timeout 150 python3 -m fusesim.gpu.sanitize --only "reduce receive aliased" --job-timeout-s 120 \
  --out "$DEST/sanitize_aliased_early_wait$TAG.json" | tail -3 || rc=1
step "producer wait trial"
timeout 260 python3 scripts/producer_wait_trial.py "$DEST/producer_wait_trial$TAG.json" | cut -c1-200 | tail -45 || rc=1
step "done rc=$rc"
exit $rc
