"""Does fused_wgmma start sooner when its producer issues job 0's loads inside the prologue? One device call: of
the 17 cases whose floor is under 10 us, the two fastest fused_wgmma plans (any cluster size) of the last whole
run (results/h200/final5_paper_*.json), built three ways -- job 0 issued by the producer loop after the block
barrier and the start cluster arrive (the run's kernels), and job 0 or every stage the ring starts with issued
right after the ring's barriers are initialised (FUSED_EARLY_ISSUE 1, -1) -- each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

    FUSESIM_CACHE=.fscache PYTHONPATH=scripts python3 scripts/early_issue_trial.py --build-only   (here)
    PYTHONPATH=$PYTHONPATH:scripts python3 scripts/early_issue_trial.py OUT.json                   (on the GPU machine)
"""

from __future__ import annotations

from relaxed_arrive_trial import SMALL
from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"prologue issue": 0, "job 0 early": 1, "ring early": -1}
PER_CASE = 2
RUN = "results/h200/final5_paper_*.json"


def sources():
    """(case, plan, {variant: Source}) of each small case's PER_CASE fastest measured fused_wgmma plans."""
    def fused_wgmma(plan) -> bool:
        return plan.strategy != "unfused" and plan.instruction == "wgmma" and plan.case_id in SMALL

    for case, plan in fastest_final_plans(fused_wgmma, PER_CASE, RUN):
        yield case, plan, switched_sources(plan, "fused_early_issue", VARIANTS)


def main() -> int:
    return trial_main(sources, "prologue issue", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
