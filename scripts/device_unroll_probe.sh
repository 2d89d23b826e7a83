#!/usr/bin/env bash
# One device call: does ptxas's serialization of C1's dsm plan (the planner's pick; "wgmma.mma_async instructions
# are serialized due to ... WG.AR in divergent path", C7520) cost time? Its harness as generated vs with GEMM1's
# k-tile loop unrolled (`#pragma unroll` instead of `#pragma unroll 1`, which compiles without the warning),
# three rounds each, interleaved. Prepare HERE: bash scripts/device_wheels.sh.
# Then: run(command="scripts/device_unroll_probe.sh $OUT", carry=[".whl"]). It records the run before
# capability.FUSED_GEMM1_UNROLL (on since: codegen emits the unrolled loop, and the patch step below stops on its
# assert); scripts/gemm1_unroll_trial.py builds both forms through the switch.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_unroll_probe.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh  # wheels, PYTHONPATH, $GPU, $TAG
SRC=/tmp/unroll_probe
rm -rf "$SRC"
python3 -m fusesim codegen workloads/paper_conv_chains.yaml --hw hw_configs/h200.yaml --case C1 --out "$SRC" > /dev/null
NAME=$(basename "$SRC"/C1_*_main.cu _main.cu)
python3 - "$SRC/$NAME.cu" "$SRC/${NAME}u.cu" <<'PY'
import sys
s = open(sys.argv[1]).read()
old = "#pragma unroll 1\n        for (int kt = 0; kt < KT1; ++kt, ++j) {"
assert s.count(old) == 1
open(sys.argv[2], "w").write(s.replace(old, "#pragma unroll\n        for (int kt = 0; kt < KT1; ++kt, ++j) {"))
PY
# the variant's harness includes the unrolled .cu and names itself NAMEu (at the committed run it still said NAME:
# its rows alternate as generated, unrolled, per round)
sed -e "s/#include \"$NAME.cu\"/#include \"${NAME}u.cu\"/" -e "s/const char\* const NAME = \"$NAME\";/const char* const NAME = \"${NAME}u\";/" \
  "$SRC/${NAME}_main.cu" > "$SRC/${NAME}u_main.cu"
make -C "$SRC" -s 2> "$DEST/unroll_probe_make$TAG.log"
grep -c C7520 "$DEST/unroll_probe_make$TAG.log"
for r in 1 2 3; do
  for v in "$NAME" "${NAME}u"; do
    "$SRC/$v" --json --reps 100 --seed $r >> "$DEST/unroll_probe$TAG.jsonl" || echo "FAIL $v"
  done
done
python3 - "$DEST/unroll_probe$TAG.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for k in sorted({r["kernel"] for r in rows}):
    q = [r["queued_median_us"] for r in rows if r["kernel"] == k]
    print(k, "verified", all(r["verified"] for r in rows if r["kernel"] == k), "queued medians", q, "median", statistics.median(q))
PY
