#!/usr/bin/env bash
# One device call: time gemm1 split-K through DSM (results/h200/plans_dsm_split_trial.json, made
# here by scripts/dsm_split_variants.py: per weight-streaming case the final run's fastest unfused
# wgmma plan as the control, then its gemm1 as clusters of split parts) next to PyTorch, then read
# Nsight Compute per-kernel duration, DRAM and DSM bytes of every verified plan: the sweep's script
# on another plans file.
# Prepare HERE:
#   bash scripts/device_wheels.sh
#   python3 scripts/dsm_split_variants.py --out results/h200/plans_dsm_split_trial.json
#   FUSESIM_CACHE=.fscache_trial python3 scripts/prebuild.py --plans-file results/h200/plans_dsm_split_trial.json
#   rm -rf /tmp/stage && mkdir -p /tmp/stage && cp -r .fscache_trial /tmp/stage/.fscache && tar -cJf .fscarry/cache.tar.xz -C /tmp/stage .fscache
# Then: run(command="scripts/device_dsm_split_trial.sh $OUT", carry=[".whl", ".fscarry"]).
PLANS=results/h200/plans_dsm_split_trial.json NAME=dsm_split_trial exec "$(dirname "$0")/device_wgmma_sweep.sh" "$@"
