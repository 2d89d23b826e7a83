#!/usr/bin/env bash
# One device call: scripts/ebuf_trial.py (fused_wgmma's E partial rows plain vs swizzled, the final run's
# reduce-scatter plans), compute-sanitizer memcheck and racecheck on the two fused_wgmma reduce-scatter
# families (swizzled), with FINAL=1 the final run (RACE=0 scripts/device_final_launch.sh: bench, ncu and
# the launch costs around them) with the generator's kernels, and the per-block timeline of G9's two
# reduce-scatter plans.
# Prepare HERE:
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_final_*.json --sanitize \
#     --oddshapes --representatives --stage /tmp/stage/.fscache
#   FUSESIM_CACHE=.fscache python3 scripts/ebuf_trial.py --build-only
#   FUSESIM_CACHE=.fscache python3 scripts/ebuf_trial.py --stage /tmp/stage/.fscache
#   tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
#   python3 -c "from pathlib import Path; from fusesim.calibrate.runner import build; build(Path('build/calibrate'))"
# Then: run(command="FINAL=1 scripts/device_ebuf_trial.sh $OUT", carry=[".whl", ".fscarry", "build/calibrate"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_ebuf_trial.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "ebuf trial"
timeout 120 python3 scripts/ebuf_trial.py "$DEST/ebuf_trial.json" | cut -c1-200 || rc=1
for fam in "fused_wgmma (exchange shuffle reduce)" "fused_wgmma (reduce receive aliased)"; do
  step "compute-sanitizer: $fam"
  timeout 90 python3 -m fusesim.gpu.sanitize --only "$fam" --tools memcheck,racecheck \
    --out "$DEST/sanitize_ebuf_${fam:13:6}.json" | tail -3 || rc=1
done
if [ "${FINAL:-0}" = 1 ]; then
  RACE=0 bash scripts/device_final_launch.sh "$DEST" || rc=1
fi
step "timeline: G9's reduce-scatter plans"
timeout 60 python3 scripts/probe_fused_wgmma_stages.py "$DEST/probe_fused_wgmma_ebuf.json" G9:16 G9:17 | tail -4 || rc=1
step "done rc=$rc"
exit $rc
