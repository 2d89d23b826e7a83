#!/usr/bin/env bash
# One device call for gemm_wgmma's A multicast (neighbouring column tiles as a cluster, each block loading
# its share of every A tile for all by TMA multicast) and two questions about the timing itself:
#   1. scripts/stream_trial.py: each case's fastest measured plan per strategy and PyTorch, as bench times
#      them, on the default stream and on a side stream;
#   2. the per-block timeline of G4, G7, G9, S8's fastest unfused plans with bench's host lead (do gemm1's
#      blocks start under gemm0 when both are enqueued before gemm0 starts?);
#   3. scripts/mcast_trial.py: every unfused wgmma plan of the final run that multicast changes, own A
#      tiles vs clusters of 2 and 4, plus odd M (1, 77), verified and timed in turn;
#   4. compute-sanitizer memcheck / racecheck / synccheck on the gemm_wgmma families with clusters of 2 and 4.
# Prepare HERE: git apply results/h200/mcast_trial.patch (the multicast form; not in the generator);
# bash scripts/device_wheels.sh; python3 scripts/mcast_trial.py --stage DIR/.fscache;
# python3 scripts/stream_trial.py --stage DIR/.fscache; FUSESIM_CACHE=DIR/.fscache python3
# scripts/probe_wgmma_timeline.py --build results/h200/plans_probe_small_splitk.json G4:0 G7:0 G9:0 S8:0;
# tar -cJf .fscarry/cache.tar.xz -C DIR .fscache. Then: run(command="scripts/device_mcast.sh $OUT",
# carry=[".whl", ".fscarry"]). STEPS="mcast sanitize" MCAST_N=2 runs only those two steps, on each case's
# two fastest plans (stage them with `scripts/mcast_trial.py --stage DIR/.fscache 2`).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_mcast.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
STEPS=${STEPS:-"stream lead mcast sanitize"}  # which of the four to run
MCAST_N=${MCAST_N:-0}                          # mcast_trial.py: each case's N fastest plans (0: all)
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has stream; then
  step "stream trial"
  timeout 240 python3 scripts/stream_trial.py "$DEST/stream_trial.json" | grep -v "^  " || rc=1
fi
if has lead; then
  step "timeline with the host lead"
  timeout 60 python3 scripts/probe_wgmma_timeline.py "$DEST/probe_wgmma_timeline_lead.json" --lead \
    results/h200/plans_probe_small_splitk.json G4:0 G7:0 G9:0 S8:0 | cut -c1-400 || rc=1
fi
if has mcast; then
  step "multicast trial"
  timeout 240 python3 scripts/mcast_trial.py "$DEST/mcast_trial.json" "$MCAST_N" | cut -c1-230 || rc=1
fi
if has sanitize; then
  for mc in 2 4; do
    step "compute-sanitizer: gemm_wgmma with A multicast in clusters of $mc"
    timeout 100 python3 -m fusesim.gpu.sanitize --only "gemm_wgmma (" --switches "{\"gemm_multicast_a\": $mc}" \
      --out "$DEST/sanitize_mcast$mc.json" | tail -9 || rc=1
  done
fi
step "done rc=$rc"
exit $rc
