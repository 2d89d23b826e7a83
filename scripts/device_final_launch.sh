#!/usr/bin/env bash
# One device call: the final run (scripts/device_final.sh's bench and ncu steps) between two measurements of
# the machine's launch costs (calibrate's info, clock and launch groups), so that the validation can simulate
# the run with the launch overhead and kernel gap of the machine it ran on; then compute-sanitizer's racecheck
# on the im2col kernels with each loader and on a plain gemm (logs in race_logs.tgz; RACE=0 skips it).
# Prepare HERE: as scripts/device_im2col_trial.sh, plus the calibration binary:
#   python3 -c "from pathlib import Path; from fusesim.calibrate.runner import build; build(Path('build/calibrate'))"
# Then: run(command="scripts/device_final_launch.sh $OUT", carry=[".whl", ".fscarry", "build/calibrate"], timeout_s=600).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_final_launch.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
launch() {  # the calibrate launch group; rebuilds the binary there if the carried one does not run
  timeout 90 python3 -m fusesim.calibrate.runner --out "$1" --build-dir build/calibrate --groups info,clock,launch \
    2>&1 | tail -2
  python3 - "$1" <<'PY' || { rm -rf build/calibrate; timeout 150 python3 -m fusesim.calibrate.runner --out "$1" \
      --build-dir build/calibrate --groups info,clock,launch 2>&1 | tail -2; }
import json, sys
q = json.load(open(sys.argv[1]))["groups"]["launch"]["grid_528"]["queued"]
print(f"launch overhead {q['overhead_us_median']:.2f} us, kernel gap {q['gap_us_median']:.2f} us")
PY
}
step "launch costs (before)"
launch "$DEST/final_calibration.json"
STEPS="bench ncu" bash scripts/device_final.sh "$DEST" || rc=1
step "launch costs (after)"
launch "$DEST/final_calibration_after.json"
if [ "${RACE:-1}" = 0 ]; then step "done rc=$rc (racecheck skipped: RACE=0)"; exit $rc; fi
step "racecheck: im2col rows decoded once, per-copy decode, plain gemm"
for v in new old ctl; do
  case $v in
    new) a=(--only im2col --tools racecheck);;
    old) a=(--only im2col --tools racecheck --switches '{"im2col_rows_hoisted": false}');;
    ctl) a=(--only "gemm (unfused" --tools racecheck);;
  esac
  timeout 100 python3 -m fusesim.gpu.sanitize "${a[@]}" --work "/tmp/race/$v" --out "/tmp/race/$v.json" | cut -c1-200
done
for f in /tmp/race/new/*racecheck.log; do echo "-- $f"; grep -v '^\s*$' "$f" | head -24 | cut -c1-180; done
tar -czf "$DEST/race_logs.tgz" /tmp/race 2>/dev/null
step "done rc=$rc"
exit $rc
