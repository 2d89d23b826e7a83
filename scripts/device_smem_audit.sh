#!/usr/bin/env bash
# One device call: Nsight Compute's shared-memory counters (LSU wavefronts and bank conflicts of
# ld/st.shared, ldmatrix, cp.async SMEM writes) of every verified plan of the final run, per template family
# (fusesim.gpu.ncu --smem).
# Prepare HERE: the final run's kernels staged as for scripts/device_ebuf_trial.sh; carry .whl and .fscarry.
# The JSONs hold each plan's counters per kernel (`ncu_smem` block); the printed table is fusesim.gpu.ncu.smem_table.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_smem_audit.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
rc=0
echo "== metric names this ncu knows:"
ncu --query-metrics --chip gh100 2>/dev/null | grep -E "data_bank_conflicts_pipe_lsu_mem_shared_op|data_pipe_lsu_wavefronts_mem_shared_op|sass_inst_executed_op_shared_(ld|st) " | cut -c1-100
for wl in gemm_chains gated_ffn conv_chains; do
  echo "== $(date -u +%H:%M:%S) ncu --smem $wl"
  timeout 200 python3 -m fusesim.gpu.ncu --smem "results/h200/final_paper_$wl.json" "$DEST/smem_audit_$wl.json" \
    | grep -v "^[CGS][0-9]" | tail -14 || rc=1
done
exit $rc
