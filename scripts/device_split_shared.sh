#!/usr/bin/env bash
# One device call: split-K parts summed by red.add into one workspace tile vs in slices, a share per part
# (capability.gemm_split_shared). The trial (scripts/split_shared_trial.py) twice, the per-block split-K timelines
# of each case's fastest unfused wgmma plan both ways (scripts/probe_splitk_tail.py), and compute-sanitizer on the
# gemm_wgmma family with the slices on; everything built on the GPU machine (a few seconds a kernel).
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_split_shared.sh $OUT",
# carry=[".whl"]). Files end in _h100 on an H100. STEPS="trial probe sanitize" (default all three).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_split_shared.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, $GPU, $TAG
STEPS=${STEPS:-trial probe sanitize}
echo "== $(date -u +%H:%M:%S) on $GPU"
if [[ " $STEPS " == *" trial "* ]]; then
  python3 scripts/split_shared_trial.py --build-only | tail -1
  for run in 1 2; do
    echo "== $(date -u +%H:%M:%S) trial $run"
    timeout "${T_TRIAL:-150}" python3 scripts/split_shared_trial.py "$DEST/split_shared_trial_run${run}$TAG.json" 2>&1 \
      | cut -c1-230 | tail -46 | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //'
  done
fi
if [[ " $STEPS " == *" probe "* ]]; then
  PROBE_CASES=${PROBE_CASES:-S1 G5 G8 S7 G4 G7}
  for mode in "" "--shared"; do
    echo "== $(date -u +%H:%M:%S) probe ${mode:-red.add}"
    timeout "${T_PROBE:-100}" python3 scripts/probe_splitk_tail.py $mode "$DEST/probe_splitk_tail${mode:+_shared}$TAG.json" \
      $PROBE_CASES 2>&1 | cut -c1-330 | tail -8
  done
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  echo "== $(date -u +%H:%M:%S) sanitize"
  timeout "${T_SAN:-200}" python3 -m fusesim.gpu.sanitize --out "$DEST/sanitize_split_shared$TAG.json" --only gemm_wgmma \
    --switches '{"gemm_split_shared_min_bytes": 32768}' --job-timeout-s 150 2>&1 | tail -8
  python3 -c "import json,sys; [print(r['family'][:60], r['tool'], r['rc'], round(r.get('seconds', 0), 1), (r.get('summary') or [''])[-1][:80]) for r in json.load(open(sys.argv[1]))['rows']]" "$DEST/sanitize_split_shared$TAG.json"
fi
echo "== $(date -u +%H:%M:%S) done"
