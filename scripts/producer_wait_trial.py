"""Does fused_wgmma's producer warp waiting on the entry cluster barrier between its load jobs hang or cost
anything? One device call: per paper case the three fastest fused_wgmma plans of the final run
(results/h200/final_paper_*.json) whose producer would wait there (`capability.fused_wgmma_producer_early_wait`:
a cluster, and more ring jobs than GEMM0's k tiles plus the ring's stages), built two ways -- the wait after the
loop (FUSED_PRODUCER_EARLY_WAIT off: the generator's kernels until 2026-12-06, on which racecheck deadlocks) and
warp 0 waiting, converged, just before the first job whose slot the consumers free after their own wait (on, the
generator's since this trial: results/h200/producer_wait_trial_h100.json) -- each verified
against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice).
Writes JSON to OUT.

    python3 scripts/producer_wait_trial.py --stage DIR/.fscache   (here)
    python3 scripts/producer_wait_trial.py OUT.json             (on the GPU machine)
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"wait after loop": False, "wait in loop": True}
PER_CASE = 3


def sources():
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured plans with the early wait."""
    from fusesim.capability import codegen_switches, fused_wgmma_producer_early_wait, generator_switches

    def early(plan) -> bool:
        with generator_switches({**codegen_switches(), "fused_producer_early_wait": True}):
            return plan.strategy != "unfused" and plan.instruction == "wgmma" and fused_wgmma_producer_early_wait(plan)

    for case, plan in fastest_final_plans(early, PER_CASE):
        yield case, plan, switched_sources(plan, "fused_producer_early_wait", VARIANTS)


def main() -> int:
    return trial_main(sources, "wait after loop", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
