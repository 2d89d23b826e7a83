"""Does gemm_wgmma load its A tiles faster as one TMA multicast per cluster of neighbouring column tiles?
One device call: every unfused gemm_wgmma plan of the final run (results/h200/plans_final_*.json) in
which at least one GEMM can share its A tiles, built three ways -- every block loading its own A tiles
from L2 (GEMM_MULTICAST_A = 1: the generator's kernel), clusters of 2 and clusters of 4 (each block
issues its share of the rows for all, and refills a stage once every block of the cluster drained it)
-- plus the same at odd M (1, 77) on a few of them, each verified against the float32 PyTorch
reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes JSON to OUT.

The multicast form is not in the generator (measured slower): apply its patch first,

    git apply results/h200/mcast_trial.patch
    python3 scripts/mcast_trial.py --stage /tmp/stage/.fscache [N]   (here: build, then copy for the carry)
    python3 scripts/mcast_trial.py OUT.json [N]                      (on the GPU machine)

N: only each case's N fastest plans in the final run (default 0: every plan).
"""

from __future__ import annotations

from store_trial import plans, switched_sources, trial_main, unfused_wgmma

VARIANTS = {"own A": 1, "multicast 2": 2, "multicast 4": 4}
ODD_M = {"G4": (1, 77), "S2": (77,), "G9": (77,)}  # the case's fastest plan taken, at these M


def _applies(plan, mc: int) -> bool:
    import fusesim.capability

    if not hasattr(fusesim.capability, "wgmma_multicast"):
        raise SystemExit("fusesim.capability has no wgmma_multicast: git apply results/h200/mcast_trial.patch first")
    from fusesim.capability import generator_switches, wgmma_multicast

    with generator_switches({"gemm_multicast_a": mc}):
        return any(wgmma_multicast(plan, k) > 1 for k in plan.kernels)


def _at_m(plan, m: int):
    """`plan` with the chain's M set to `m` (each kernel's grid follows its row tiles)."""
    from fusesim.plan import Plan

    d = plan.to_dict()
    d["chain"]["m"] = m
    for k in d["kernels"]:
        bm = k["tiles"]["block_m"]
        k["grid_blocks"] = k["grid_blocks"] // -(-plan.chain.m // bm) * -(-m // bm)
    return Plan.from_dict(d)


def _measured_us() -> dict[str, float]:
    """Plan JSON -> its time in the final run (results/h200/final_paper_*.json)."""
    from fusesim.plan import Plan
    from fusesim.report.measured import load_measured
    from fusesim.stored import glob_json

    return {Plan.from_dict(m.plan_dict).to_json(): m.time_us
            for m in load_measured(glob_json("results/h200/final_paper_*.json")).items if m.plan_dict}


def sources(per_case: str = "0"):
    """(case, plan, {variant: Source}) of the final-run unfused wgmma plans that multicast changes (per case
    the `per_case` fastest in the final run; 0: all of them)."""
    from fusesim.plan import Plan

    seen: set[str] = set()
    first: dict[str, Plan] = {}
    us = _measured_us()
    listed = [(case, Plan.from_dict(pd)) for case, pd in plans(unfused_wgmma)]
    listed.sort(key=lambda cp: us.get(cp[1].to_json(), float("inf")))
    taken: dict[str, int] = {}
    for case, plan in sorted(listed, key=lambda cp: cp[0]):
        if plan.to_json() in seen or not _applies(plan, 2) or 0 < int(per_case) <= taken.get(case, 0):
            continue
        seen.add(plan.to_json())
        taken[case] = taken.get(case, 0) + 1
        first.setdefault(case, plan)
        variants = {n: v for n, v in VARIANTS.items() if v == 1 or _applies(plan, v)}
        yield case, plan, switched_sources(plan, "gemm_multicast_a", variants)
    for case, ms in ODD_M.items():
        for m in ms:
            plan = _at_m(first[case], m)
            variants = {n: v for n, v in VARIANTS.items() if v == 1 or _applies(plan, v)}
            yield f"{case}@M{m}", plan, switched_sources(plan, "gemm_multicast_a", variants)


def main() -> int:
    return trial_main(sources, "own A", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
