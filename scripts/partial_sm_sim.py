"""Would the first GEMM of S2-S7 end sooner on all 132 SMs? A simulator question, no GPU.

final11's fastest plans of S2, S3, S5, S6 and S7 (the H200 run of benchmarks/kernels.md) run their first GEMM on
70-88 blocks, one per SM: the column tiles of N = 5632-11008 do not fill 132 SMs, and one more split or a narrower
tile makes a second wave. A stream-K first GEMM would spread the same tiles' k ranges over all 132 SMs. Its stand-in
here: the same plan on a chain with N = 132 column tiles and K cut by blocks/132 (the same bytes to within 2%, the
same tile and ring, one block per SM), simulated on the calibrated H200 file; the printed ratio is the stand-in's
first-GEMM span over the plan's (kernel start to last block; stream-K's fix-up of the tiles split between blocks is
not in it, so the ratio is a lower bound on what stream-K would take). Nsight Compute's average DRAM rates of these
kernels (2.7-3.7 TB/s of ~4.2, final11) suggested headroom; in the model the body streams at the HBM rate already,
which the last two columns check: the same two spans with the file's HBM bandwidth doubled.

    python3 scripts/partial_sm_sim.py
"""

from __future__ import annotations

import copy

CASES = ("S2", "S3", "S5", "S6", "S7")
BENCH = "results/h200/final11_paper_gated_ffn.json"
HW = "hw_configs/h200_calibrated.yaml"


def first_gemm_span_us(plan_dict: dict, hw) -> float:
    from fusesim.plan import Plan
    from fusesim.sim.engine import simulate

    k0 = simulate(Plan.from_dict(plan_dict), hw).kernels[0]
    return (k0["end_ns"] - k0["start_ns"]) / 1e3


def stand_in(plan_dict: dict, sm_count: int) -> dict:
    """The plan on a chain whose first GEMM has `sm_count` column tiles and blocks/sm_count of the k tiles."""
    pd = copy.deepcopy(plan_dict)
    ch, k0 = pd["chain"], pd["kernels"][0]
    bn, bk = k0["tiles"]["block_n"], k0["tiles"]["block_k"]
    k_tiles = max(1, round(ch["k"] // bk * k0["grid_blocks"] / sm_count))
    ch["n"], ch["k"], k0["grid_blocks"] = sm_count * bn, k_tiles * bk, sm_count
    return pd


def main() -> int:
    from store_trial import fastest_final_plans

    from fusesim.hardware import load_hardware

    hw = load_hardware(HW)
    hw2 = load_hardware(HW, {"hbm_bandwidth_gbps": 2 * hw.hbm_bandwidth_gbps})
    rows = []
    for case, plan in fastest_final_plans(lambda p: p.case_id in CASES, 1, BENCH):  # each case's fastest verified
        pd = plan.to_dict()
        alt = stand_in(pd, hw.sm_count)
        spans = [first_gemm_span_us(p, h) for h in (hw, hw2) for p in (pd, alt)]
        size = (alt["chain"]["n"] * alt["chain"]["k"]) / (pd["chain"]["n"] * pd["chain"]["k"])
        rows.append((case, pd["kernels"][0]["grid_blocks"], size, spans))
    print(f"first GEMM on all SMs, simulated on {HW} (plans: {BENCH})")
    print("| case | blocks | bytes ratio | first GEMM us | on 132 SMs us | ratio | 2x HBM: first GEMM us | on 132 SMs us | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, blocks, size, (span, alt_span, span2, alt_span2) in rows:
        print(f"| {case} | {blocks} | {size:.3f} | {span:.2f} | {alt_span:.2f} | {alt_span / span:.3f} "
              f"| {span2:.2f} | {alt_span2:.2f} | {alt_span2 / span2:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
