#!/usr/bin/env bash
# Prepare HERE (no GPU) what scripts/device_h200_l2bound.sh carries: the multicast trial's generator (the tree of
# 8cdd290 with results/h200/mcast_trial.patch applied; the patch no longer applies to main) copied into
# build/wt_mcast, the L2 lookahead trial's (this checkout's HEAD with results/h200/l2_lookahead_trial.patch applied)
# into build/wt_lookahead, and the kernels of the three trials built and packed into .fscarry/cache.tar.xz (which this
# replaces: keep a copy if it holds other kernels). About 6 minutes on 2 cores.
#     bash scripts/prepare_h200_l2bound.sh
# Then: run(command="scripts/device_h200_l2bound.sh $OUT",
#           carry=[".whl", ".fscarry", "build/wt_mcast", "build/wt_lookahead"], kind="nvidia-h200").
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d)
trap 'for t in tree tree_la; do git -C "$ROOT" worktree remove --force "$WORK/$t" >/dev/null 2>&1 || true; done
      rm -rf "$WORK"' EXIT
git worktree add -q --detach "$WORK/tree" 8cdd290
git -C "$WORK/tree" apply "$ROOT/results/h200/mcast_trial.patch"
rm -rf build/wt_mcast
mkdir -p build/wt_mcast/results/h200
cp -r "$WORK"/tree/{fusesim,scripts,workloads,hw_configs} build/wt_mcast/
cp "$WORK"/tree/results/h200/plans_final_*.json "$WORK"/tree/results/h200/final_paper_*.json build/wt_mcast/results/h200/
find build/wt_mcast -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$WORK/cache" "$WORK/stage/.fscache"
(cd build/wt_mcast && FUSESIM_CACHE="$WORK/cache" PYTHONPATH=$PWD:$PWD/scripts \
  python3 scripts/mcast_trial.py --stage "$WORK/stage/.fscache" 2 | tail -1)
git worktree add -q --detach "$WORK/tree_la" HEAD
git -C "$WORK/tree_la" apply "$ROOT/results/h200/l2_lookahead_trial.patch"
rm -rf build/wt_lookahead
mkdir -p build/wt_lookahead/results/h200
cp -r "$WORK"/tree_la/{fusesim,scripts,workloads,hw_configs} build/wt_lookahead/
cp "$WORK"/tree_la/results/h200/final11_paper_*.json* build/wt_lookahead/results/h200/
find build/wt_lookahead -name __pycache__ -prune -exec rm -rf {} +
(cd build/wt_lookahead && FUSESIM_CACHE="$WORK/cache" PYTHONPATH=$PWD:$PWD/scripts \
  python3 scripts/l2_lookahead_trial.py --build-only | tail -1 &&
  FUSESIM_CACHE="$WORK/cache" PYTHONPATH=$PWD:$PWD/scripts \
  python3 scripts/l2_lookahead_trial.py --stage "$WORK/stage/.fscache" | tail -1)
FUSESIM_CACHE="$WORK/cache" python3 scripts/prebuild.py --plans-file results/h200/plans_deep_ws.json \
  --stage "$WORK/stage/.fscache" --strip | tail -1
mkdir -p .fscarry
tar -cf - -C "$WORK/stage" .fscache | xz -6 -T2 > .fscarry/cache.tar.xz
echo "build/wt_mcast, build/wt_lookahead and .fscarry/cache.tar.xz ($(du -h .fscarry/cache.tar.xz | cut -f1)) ready"
