#!/usr/bin/env bash
# One device call (any Hopper GPU; an H100's files are named _h100): the CUDA-graph launch trial. Per paper case and
# strategy final11's fastest plan (results/h200/plans_graph_launch.json, scripts/freeze_graph_launch_plans.py), each
# verified and timed as launched (ctypes -> fs_launch) and, `fusesim bench --graph-launch`, captured into a CUDA
# graph, verified again as its replays and timed as them; PyTorch eager and CUDA graphs beside, as bench runs.
# Prepare HERE (kernels prebuilt, 78 plans: 60 s on this 2-core machine into an empty cache, 2026-12-08):
#   FUSESIM_CACHE=/tmp/gcache python3 scripts/prebuild.py --plans-file results/h200/plans_graph_launch.json \
#     --stage build/graph_stage/.fscache --strip && mkdir -p build/graph_carry && tar -cJf build/graph_carry/cache.tar.xz -C build/graph_stage .fscache
# Then: run(command="scripts/device_graph_launch.sh $OUT", carry=[".whl", "build/graph_carry"]).
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_graph_launch.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
if [ -f build/graph_carry/cache.tar.xz ]; then
  mkdir -p /tmp/graph_carry && tar -xJf build/graph_carry/cache.tar.xz -C /tmp/graph_carry \
    && cp -rn /tmp/graph_carry/.fscache/. "$FUSESIM_CACHE"/
fi
rc=0
outs=()
for wl in ${WORKLOADS:-gemm_chains gated_ffn conv_chains}; do  # WORKLOADS: a shorter lease runs fewer
  echo "== $(date -u +%H:%M:%S) bench $wl on $GPU"
  out="$DEST/graph_launch${TAG}_$wl.json"
  timeout "${BENCH_TIMEOUT:-170}" python3 -m fusesim.commands.bench "workloads/paper_$wl.yaml" --hw hw_configs/h200.yaml \
    --plans file:results/h200/plans_graph_launch.json --top-k 99 --reps 50 --graph-launch --work /tmp/bench_work \
    --out "$out" 2>&1 | grep -v "^  " | tail -4 || rc=1
  outs+=("$out")
done
python3 scripts/graph_launch_table.py "${outs[@]}" || rc=1
echo "== $(date -u +%H:%M:%S) done rc=$rc"
exit $rc
