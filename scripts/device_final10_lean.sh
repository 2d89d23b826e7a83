#!/usr/bin/env bash
# One device call: final10's bench (the shortlist, results/h200/plans_short10_*.json, with the generator as committed:
# GEMM_SPLIT_LEAN off), then the lean split-K trial (scripts/device_split_lean.sh STEPS=trial), then final10's Nsight
# step (the bench files come back first, whatever the later steps do).
# Prepare HERE: bash scripts/device_wheels.sh (and .fscarry/cache.tar.xz, scripts/device_final2.sh says how). Then:
# run(command="REQUIRE_GPU=H200 scripts/device_final10_lean.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_final10_lean.sh OUT_DIR}
export PREFIX=final10_paper_ PLANS_PREFIX=plans_short10_
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120} STEPS=bench scripts/device_final2.sh "$DEST" || [ $? -ne 3 ] || exit 3
T_TRIAL=${T_TRIAL:-100} STEPS=trial scripts/device_split_lean.sh "$DEST"
NCU_TIMEOUT=${NCU_TIMEOUT:-100} STEPS=ncu scripts/device_final2.sh "$DEST"
