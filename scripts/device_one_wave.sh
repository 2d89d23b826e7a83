#!/usr/bin/env bash
# One device call: the weight-streaming cases' one-wave tile-width variants of each GEMM
# (results/h200/plans_one_wave.json, made here by
#   python3 scripts/wgmma_variants.py --one-wave --finals results/h200/final11_paper_gemm_chains.json \
#     results/h200/final11_paper_gated_ffn.json --out results/h200/plans_one_wave.json)
# timed twice beside their bases (final11's fastest plan of each case), with Nsight Compute's per-kernel
# durations and DRAM bytes in the first run (RUNS=1: once). PLANS_FILE and PREFIX (defaults: plans_one_wave.json,
# one_wave) run another such set the same way (the deep-ring set: results/h200/plans_deep_ws.json, deep_ws). Kernels prebuilt here (scripts/prebuild.py --plans-file ...,
# carried in .fscarry/cache.tar.xz). Then: run(command="scripts/device_one_wave.sh $OUT", carry=[".whl", ".fscarry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_one_wave.sh OUT_DIR}
source scripts/device_env.sh
export PLANS=${PLANS_FILE:-results/h200/plans_one_wave.json}
PREFIX=${PREFIX:-one_wave}
rc=0
NAME=${PREFIX}_run1${TAG} bash scripts/device_wgmma_sweep.sh "$DEST" || rc=1
[ "${RUNS:-2}" -lt 2 ] || NAME=${PREFIX}_run2${TAG} NCU=0 bash scripts/device_wgmma_sweep.sh "$DEST" || rc=1
python3 - "$DEST" "$TAG" "${RUNS:-2}" "$PREFIX" <<'PY' || rc=1
import sys
from fusesim.stored import read_json
dest, tag, n, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for wl in ("gemm_chains", "gated_ffn"):
    runs = [read_json(f"{dest}/{prefix}_run{i}{tag}_{wl}.json") for i in ((1, 2) if n > 1 else (1, 1))]
    for c1, c2 in zip(runs[0]["cases"], runs[1]["cases"]):
        base = None
        for p1, p2 in zip(c1["plans"], c2["plans"]):
            t = [(p.get("time") or {}).get("queued_median_us") for p in (p1, p2)]
            ok = all((p.get("verify") or {}).get("ok") for p in (p1, p2))
            if None in t:
                print(c1["case"], "no time", p1.get("build_error") or "")
                continue
            g = (t[0] * t[1]) ** 0.5
            base = base or g
            ks = " ".join(f"{k['tiles']['block_n']}w/{k['grid_blocks']}b/{k['stages']}st" for k in p1["plan"]["kernels"])
            print(f"{c1['case']:4} {ks:34} {t[0]:7.2f} {t[1]:7.2f} x{g / base:.3f} {'ok' if ok else 'FAIL'}")
PY
echo "done rc=$rc"
exit $rc
