#!/usr/bin/env bash
# One device call for fused_wgmma's early exit arrive (the exit cluster barrier's arrive moved to where a
# block's last incoming data has landed, its wait left at the exit):
#   1. the GPU tests of every fused_wgmma representative (float32 reference, outputs poisoned);
#   2. scripts/exit_arrive_trial.py: per case the three fastest cluster plans of the final run, both ways;
#   3. compute-sanitizer memcheck and racecheck on the cluster families (memcheck only on the aliased
#      reduce-scatter, whose racecheck never finished within 400 s).
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --representatives --sanitize --stage
# DIR/.fscache; python3 scripts/exit_arrive_trial.py --stage DIR/.fscache; tar -cJf .fscarry/cache.tar.xz -C DIR
# .fscache. Then: run(command="scripts/device_exit_arrive.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_exit_arrive.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests: fused_wgmma representatives"
timeout 120 python3 -m pytest -q -m gpu tests/test_gpu.py -k fused_wgmma -p no:cacheprovider 2>&1 | tail -3 || rc=1
step "exit arrive trial"
timeout 240 python3 scripts/exit_arrive_trial.py "$DEST/exit_arrive_trial.json" | cut -c1-200 || rc=1
for fam in "exchange shuffle reduce" "mul exchange" "gated sequential" "cls m2" "staged e" "cls k2"; do
  step "compute-sanitizer: $fam"
  timeout 70 python3 -m fusesim.gpu.sanitize --only "$fam" --tools memcheck,racecheck \
    --out "$DEST/sanitize_exit_${fam// /_}.json" | tail -2 || rc=1
done
step "compute-sanitizer: reduce receive aliased (memcheck)"
timeout 60 python3 -m fusesim.gpu.sanitize --only "reduce receive aliased" --tools memcheck \
  --out "$DEST/sanitize_exit_aliased.json" | tail -1 || rc=1
step "done rc=$rc"
exit $rc
