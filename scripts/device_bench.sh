#!/usr/bin/env bash
# The one command for a bare GPU machine (no network): install the wheels carried in .whl/
# (see scripts/device_wheels.sh), then verify + time every paper case and the odd shapes.
# Usage on the device (repo root):  scripts/device_bench.sh [RESULT_DIR]   (env: PLANS, TOPK, NCU)
# Through the device tool: run(command="scripts/device_bench.sh $OUT", carry=[".whl"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-results/h200}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, carried kernels
extra=()
[ "${NCU:-0}" = 1 ] && extra+=(--ncu)
rc=0
timeout 120 python3 -m fusesim.gpu.oddshapes --out "$DEST/oddshapes.json" || rc=1
for wl in paper_gemm_chains paper_gated_ffn paper_conv_chains; do
  python3 -m fusesim.commands.bench "workloads/$wl.yaml" --hw hw_configs/h200.yaml --plans "${PLANS:-planner}" \
    --top-k "${TOPK:-3}" --work /tmp/bench_work "${extra[@]}" --out "$DEST/bench_$wl.json" || rc=1
done
exit $rc
