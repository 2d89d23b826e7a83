#!/usr/bin/env bash
# Device calls, on an H200 only (REQUIRE_GPU=H200 by default: another GPU stops at once): are the weight-streaming
# GEMMs L2-bound there? final11's Nsight data has G5's and S1/S3's first GEMM moving 8.3-8.6 TB/s through L2 on
# average (lts__t_bytes, 1.2-1.5x the tile bytes their blocks load; those loads run at 41-73% of the calibrated
# 9.83 TB/s, DRAM at 57-87% of 4.21: only G8's first GEMM uses more of L2's share than of HBM's, kernels.md), and
# two thirds of a 128 x 64 tile's L2 reads are the activation tile every column tile re-reads. Three trials that an
# H100 (whose HBM binds first) could not answer, and one measurement (STEPS picks them; the default, the pure
# stream and the multicast trial, fits one call; the lookahead trial and the deep rings take another each):
#   1. the A-multicast trial (clusters of 2 and 4 load each A tile once by TMA multicast), each case's two fastest
#      plans of the first final run plus odd M, exactly as results/h200/mcast_trial_h100.json ran on an H100: its
#      generator is the tree of 8cdd290 with results/h200/mcast_trial.patch applied, copied (fusesim, scripts,
#      workloads, hw_configs and the final run's plan and result files) into build/wt_mcast and carried;
#   2. the deep-ring set (results/h200/plans_deep_ws.json, today's generator), twice, no Nsight Compute;
#   3. the L2 lookahead trial (scripts/l2_lookahead_trial.py: gemm1 prefetching 8 or 32 of its next weight tiles into
#      L2 before griddepcontrol.wait; each case's fastest final11 unfused wgmma plan), as it ran on an H100 there
#      (results/h200/l2_lookahead_trial_h100.json): on the H100 HBM was busy while gemm0 drained, but on the H200
#      the first GEMMs of S2-S7, on 70-88 SMs, read DRAM at 2.7-3.7 TB/s of ~4.2 (final11's Nsight data), so
#      gemm1's early blocks on the free SMs may stream D at no cost (the simulator disagrees: in its model those
#      bodies already stream at the HBM rate, scripts/partial_sm_sim.py; the averages include start and tail);
#      its generator is HEAD with results/h200/l2_lookahead_trial.patch applied, copied into build/wt_lookahead;
#   4. (STEPS "stream", first when named; needs none of the carry but .whl) the stream_floor calibration group: how
#      fast a kernel that only streams each weight-streaming case's weights (one kernel, or two with PDL as the
#      unfused chain) runs in bench's harness, against the HBM floor and our best kernel (scripts/stream_floor_table.py).
# Prepare HERE: bash scripts/prepare_h200_l2bound.sh (it does: git worktree add W 8cdd290 && git -C W apply
# results/h200/mcast_trial.patch; copy W as above;
# FUSESIM_CACHE=C PYTHONPATH=W:W/scripts python3 W/scripts/mcast_trial.py --stage S/.fscache 2 (from W);
# git worktree add W2 HEAD && git -C W2 apply results/h200/l2_lookahead_trial.patch; copy W2 (with final11's bench
# files) into build/wt_lookahead; scripts/l2_lookahead_trial.py --build-only, then --stage S/.fscache (from there);
# python3 scripts/prebuild.py --plans-file results/h200/plans_deep_ws.json --stage S/.fscache --strip;
# tar -cf - -C S .fscache | xz > .fscarry/cache.tar.xz).
# Then: run(command="scripts/device_h200_l2bound.sh $OUT",
#           carry=[".whl", ".fscarry", "build/wt_mcast", "build/wt_lookahead"], kind="nvidia-h200").
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_h200_l2bound.sh OUT_DIR}
mkdir -p "$DEST"
export REQUIRE_GPU=${REQUIRE_GPU-H200}
source scripts/device_env.sh
rc=0
STEPS=${STEPS:-"stream mcast"}  # which to run (always in the order below); stream + mcast fit one call, lookahead and deep another each
# the cases whose first GEMM leaves SMs free first (a lease cut short keeps what was measured)
LOOKAHEAD_CASES=${LOOKAHEAD_CASES:-S6,S7,S2,S5,S3,S1,S4,G8,G5,S8,G6,G4,G7,G9,G10,G2,C1,C2,C3,C4,C5,C6,C7,C8}
if [[ " $STEPS " == *" stream "* ]]; then
  echo "== $(date -u +%H:%M:%S) stream floor on $GPU"
  timeout "${T_STREAM:-120}" python3 -m fusesim.calibrate.runner --out "$DEST/calibration_stream_floor$TAG.json" \
    --build-dir build/calibrate --groups info,stream_floor 2>&1 | tail -5 || rc=1
  python3 scripts/stream_floor_table.py "$DEST/calibration_stream_floor$TAG.json" || rc=1
fi
if [[ " $STEPS " == *" lookahead "* ]]; then
  echo "== $(date -u +%H:%M:%S) L2 lookahead trial on $GPU"
  (cd build/wt_lookahead && PYTHONPATH=/tmp/site:$PWD:$PWD/scripts timeout "${T_LOOKAHEAD:-240}" \
    python3 scripts/l2_lookahead_trial.py "$DEST/l2_lookahead_trial$TAG.json" "$LOOKAHEAD_CASES" 2>&1 | cut -c1-230 \
    | sed 's/unfused: cluster (1,1,1,1) //; s/grid 0x1 passes 1 //' | tail -30) || rc=1
fi
if [[ " $STEPS " == *" mcast "* ]]; then
  echo "== $(date -u +%H:%M:%S) multicast trial on $GPU"
  (cd build/wt_mcast && PYTHONPATH=/tmp/site:$PWD:$PWD/scripts timeout "${T_MCAST:-300}" \
    python3 scripts/mcast_trial.py "$DEST/mcast_trial$TAG.json" 2 2>&1 | cut -c1-200 | tail -80) || rc=1
fi
if [[ " $STEPS " == *" deep "* ]]; then
  echo "== $(date -u +%H:%M:%S) deep rings"
  NCU=0 PLANS_FILE=results/h200/plans_deep_ws.json PREFIX=deep_ws bash scripts/device_one_wave.sh "$DEST" 2>&1 \
    | grep -v "^  \|^|" | tail -24 || rc=1
fi
echo "== $(date -u +%H:%M:%S) done rc=$rc"
exit $rc
