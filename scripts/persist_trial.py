"""Does removing the kernel boundary between gemm_wgmma's two GEMMs buy anything? One device call:
the final run's unfused gemm_wgmma plans whose gemm0 has no split-K (results/h200/plans_final_*.json),
each built as the generator emits it (two kernels, gemm1 a programmatic dependent launch) and as one
persistent cooperative kernel (fusesim.codegen.GEMM_PERSISTENT: every block runs a gemm0 tile and
releases a readiness flag for its C' columns, then gemm1 items whose D tiles stream while their
producer acquires each C' chunk's flag before its TMA load), each verified against the float32
PyTorch reference (two launches: the flags carry an epoch), then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

The persistent form is not in the generator (measured slower; results/h200/README.md): the trial ran
with `git apply results/h200/persist_trial.patch` (gemm_wgmma.cu.j2's kernels as device bodies, the
persistent kernel and its flags, fusesim.codegen.GEMM_PERSISTENT), which this script needs.

    git apply results/h200/persist_trial.patch
    FUSESIM_CACHE=.fscache python3 scripts/persist_trial.py --build-only     (here)
    FUSESIM_CACHE=.fscache python3 scripts/persist_trial.py --stage /tmp/stage/.fscache
    python3 scripts/persist_trial.py OUT.json [CASES]   (on the GPU machine; scripts/device_persist_trial.sh)
"""

from __future__ import annotations

from store_trial import codegen_variants, trial_main

VARIANTS = {"two kernels": False, "persistent": True}


def sources(cases: str | None = None):
    """(case, plan, {variant: Source}) of the plans the persistent form supports (of `cases`, a
    comma-separated list, when given)."""
    only = set(cases.split(",")) if cases else None
    return codegen_variants("GEMM_PERSISTENT", VARIANTS, lambda plan: supported(plan, only), patched="GEMM_PERSISTENT")


def supported(plan, only: set[str] | None) -> bool:
    """gemm0 without split-K, both GEMMs with the same tile height, every block resident at once
    (a cooperative launch of at most one block per SM of the H200), gemm1 without a cluster."""
    from fusesim.capability import kernel_split

    ch = plan.chain
    g0, g1 = plan.kernels
    return ((not only or plan.case_id in only) and kernel_split(g0, ch.m, ch.n) == 1
            and g0.tiles.block_m == g1.tiles.block_m and max(g0.grid_blocks, g1.grid_blocks) <= 132
            and g1.cluster_size == 1)


def main() -> int:
    return trial_main(sources, "two kernels", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
