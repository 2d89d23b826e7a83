"""The fusion verdict against the H200: for each paper case, is the best fused plan faster than the
best unfused one, measured and as the planner + simulator answer it? Writes benchmarks/verdict.md.

    python3 benchmarks/verdict.py [--out benchmarks/verdict.md]

Measured: per case and strategy, the fastest verified plan of one bench run (results/h200/
final_paper_*.json, the first final run, which benchmarks/kernels.md rendered until final3; the earlier final
runs, other device machines, and the later whole runs of all 26 cases, each with the generator of its day, as
cross-checks). Predicted: per strategy, the plan `fusesim simulate` runs (`plan_case(rank=)`),
simulated on each hardware file. The predicted plan need not be one the run timed: the question is
the answer, fuse or not, and by how much.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fusesim.hardware import load_hardware  # noqa: E402
from fusesim.stored import glob_json, read_json  # noqa: E402
from fusesim.validate import FIT, SCORE, VERDICT_TIE, Verdict, case_split, fusion_verdicts  # noqa: E402

FINAL = "results/h200/final_paper_*.json"
EARLIER = {  # the earlier final runs of benchmarks/validation.md (same plan sets, other machines)
    "2026-12-03 19:03 UTC": "results/h200/final_20261203_paper_*.json",
    "2026-12-04 08:08 UTC": "results/h200/final_20261204T0808_paper_*.json",
    "2026-12-04 08:52 UTC": "results/h200/final_20261204T0852_paper_*.json",
    "2026-12-04 15:00 UTC": "results/h200/final_20261204T1500_paper_*.json",
}
# the later whole runs on the H200: all 26 cases in one run, each with the generator of its day (final11 is the run
# benchmarks/kernels.md renders; its 171 plans are a shortlist that keeps each strategy's best)
WHOLE_RUNS = {
    "final3, 2026-12-06 06:08 UTC, 413 plans": "results/h200/final3_paper_*[ns].json",
    "final4, 2026-12-06 08:37 UTC, 413 plans": "results/h200/final4_paper_*[ns].json",
    "final5, 2026-12-06 10:03 UTC, 413 plans": "results/h200/final5_paper_*[ns].json",
    "final11, 2026-12-07 06:12 UTC, 171 plans (benchmarks/kernels.md's run)": "results/h200/final11_paper_*[ns].json",
}
# the run that timed the wgmma templates' implicit-im2col kernels (3x3 conv chains C5-C8) beside each
# strategy's final-run best: the final run predates them, so for those cases its verdict is measured there
IM2COL = "results/h200/wgmma_im2col_paper_*.json"
# the run that timed the conv chains C1-C8 with fused_wgmma's last E sub-tile staged in SMEM (where E goes
# straight out), beside each strategy's best of the final and im2col runs: for its cases it replaces both
ESTAGE = "results/h200/estage_paper_*.json"
# the same plans on the H200, with the early exit arrive of the reduce-scatter plans too: the latest run of C1-C8
ESTAGE_H200 = "results/h200/estage_h200_paper_*.json"
# the same plans on the H200 with the wgmma templates' implicit im2col by TMA (scripts/device_final2.sh, conv chains;
# its H100 run, tma_im2col_paper_conv_chains_h100.json, is benchmarks/h100.md's)
TMA_H200 = "results/h200/final2_paper_conv_chains.json"
LATER = ((IM2COL, "the run that timed the wgmma templates' implicit-im2col kernels, which the final run predates, "
                  "beside each strategy's final-run best"),
         (ESTAGE, "the run that timed fused_wgmma with its last E sub-tile staged in SMEM, beside each strategy's "
                  "best of the final and im2col runs"),
         (ESTAGE_H200, "the same plans timed again with the early exit arrive of the reduce-scatter plans too"),
         (TMA_H200, "the same plans timed again with the implicit im2col by TMA in im2col mode"))
# out of sample: per case and strategy the plan `fusesim simulate --rank simulated` ran on 2026-12-05 01:20 UTC
# and the final run's fastest of that strategy, frozen before any was timed (results/h200/plans_verdict.json)
VERDICT_RUN = "results/h200/verdict_paper_*.json"
CONFIGS = (("hw_configs/h200_calibrated.yaml", "simulated"), ("hw_configs/h200_calibrated.yaml", "cost"),
           ("hw_configs/h200.yaml", "simulated"), ("hw_configs/h200.yaml", "cost"))


def files(pattern: str) -> list[str]:
    return [str(p) for p in glob_json(ROOT / pattern)]


def gpu_of(pattern: str) -> str:
    """The GPU a bench run recorded (its first file's `env`)."""
    fs = files(pattern)
    return read_json(fs[0]).get("env", {}).get("gpu", "unknown GPU") if fs else "unknown GPU"


def score(verdicts: list[Verdict]) -> str:
    """'agree of n (fit a/b, score c/d), mean |speedup error| x%'."""
    def agree(vs: list[Verdict]) -> str:
        return f"{sum(bool(v.agrees) for v in vs)}/{len(vs)}"

    halves = {h: [v for v in verdicts if case_split(v.case) == h] for h in (FIT, SCORE)}
    errs = [abs(v.simulated_speedup / v.measured_speedup - 1) for v in verdicts
            if v.simulated_speedup and v.measured_speedup]
    return (f"{agree(verdicts)} (fit {agree(halves[FIT])}, score {agree(halves[SCORE])}), "
            f"mean abs speedup error {100 * statistics.mean(errs):.0f}%")


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def disagreeing(verdicts: list[Verdict]) -> str:
    """'C6 (measured 1.13x, simulated 0.88x), ...' for the verdicts that disagree; '' when none does."""
    return ", ".join(f"{v.case} (measured {fmt(v.measured_speedup)}x, simulated {fmt(v.simulated_speedup)}x)"
                     for v in verdicts if not v.agrees)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "verdict.md"))
    args = ap.parse_args()
    hws = {cfg: load_hardware(ROOT / cfg) for cfg, _ in CONFIGS}
    final_only = {(cfg, rank): fusion_verdicts(files(FINAL), hws[cfg], rank) for cfg, rank in CONFIGS}
    later: dict[tuple[str, str], dict[str, Verdict]] = {key: {} for key in CONFIGS}
    source: dict[str, str] = {}  # case -> the latest run that measured it
    timed_in: dict[str, set[str]] = {}  # run -> the cases it measured
    for pattern, _why in LATER:
        for key in CONFIGS:
            for v in fusion_verdicts(files(pattern), hws[key[0]], key[1]):
                later[key][v.case] = v
                source[v.case] = pattern
                timed_in.setdefault(pattern, set()).add(v.case)
    results = {key: [later[key].get(v.case, v) for v in vs] for key, vs in final_only.items()}
    main_cfg = CONFIGS[0]
    replaced = sorted(later[main_cfg])
    im2col_cases = sorted(timed_in.get(IM2COL, set()))
    shown = {pattern: (", ".join(c for c in replaced if source[c] == pattern), gpu_of(pattern), why)
             for pattern, why in LATER if any(source[c] == pattern for c in replaced)}  # runs a case is taken from
    instead = "; ".join(f"{cases}: measured in `{pattern}` instead ({why}; on an {gpu})"
                        for pattern, (cases, gpu, why) in shown.items()) or "No case measured elsewhere"
    lines = [
        "# The fusion verdict vs the H200" + "".join(f" ({cases} from a run on an {gpu})"
                                                     for cases, gpu, _why in shown.values() if "H200" not in gpu), "",
        f"Generated by `python3 benchmarks/verdict.py` on {datetime.date.today()} from the committed bench runs; "
        "do not edit.", "",
        "Per paper case: is the best fused plan (smem or dsm) faster than the best unfused one? *Measured*: the "
        "fastest verified plan per strategy of one run (`results/h200/final_paper_*.json`, the first final run, "
        "2026-12-04 21:15 UTC: the planner's top plans per strategy, hand-built and simulator-picked plans, 438 in all); the speedup is "
        "best unfused time / best fused time. *Predicted*: the plan per strategy that `fusesim simulate` runs, "
        "simulated: `--rank simulated` (the default: each strategy's fastest simulated candidate of the pool "
        "`best` simulates) or `--rank cost` (the cost model's top plan, the default before 2026-12-05). "
        f"The verdicts agree when both say fuse or both say do not (a measured speedup within {VERDICT_TIE:.0%} "
        "of 1 is a tie that accepts either). Fit half = odd-numbered cases, on which the hardware file's fitted "
        "values were chosen (benchmarks/validation.md); the score half never influenced one. "
        f"{instead}. The predicted side simulates each run's kernels as the generator it recorded built them.", "",
        "| hardware file | a strategy's plan | verdicts agree (of 26) |", "| --- | --- | --- |"]
    for (cfg, rank), vs in results.items():
        lines.append(f"| `{cfg}` | `--rank {rank}` | {score(vs)} |")
    summary = len(lines)
    lines += ["", f"Against the final run alone (C5-C8 then had mma.sync kernels only; `{main_cfg[0]}`, "
              f"`--rank {main_cfg[1]}`): {score(final_only[main_cfg])}."]
    frozen = files(VERDICT_RUN)
    held = fusion_verdicts(frozen, hws[main_cfg[0]], main_cfg[1]) if frozen else []
    if held:
        lines += ["", f"Out of sample (`{VERDICT_RUN}`: per case and strategy the plan `fusesim simulate` picked with the "
                  "simulator of 2026-12-05 01:20 UTC and the final run's fastest of that strategy, 134 plans frozen in "
                  "results/h200/plans_verdict.json before any was timed, timed in one device call on 2026-12-05 15:06 UTC; "
                  f"measured = that run's fastest per strategy; `{main_cfg[0]}`, `--rank {main_cfg[1]}`): {score(held)}."]
        lines += [f"Disagreeing there: {disagreeing(held) or 'none'}."]
        if im2col_cases:  # the set was frozen before the wgmma im2col kernels existed
            rest = [v for v in held if v.case not in im2col_cases]
            lines += [f"The set predates the wgmma implicit-im2col kernels, so for {', '.join(im2col_cases)} all its plans are "
                      f"mma.sync ones, while `fusesim simulate` now picks gemm_wgmma im2col plans (measured in `{IM2COL}`); "
                      f"the other {len(rest)} cases: {score(rest)}."]
    lines += ["", "The same verdicts against the earlier final runs (the same plan sets on other device "
              f"machines; `{main_cfg[0]}`, `--rank {main_cfg[1]}`):", ""]
    for label, pattern in EARLIER.items():
        fs = files(pattern)
        if fs:
            lines.append(f"- {label}: {score(fusion_verdicts(fs, hws[main_cfg[0]], main_cfg[1]))}")
    lines += ["", "The same verdicts against the later whole runs on the H200 (all 26 cases in one run, each with the "
              f"generator of its day; `{main_cfg[0]}`, `--rank {main_cfg[1]}`):", ""]
    for label, pattern in WHOLE_RUNS.items():
        fs = files(pattern)
        if fs:
            vs = fusion_verdicts(fs, hws[main_cfg[0]], main_cfg[1])
            wrong = disagreeing(vs)
            lines.append(f"- {label}: {score(vs)}" + (f"; disagreeing: {wrong}" if wrong else ""))
    lines += ["", f"## Per case (`{main_cfg[0]}`)", "",
              "| case | measured us: unfused / smem / dsm | measured speedup | `--rank simulated`: simulated us | "
              "speedup | agrees | `--rank cost`: speedup | agrees |", "| --- | --- | ---: | --- | ---: | --- | ---: | --- |"]
    cost = {v.case: v for v in results[(main_cfg[0], "cost")]}

    def us3(d: dict[str, float]) -> str:
        return " / ".join(f"{d[s]:.1f}" if s in d else "-" for s in ("unfused", "smem", "dsm"))

    for v in results[main_cfg]:
        c = cost[v.case]
        lines.append(f"| {v.case} | {us3(v.measured_us)} | {fmt(v.measured_speedup)} | {us3(v.simulated_us)} | "
                     f"{fmt(v.simulated_speedup)} | {'yes' if v.agrees else '**no**'} | {fmt(c.simulated_speedup)} | "
                     f"{'yes' if c.agrees else '**no**'} |")
    lines += ["", "Plans `--rank simulated` picks (calibrated file):", ""]
    for v in results[main_cfg]:
        lines.append(f"- {v.case}: " + "; ".join(f"{s}: {p}" for s, p in v.simulated_plans.items()))
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:summary]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
