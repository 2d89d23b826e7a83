#!/usr/bin/env bash
# One device call: scripts/act_math_trial.py (activation math of the epilogues: erff / IEEE division
# as generated vs MUFU tanh forms), kernels prebuilt here:
#   FUSESIM_CACHE=.fscache_act python3 scripts/act_math_trial.py --build-only, staged as .fscache in
#   .fscarry/cache.tar.xz (as scripts/device_dsm_split_trial.sh says); carry .whl and .fscarry.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_act_math_trial.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
timeout 400 python3 scripts/act_math_trial.py "$DEST/act_math_trial.json"
