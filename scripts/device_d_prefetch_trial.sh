#!/usr/bin/env bash
# One device call: the l2bulk calibration group (L2 read throughput of TMA bulk copies, next to the
# l2 group's 16-byte loads) and scripts/d_prefetch_trial.py (gemm0 of gemm_wgmma prefetching gemm1's
# weights into L2 once its last weight tile is issued: off, 16 MiB, 48 MiB).
# Prepare HERE (the trial's template change is a patch, not in the generator):
#   git apply results/h200/d_prefetch_trial.patch
#   bash scripts/device_wheels.sh
#   python3 -c "from pathlib import Path; from fusesim.calibrate.runner import build; build(Path('build/calibrate'))"
#   FUSESIM_CACHE=.fscache python3 scripts/d_prefetch_trial.py --build-only
#   FUSESIM_CACHE=.fscache python3 scripts/d_prefetch_trial.py --stage /tmp/stage/.fscache && tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
# Then: run(command="scripts/device_d_prefetch_trial.sh $OUT", carry=[".whl", ".fscarry", "build/calibrate"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_d_prefetch_trial.sh OUT_DIR}
mkdir -p "$DEST"
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "calibrate l2bulk"
timeout 120 python3 -m fusesim.calibrate.runner --out "$DEST/calibration_l2bulk.json" --build-dir build/calibrate \
  --groups info,clock,l2,l2bulk 2>&1 | tail -3
python3 - "$DEST/calibration_l2bulk.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
print("l2 (ld.global.cg.v4):", {k: round(v["gbps_median"]) for k, v in g["l2"]["results"]["bandwidth"].items() if isinstance(v, dict)})
for c in g["l2bulk"]["results"].get("cases", []):
    print(f"l2bulk sms {c['sms']:3d} ring {c['ring']} -> {c['gbps_median']:8.0f} GB/s ({c['gbps_per_sm']:.1f} per SM)")
PY
source scripts/device_env.sh
step "d prefetch trial"
timeout 400 python3 scripts/d_prefetch_trial.py "$DEST/d_prefetch_trial.json"
rc=$?
step "done rc=$rc"
exit $rc
