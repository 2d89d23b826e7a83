#!/usr/bin/env bash
# One device call: split-K through DSM on the cases with a floor under 10 us that have an unfused wgmma plan
# (results/h200/plans_dsm_split_small.json, made here by `scripts/dsm_split_variants.py --small 3`: per case
# the final run's fastest unfused wgmma plan as the control and the simulator's three fastest variants of its
# tiles with split-K through DSM in gemm0, gemm1 or both), timed next to PyTorch, then Nsight Compute per
# kernel: the sweep's script on another plans file and other cases.
# Prepare HERE:
#   bash scripts/device_wheels.sh
#   PYTHONPATH=scripts python3 scripts/dsm_split_variants.py --small 3 --out results/h200/plans_dsm_split_small.json
#   python3 scripts/prebuild.py --plans-file results/h200/plans_dsm_split_small.json --stage DIR/.fscache
#   tar -cJf .fscarry/cache.tar.xz -C DIR .fscache
# Then: run(command="scripts/device_dsm_split_small.sh $OUT", carry=[".whl", ".fscarry"]).
PLANS=results/h200/plans_dsm_split_small.json NAME=dsm_split_small GEMM_CASES="G2 G4 G6 G7 G9 G10" GATED_CASES="S8" \
  CONV_CASES="C2 C3 C4" exec "$(dirname "$0")/device_wgmma_sweep.sh" "$@"
