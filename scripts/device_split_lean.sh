#!/usr/bin/env bash
# One device call: split-K in slices as committed vs lean (scripts/split_lean_trial.py: final8's 48 plans with a GEMM
# that sums in slices, both ways, two runs), then the per-block split-K timelines of S1, G5, G8, S7 both ways
# (scripts/probe_splitk_tail.py --shared, and --shared --lean); STEPS="trial probe" by default, "sanitize" adds
# compute-sanitizer on the gemm_wgmma families with the lean form.
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_split_lean.sh $OUT", carry=[".whl",
# ".fscarry"]). Files end in _h100 on an H100.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_split_lean.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
export PYTHONPATH=$PYTHONPATH:$PWD/scripts
STEPS=${STEPS:-trial probe}
echo "== $(date -u +%H:%M:%S) on $GPU"
if [[ " $STEPS " == *" trial "* ]]; then
  python3 scripts/split_lean_trial.py --build-only | tail -1
  for run in 1 2; do
    echo "== $(date -u +%H:%M:%S) lean trial $run"
    timeout "${T_TRIAL:-150}" python3 scripts/split_lean_trial.py "$DEST/split_lean_trial_run${run}$TAG.json" 2>&1 \
      | cut -c1-200 | tail -50 | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //'
  done
fi
if [[ " $STEPS " == *" probe "* ]]; then
  for mode in "" "--lean"; do
    echo "== $(date -u +%H:%M:%S) probe slices ${mode}"
    timeout "${T_PROBE:-100}" python3 scripts/probe_splitk_tail.py --shared $mode \
      "$DEST/probe_splitk_tail_shared${mode:+_lean}_run2$TAG.json" S1 G5 G8 S7 2>&1 | cut -c1-330 | tail -6
  done
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  echo "== $(date -u +%H:%M:%S) sanitize (lean)"
  timeout "${T_SAN:-200}" python3 -m fusesim.gpu.sanitize --out "$DEST/sanitize_split_lean$TAG.json" --only gemm_wgmma \
    --switches '{"gemm_split_lean": true}' --job-timeout-s 150 2>&1 | tail -8
  python3 -c "import json,sys; [print(r['family'][:60], r['tool'], r['rc'], round(r.get('seconds', 0), 1), (r.get('summary') or [''])[-1][:80]) for r in json.load(open(sys.argv[1]))['rows']]" "$DEST/sanitize_split_lean$TAG.json"
fi
echo "== $(date -u +%H:%M:%S) done"
