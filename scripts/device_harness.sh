#!/usr/bin/env bash
# One device call that takes the generated kernels "home": `fusesim codegen` for all 26 paper cases (the planner's
# pick, default ranking), `make` of the standalone harnesses it writes (nvcc alone), each harness run (verify +
# CUDA-event times), the same plans timed through fusesim bench's Python path for comparison
# (scripts/harness_check.py), and the harness GPU tests (tests/test_harness.py -m gpu).
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_harness.sh $OUT", carry=[".whl"]).
# Files end in _h100 on an H100.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_harness.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, $GPU, $TAG
NAME=${NAME:-harness_check}
SRC=/tmp/harness_src
rc=0
step() { echo "== $(date -u +%H:%M:%S) $*"; }
step "codegen, 26 paper cases"
rm -rf "$SRC"
for w in gemm_chains gated_ffn conv_chains; do
  cases=$(python3 -c "import yaml; print(' '.join('--case ' + c['id'] for c in yaml.safe_load(open('workloads/paper_$w.yaml'))['cases']))")
  # shellcheck disable=SC2086
  python3 -m fusesim codegen "workloads/paper_$w.yaml" --hw hw_configs/h200.yaml $cases --out "$SRC" || rc=1
done
step "make"
make -C "$SRC" -j16 -s > "$DEST/${NAME}_make$TAG.log" 2>&1 || rc=1
ls "$SRC"/*_main.cu | wc -l
step "harnesses vs runner"
timeout "${T_CHECK:-300}" python3 scripts/harness_check.py "$SRC" --out "$DEST/${NAME}$TAG.json" || rc=1
step "harness gpu tests"
timeout "${T_TESTS:-200}" python3 -m pytest -q -m gpu tests/test_harness.py -p no:cacheprovider \
  --junitxml "$DEST/${NAME}_tests$TAG.xml" 2>&1 | tail -3 || rc=1
step "done rc=$rc"
exit $rc
