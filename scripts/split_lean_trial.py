"""Do split-K gemm_wgmma GEMMs that sum their parts in slices end sooner lean (`capability.GEMM_SPLIT_LEAN`): each part
leaves out of its slice the share it sums itself (1/split of its partial's stores), and the parts' barrier is one
atomicInc per part on an epoch-counting ticket instead of an atomicAdd, the poll and a second atomicAdd whose last
part re-zeroed the ticket? Per-block timelines (results/h200/probe_splitk_tail_shared_h100.json) put 1.9-2.1 us
between the last wgmma and the barrier on S1 and G5's gemm1 (the partial's stores) and 0.4-1.1 us in the barrier of
a tile's last part to arrive. One device call: every plan of final8's lists (results/h200/plans_final8_*.json) with
a GEMM that sums in slices (`capability.kernel_split_shared`; 48), built both ways, each verified against the float32
PyTorch reference (two launches: the second finds the first's ticket counts), then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

    python3 scripts/split_lean_trial.py --build-only     (on the GPU machine first: 16 cores)
    python3 scripts/split_lean_trial.py OUT.json          (then the trial; scripts/device_split_lean.sh)
"""

from __future__ import annotations

from store_trial import listed_sources, trial_main

VARIANTS = {"slices": False, "lean": True}
PLANS = "results/h200/plans_final8_*.json"


def sums_in_slices(plan) -> bool:
    """Whether a GEMM of `plan` sums its split-K parts in slices (what the lean form changes)."""
    from fusesim.capability import kernel_split_shared

    return plan.strategy == "unfused" and plan.instruction == "wgmma" and any(
        kernel_split_shared(plan, k) for k in plan.kernels)


def sources():
    """(case, plan, {variant: Source}) of every final8 plan with a GEMM that sums in slices."""
    return listed_sources(PLANS, sums_in_slices, "gemm_split_lean", VARIANTS)


def main() -> int:
    return trial_main(sources, "slices", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
