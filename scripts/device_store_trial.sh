#!/usr/bin/env bash
# One device call: the pdl calibration group (programmatic dependent launch: when the second GEMM's
# blocks start and leave griddepcontrol.wait) and scripts/store_trial.py (gemm_wgmma's epilogue:
# fragment stores and reds vs staged 16-byte row pieces).
# Prepare HERE:
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache_store python3 scripts/store_trial.py --build-only
#   rm -rf /tmp/stage && mkdir -p /tmp/stage && cp -r .fscache_store /tmp/stage/.fscache && tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
# Then: run(command="scripts/device_store_trial.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_store_trial.sh OUT_DIR}
mkdir -p "$DEST"
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "calibrate pdl"
timeout 200 python3 -m fusesim.calibrate.runner --out "$DEST/calibration_pdl.json" --build-dir build/calibrate \
  --groups info,clock,pdl 2>&1 | tail -5
python3 - "$DEST/calibration_pdl.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["groups"]["pdl"]
for k, v in g.get("results", g).items():
    if isinstance(v, dict):
        print(k, {kk.replace("_us_median", ""): round(vv, 3) for kk, vv in v.items() if kk.endswith("median")},
              "stale", v.get("stale_reads"))
PY
source scripts/device_env.sh
step "store trial"
timeout 330 python3 scripts/store_trial.py "$DEST/store_trial.json"
rc=$?
step "done rc=$rc"
exit $rc
