#!/usr/bin/env bash
# One device call that re-checks today's generator for correctness on the GPU it lands on:
#   1. every GPU test (tests/test_gpu.py, `-m gpu`: one plan per template family and dsm_comm form, float32
#      reference, outputs poisoned);
#   2. odd shapes (fusesim.gpu.oddshapes: predicated M, two images, every dsm_comm form), verification only;
#   3. compute-sanitizer memcheck, racecheck and synccheck on one kernel per template family and cluster size
#      (fusesim.gpu.sanitize), last: what the time limit leaves.
# Prepare HERE: bash scripts/device_wheels.sh; python3 scripts/prebuild.py --representatives --oddshapes --sanitize
# --stage DIR/.fscache (with any other run's plans); tar -cf - -C DIR .fscache | xz -9 -T2 > .fscarry/cache.tar.xz.
# Then: run(command="scripts/device_checks.sh $OUT", carry=[".whl", ".fscarry"]). Files end in _h100 on an H100.
# NAME names the files (checks_*); SAN_ONLY=TEXT sanitizes only the families whose name contains it; T_TESTS, T_ODD,
# T_SAN bound the three steps (s).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_checks.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels, $GPU, $TAG
NAME=${NAME:-checks}
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "gpu tests"
timeout "${T_TESTS:-200}" python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider \
  --junitxml "$DEST/${NAME}_gpu_tests$TAG.xml" 2>&1 | tail -3 || rc=1
step "odd shapes"
timeout "${T_ODD:-150}" python3 -m fusesim.gpu.oddshapes --out "$DEST/${NAME}_oddshapes$TAG.json" | tail -4 || rc=1
step "compute-sanitizer"
# shellcheck disable=SC2086
timeout "${T_SAN:-200}" python3 -m fusesim.gpu.sanitize ${SAN_ONLY:+--only "$SAN_ONLY"} --out "$DEST/${NAME}_sanitize$TAG.json" \
  | tail -8 || rc=1
step "done rc=$rc"
exit $rc
