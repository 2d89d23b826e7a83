#!/usr/bin/env bash
# One device call: why the standalone harnesses' queued medians differ from fusesim bench's Python path
# (scripts/harness_timing_probe.py: harness variants, each changing one thing, next to the runner, interleaved).
# Prepare HERE: bash scripts/device_wheels.sh. Then: run(command="scripts/device_harness_probe.sh $OUT", carry=[".whl"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_harness_probe.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, FUSESIM_CACHE, $GPU, $TAG
SRC=/tmp/harness_probe_src
rm -rf "$SRC"
python3 -m fusesim codegen workloads/paper_gemm_chains.yaml --hw hw_configs/h200.yaml --case G1 --case G4 --case G8 --out "$SRC" > /dev/null
python3 -m fusesim codegen workloads/paper_gated_ffn.yaml --hw hw_configs/h200.yaml --case S8 --out "$SRC" > /dev/null
python3 -m fusesim codegen workloads/paper_conv_chains.yaml --hw hw_configs/h200.yaml --case C5 --out "$SRC" > /dev/null
timeout "${T_PROBE:-400}" python3 scripts/harness_timing_probe.py "$SRC" --cases G1 G4 G8 S8 C5 \
  --rounds "${ROUNDS:-3}" --out "$DEST/harness_probe$TAG.json"
