#!/usr/bin/env bash
# One device call after the implicit-im2col loader change (tile.cuh Im2colRows; the device header every
# template includes changed, so every kernel is new):
#   1. scripts/im2col_trial.py: the final run's 48 3x3 conv plans, per-copy decode vs rows decoded once,
#      verified and timed in turn;
#   2. the final run again (scripts/device_final.sh's bench step, then its ncu step);
#   3. the odd-shape plans (a 3x3 conv with batch 2 and an image edge in every tile among them) and the
#      GPU tests (one representative per family and dsm_comm form);
#   4. compute-sanitizer on the two im2col kernels of fusesim.gpu.sanitize.
# Prepare HERE (kernels compiled here, the device only runs them):
#   bash scripts/device_wheels.sh
#   FUSESIM_CACHE=.fscache python3 scripts/im2col_trial.py --build-only
#   FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_final_*.json --sanitize --oddshapes --representatives
#   mkdir -p .fscarry && tar -cJf .fscarry/cache.tar.xz .fscache
# Then: run(command="scripts/device_im2col_trial.sh $OUT", carry=[".whl", ".fscarry"], timeout_s=600).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_im2col_trial.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "im2col trial"
timeout 120 python3 scripts/im2col_trial.py "$DEST/im2col_trial.json" > "$DEST/im2col_trial.log" 2>&1 || rc=1
tail -3 "$DEST/im2col_trial.log"
STEPS="bench ncu" bash scripts/device_final.sh "$DEST" || rc=1
step "odd shapes"
timeout 75 python3 -m fusesim.gpu.oddshapes --out "$DEST/oddshapes.json" | tail -3 || rc=1
step "gpu tests"
timeout 60 python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tail -3 || rc=1
step "compute-sanitizer: im2col"
timeout 60 python3 -m fusesim.gpu.sanitize --only im2col --out "$DEST/sanitize_im2col.json" | tail -8 || rc=1
python3 - "$DEST/im2col_trial.json" <<'PY' || true
import json, math, sys
rows = json.load(open(sys.argv[1]))["rows"]
r = [x["us"]["rows decoded once"] / x["us"]["per-copy decode"] for x in rows]
ok = sum(all(v["ok"] for v in x["verify"].values()) for x in rows)
print(f"im2col trial: {len(rows)} plans, {ok} verified both ways, new/old geomean {math.exp(sum(map(math.log, r)) / len(r)):.3f}"
      f" (min {min(r):.3f}, max {max(r):.3f})")
PY
step "done rc=$rc"
exit $rc
