"""Does fused_wgmma's exit cluster barrier cost less when each block arrives as soon as everything addressed
to it has landed? One device call: per paper case the three fastest fused_wgmma plans with clusters of 2 or
more in the final run (results/h200/final_paper_*.json), built two ways -- arrive and wait at the exit
(FUSED_EARLY_EXIT_ARRIVE off: cluster_sync, the final run's barrier) and the arrive moved to where the block's
last incoming data has landed, the wait left at the exit (on: the generator's kernel) -- each verified
against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice).
Writes JSON to OUT.

    FUSESIM_CACHE=.fscache python3 scripts/exit_arrive_trial.py --stage /tmp/stage/.fscache   (here)
    python3 scripts/exit_arrive_trial.py OUT.json       (on the GPU machine)
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"exit sync": False, "early arrive": True}
PER_CASE = 3


def sources():
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured cluster plans."""
    def cluster_plan(plan) -> bool:
        return plan.strategy != "unfused" and plan.instruction == "wgmma" and plan.cluster.size > 1

    for case, plan in fastest_final_plans(cluster_plan, PER_CASE):
        yield case, plan, switched_sources(plan, "fused_early_exit_arrive", VARIANTS)


def main() -> int:
    return trial_main(sources, "exit sync", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
