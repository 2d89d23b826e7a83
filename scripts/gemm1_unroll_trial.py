"""Does unrolling fused_wgmma's GEMM1 k-tile loop (KT1 = block_n / 64 > 1) pay? ptxas serialized the wgmmas of
C1's dsm plan with the loop rolled (C7520, "... WG.AR in divergent path"), and that plan's standalone harness ran
0.945x the time unrolled on an H100 (results/h200/unroll_probe_h100.jsonl). One device call: per paper case the
three fastest fused_wgmma plans with block_n > 64 of the final run (results/h200/final_paper_*.json), built two
ways -- the loop rolled (`#pragma unroll 1`, FUSED_GEMM1_UNROLL off: the generator's kernels until this trial)
and unrolled (on) -- each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

    python3 scripts/gemm1_unroll_trial.py --build-only   (on the GPU machine first: 16 cores)
    python3 scripts/gemm1_unroll_trial.py OUT.json        (then the trial; scripts/device_gemm1_unroll.sh)
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"rolled": False, "unrolled": True}
PER_CASE = 3


def sources():
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured fused_wgmma plans whose GEMM1
    loop has more than one k tile."""

    def keep(plan) -> bool:
        return plan.strategy != "unfused" and plan.instruction == "wgmma" and plan.tiles.block_n > 64

    for case, plan in fastest_final_plans(keep, PER_CASE):
        yield case, plan, switched_sources(plan, "fused_gemm1_unroll", VARIANTS)


def main() -> int:
    return trial_main(sources, "rolled", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
