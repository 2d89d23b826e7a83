"""The shipped H100 hardware file against what was measured on H100s. Writes benchmarks/h100.md.

    python3 benchmarks/h100.py [--out benchmarks/h100.md]

The device tool lent NVIDIA H100 80GB HBM3 (SXM5) machines where an H200 was asked for; what ran on them
is committed under results/h200/ with the GPU named in each file. Those kernels are simulated here with the
exact plan and generator switches they ran with, on hw_configs/h100_sxm.yaml (the file of the README's main
job), on the same file without the generated-kernel mechanisms (as it shipped until 2026-12-05: they were
fitted and measured on the H200 and carried over by `python3 -m fusesim.calibrate.carry`), and on the H200's
calibrated file (how benchmarks/validation.md scores these sets), and on the H100's own calibrated file
(microbenchmarks of one H100, results/h100_sxm/calibration.json). Nothing was fitted on an H100 kernel:
every H100 number below is out of sample for every file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # the trial scripts, whose variants the trial sections rebuild

from kernels_report import (  # noqa: E402
    DEEP_WS_TRIAL,
    H100_ONE_RUN,
    ONE_WAVE_TRIAL,
    WORKLOADS,
    deep_ring_ratios,
    h100_stream_speedups,
    one_wave_runs,
    rows_of,
    run_stats,
    stream_fit,
    stream_floor_rows,
)

from fusesim.calibrate.carry import MECHANISMS  # noqa: E402
from fusesim.capability import (  # noqa: E402
    FRAGMENT_EPILOGUE,
    SWITCHES,
    codegen_switches,
    generator_switches,
    kernel_split_shared,
)
from fusesim.hardware import Hardware, load_hardware  # noqa: E402
from fusesim.plan import Plan  # noqa: E402
from fusesim.report.measured import load_measured  # noqa: E402
from fusesim.sim import simulate  # noqa: E402
from fusesim.stored import exists, glob_json, read_json  # noqa: E402
from fusesim.validate import Row, Verdict, fusion_verdicts, join, planner_verdict, summarize  # noqa: E402
from fusesim.workload import Chain  # noqa: E402

H100 = "hw_configs/h100_sxm.yaml"
H200 = "hw_configs/h200_calibrated.yaml"
# written once an H100 is calibrated (`OUT=... scripts/device_calibrate.sh` there, then `fusesim calibrate --base
# h100_sxm --from results/h100_sxm/calibration.json --out hw_configs/h100_sxm_calibrated.yaml`); scored when present
H100_CALIBRATED = "hw_configs/h100_sxm_calibrated.yaml"
# the bench's time of each strategy's fastest final-run plan, all 26 cases, on PyTorch's stream (scripts/stream_trial.py)
STREAM = "results/h200/stream_trial_h100.json"
MCAST = "results/h200/mcast_trial_h100.json"  # its control: gemm_wgmma as the generator builds it ("own A")
BENCH_SETS = {
    "conv chains C1-C8, every strategy's best of the final and im2col runs (fused_wgmma's staged E)":
        "results/h200/estage_paper_*.json",
    "gemm_wgmma split-K through DSM, the ten small unfused-wgmma cases": "results/h200/dsm_split_small_*_h100.json",
}
TMA_RUN = "results/h200/tma_im2col_paper_conv_chains_h100.json"  # scripts/device_tma_im2col_bench.sh on an H100
BENCH_SETS["conv chains C1-C8, the staged-E run's plans with the implicit im2col by TMA (WGMMA_IM2COL_TMA on)"] = TMA_RUN
# all 26 cases in one run with the generator as of 2026-12-06 (STEPS=bench PREFIX=final3_paper_ scripts/device_final2.sh)
ONE_RUN = H100_ONE_RUN.format("*")
BENCH_SETS["all 26 cases in one run, the final plans (conv: the staged-E run's) with the generator of 2026-12-06"] = ONE_RUN
# every fused_wgmma hand plan of the 17 small cases that no H200 run had timed, beside final5's fastest of each case
# (scripts/freeze_sweep_plans.py; NCU=0 PLANS=results/h200/plans_sweep_small.json PREFIX=sweep_small_paper_
# scripts/device_sim_search.sh)
SWEEP = "results/h200/sweep_small_paper_*_h100.json"
BENCH_SETS["the 17 small cases, every fused_wgmma hand plan untimed before (352) and final5's fastest of each"] = SWEEP
# all 26 cases in one run with final5's generator, its plans and 119 more: DSM split-K variants of its fastest unfused
# plans and the sweep's two faster S8 plans (BENCH_TIMEOUT=300 STEPS=bench PREFIX=final6_paper_ PLANS_PREFIX=plans_final6_
# scripts/device_final2.sh, on an H100 where an H200 was asked for)
FINAL6 = "results/h200/final6_paper_*_h100.json"
BENCH_SETS["all 26 cases in one run, final5's plans and 119 more (split-K through DSM variants, two S8 sweep plans)"] = FINAL6
# the same 532 plans and generator again, four hours later (the same command; the H100 the tool lent then)
FINAL6R = "results/h200/final6r_paper_*_h100.json"
BENCH_SETS["the same 532 plans again, a second run"] = FINAL6R
# the same 532 plans with the generator of 2026-12-06 20:10 UTC: split-K in slices (BENCH_TIMEOUT=240 STEPS="bench ncu"
# PREFIX=final7_paper_ PLANS_PREFIX=plans_final6_ scripts/device_final2.sh, on an H100 where any GPU was asked for)
FINAL7 = "results/h200/final7_paper_*_h100.json"
BENCH_SETS["the same 532 plans, split-K in slices (the generator of 2026-12-06 20:10 UTC)"] = FINAL7
# final6's 532 plans and 23 deeper-ring variants frozen after final7 (results/h200/plans_final8_*.json), final7's
# generator (scripts/device_solo_final8.sh: BENCH_TIMEOUT=200 STEPS=bench PREFIX=final8_paper_ PLANS_PREFIX=plans_final8_
# scripts/device_final2.sh, on an H100 where an H200 or H100 was asked for)
FINAL8 = "results/h200/final8_paper_*_h100.json"
BENCH_SETS["final6's 532 plans and 23 deeper-ring variants (final7's generator)"] = FINAL8
# final8's plans with the generator of 2026-12-07 (gemm1 one block per SM, capability.gemm_solo_sm; BENCH_TIMEOUT=200
# STEPS=bench PREFIX=final9_paper_ PLANS_PREFIX=plans_final8_ scripts/device_final2.sh, an H100 where an H200 was
# not lent)
FINAL9 = "results/h200/final9_paper_*_h100.json"
BENCH_SETS["final8's 555 plans, gemm1 one block per SM where the rule picks it (the generator of 2026-12-07)"] = FINAL9
# the shortlist (scripts/shortlist_plans.py) twice on one H100, 3 min apart: split-K in slices lean, then as before
FINAL10_LEAN = "results/h200/final10lean_paper_*_h100.json"
BENCH_SETS["the shortlist (171 of final8's plans), split-K in slices lean (GEMM_SPLIT_LEAN on)"] = FINAL10_LEAN
FINAL10 = "results/h200/final10_paper_*_h100.json"
BENCH_SETS["the same 171 plans, split-K in slices as before (final9's generator), minutes later"] = FINAL10
# the weight-streaming cases' one-wave tile-width variants of each GEMM beside final11's fastest plan of each case
# (scripts/device_one_wave.sh, two runs of one device call; the set scores the first)
BENCH_SETS["the weight-streaming cases: each GEMM at another tile width, one block per SM (final11's generator)"] = \
    ONE_WAVE_TRIAL.format(1, "*")
BENCH_SETS["the weight-streaming cases: final11's fastest plans with rings as deep as SMEM allows"] = \
    DEEP_WS_TRIAL.format(1, "*")
BENCH_LABEL = {pattern: label for label, pattern in BENCH_SETS.items()}
STREAM_LABEL = "each strategy's fastest final-run plan, all 26 cases (the stream trial's default stream)"
MCAST_LABEL = "unfused gemm_wgmma plans, the multicast trial's control"
WEIGHT_STREAMING = ("G5", "G8", "S1", "S2", "S3", "S4", "S5", "S6", "S7")
# the generator of 2026-12-05 19:25-19:45 UTC, when the trials ran: today's switches, but those that came after
# at their values from before (the TMA im2col; fused_wgmma's early producer wait, unrolled GEMM1 and relaxed
# arrives, all 2026-12-06; the split-K slices; gemm1 one block per SM; the slices lean)
LATER_SWITCHES = ("wgmma_im2col_tma", "fused_producer_early_wait", "fused_gemm1_unroll", "fused_relaxed_arrive",
                  "gemm_split_shared_min_bytes", "gemm_solo_secondary", "gemm_split_lean")
TRIAL_SWITCHES = {**codegen_switches(), **{s.key: s.before for s in SWITCHES if s.key in LATER_SWITCHES}}
# the generator of the split-K slices and deeper-ring trials (2026-12-06 before 23:40 UTC): gemm1 asks for its ring
# only, and the slices are not lean
BEFORE_SOLO = {**codegen_switches(), "gemm_solo_secondary": False, "gemm_split_lean": False}


def without_mechanisms(hw: Hardware) -> Hardware:
    return hw.model_copy(update={k: None for k in MECHANISMS})


def _stream_measurements() -> Iterator[tuple[str, dict[str, Any], float, dict]]:
    doc = read_json(ROOT / STREAM)
    for row in doc["rows"]:
        runs = row["runs"]["default"]
        for i, pd in enumerate(row["plans"]):
            times = [run["ours"][i][0] for run in runs if run["ours"][i][1]]  # verified launches only
            if times:
                yield row["case"], pd, statistics.median(times), TRIAL_SWITCHES


def _mcast_measurements() -> Iterator[tuple[str, dict[str, Any], float, dict]]:
    doc = read_json(ROOT / MCAST)
    control = next(iter(doc["variants"]))
    for row in doc["rows"]:
        if row["verify"][control]["ok"]:
            yield row["case"], row["plan"], row["us"][control], TRIAL_SWITCHES


def _bench_measurements(pattern: str) -> Iterator[tuple[str, dict[str, Any], float, dict]]:
    for m in load_measured(glob_json(ROOT / pattern)).items:
        if m.plan_dict is not None:
            yield m.case, m.plan_dict, m.time_us, m.codegen or FRAGMENT_EPILOGUE


def measured_sets() -> dict[str, list[tuple[str, dict[str, Any], float, dict]]]:
    sets = {STREAM_LABEL: list(_stream_measurements())}
    sets.update({label: list(_bench_measurements(p)) for label, p in BENCH_SETS.items()})
    sets[MCAST_LABEL] = list(_mcast_measurements())
    return sets


def sources() -> dict[str, tuple[list[str], str]]:
    """Per set: its files and when they ran (UTC, as each file records it)."""
    def when(f: Path) -> str:
        doc = read_json(f)
        return (doc.get("env") or doc.get("device_run") or {}).get("date_utc", "?")[:16].replace("T", " ")

    out = {}
    for label, pattern in {STREAM_LABEL: STREAM, **BENCH_SETS, MCAST_LABEL: MCAST}.items():
        files = glob_json(ROOT / pattern)
        times = sorted({when(f) for f in files})
        out[label] = ([f.name for f in files], times[0] if len(times) == 1 else f"{times[0]} to {times[-1]}")
    return out


def rows_on(hw: Hardware, measured: list[tuple[str, dict[str, Any], float, dict]]) -> list[Row]:
    out = []
    for case, pd, us, switches in measured:
        plan = Plan.from_dict(pd)
        with generator_switches(switches):
            sim_us = simulate(plan, hw).time_ns / 1e3
        out.append(Row(case, plan.summary(), us, sim_us, kernels=len(plan.kernels), plan=plan))
    return out


def verdicts(hw: Hardware) -> list[Verdict]:
    """Per case of the stream trial: the measured fastest of each strategy's plan against the plan per strategy
    `fusesim simulate` runs on `hw`, simulated."""
    doc = read_json(ROOT / STREAM)
    with generator_switches(TRIAL_SWITCHES):
        return [planner_verdict(row["case"], {pd["strategy"]: statistics.median(run["ours"][i][0]
                                                                             for run in row["runs"]["default"])
                                              for i, pd in enumerate(row["plans"])},
                                Chain.from_dict(row["plans"][0]["chain"]), hw)
                for row in doc["rows"]]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _signed(rows: list[Row]) -> float:
    return statistics.mean(r.error for r in rows)


def _order(case: str) -> tuple[int, int]:
    return "GSC".index(case[0]), int(case[1:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "h100.md"))
    args = ap.parse_args()
    h100, h200 = load_hardware(ROOT / H100), load_hardware(ROOT / H200)
    configs = {f"`{H100}`": h100, f"`{H100}` without the generated-kernel mechanisms (as shipped until 2026-12-05)":
               without_mechanisms(h100), f"`{H200}` (the H200's file)": h200}
    if exists(ROOT / H100_CALIBRATED):
        configs[f"`{H100_CALIBRATED}`"] = load_hardware(ROOT / H100_CALIBRATED)
    sets = measured_sets()
    stream = read_json(ROOT / STREAM)
    lines = ["# The H100 file vs H100 measurements", "",
             f"Generated by `python3 benchmarks/h100.py` on {datetime.date.today().isoformat()} from the committed "
             "measurements; do not edit.", "",
             __doc__.split("\n\n")[2].replace("\n", " "), "",
             f"Measured on: {stream['gpu']} (132 SMs, 50 MiB L2; results/h200/README.md gives each file's command): "
             + "; ".join(f"{label}: {', '.join(files)} ({when})" for label, (files, when) in sources().items()) + ".",
             "",
             "| kernels | hw config | n | MAPE | signed mean error | Pearson | within-case Spearman | predicted best within 3% |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    scored: dict[str, dict[str, list[Row]]] = {}
    for label, measured in sets.items():
        for cfg, hw in configs.items():
            rows = rows_on(hw, measured)
            scored.setdefault(cfg, {})[label] = rows
            s = summarize(rows)
            sp = s["spearman_within_case_mean"]
            lines.append(f"| {label} | {cfg} | {s['kernels']} | {_pct(s['mape'])} | {100 * _signed(rows):+.1f}% | "
                         f"{s['pearson']:.3f} | {'-' if sp is None else f'{sp:.2f}'} | "
                         f"{_pct(s['best_within_3pct'])} of {s['cases_with_ranking']} |")
    every = {cfg: [r for rows in by_set.values() for r in rows] for cfg, by_set in scored.items()}
    lines += ["", "All sets together: " + "; ".join(
        f"{cfg}: {len(rows)} kernels, MAPE {_pct(summarize(rows)['mape'])}" for cfg, rows in every.items()) + ".", ""]

    # the fusion verdict on the H100
    lines += ["## The fusion verdict on the H100", "",
              "Per paper case: measured = the stream trial's three plans (each strategy's fastest of the H200's "
              "final run) on the H100, best unfused / best fused; predicted = per strategy the plan `fusesim "
              "simulate` runs on the file, simulated (the plan need not be one the H100 timed). A measured speedup "
              "within 3% of 1 accepts either answer.", "",
              "| hw config | verdicts agree (of 26) | mean abs speedup error |", "| --- | --- | --- |"]
    per_case: dict[str, dict[str, Verdict]] = {}
    for cfg, hw in list(configs.items())[:2]:
        vs = verdicts(hw)
        for v in vs:
            per_case.setdefault(v.case, {})[cfg] = v
        err = statistics.mean(abs(v.simulated_speedup / v.measured_speedup - 1) for v in vs)
        lines.append(f"| {cfg} | {sum(bool(v.agrees) for v in vs)}/{len(vs)} | {100 * err:.0f}% |")
    new, old = list(configs)[:2]
    lines += ["", "| case | measured us: unfused / smem / dsm | measured speedup | simulated speedup | agrees | "
              "before: simulated speedup | agreed |", "| --- | --- | ---: | ---: | --- | ---: | --- |"]
    for case in sorted(per_case, key=_order):
        v, b = per_case[case][new], per_case[case][old]
        us = " / ".join(f"{v.measured_us[s]:.1f}" if s in v.measured_us else "-" for s in ("unfused", "smem", "dsm"))
        lines.append(f"| {case} | {us} | {v.measured_speedup:.2f} | {v.simulated_speedup:.2f} | "
                     f"{'yes' if v.agrees else '**no**'} | {b.simulated_speedup:.2f} | {'yes' if b.agrees else '**no**'} |")

    pairs = list(zip(fusion_verdicts([ROOT / TMA_RUN], h100), fusion_verdicts([ROOT / TMA_RUN], without_mechanisms(h100)),
                     strict=True))
    lines += ["", f"The conv chains again with the implicit im2col by TMA (`{TMA_RUN}`, one run; measured = its fastest "
              "verified plan per strategy, predicted as above with the generator it recorded): "
              f"{sum(bool(v.agrees) for v, _b in pairs)}/{len(pairs)} agree "
              f"({sum(bool(b.agrees) for _v, b in pairs)}/{len(pairs)} without the mechanisms).", "",
              "| case | measured us: unfused / smem / dsm | measured speedup | simulated speedup | agrees |",
              "| --- | --- | ---: | ---: | --- |"]
    for v, _b in pairs:
        us = " / ".join(f"{v.measured_us[s]:.1f}" if s in v.measured_us else "-" for s in ("unfused", "smem", "dsm"))
        lines.append(f"| {v.case} | {us} | {v.measured_speedup:.2f} | {v.simulated_speedup:.2f} | "
                     f"{'yes' if v.agrees else '**no**'} |")

    # HBM: the datasheet rate against the weight-streaming kernels
    ws = [r for r in scored[new][STREAM_LABEL] if r.case in WEIGHT_STREAMING and r.plan.strategy == "unfused"]
    lines += ["", "## HBM: the datasheet rate", "",
              f"The file keeps the datasheet {h100.hbm_bandwidth_gbps:.0f} GB/s (the H200's file uses its measured "
              "copy rate, 4.3 of 4.8 TB/s). The H100's weight-streaming cases, each one's fastest unfused plan "
              "(two gemm_wgmma kernels that stream the weights once):", "",
              "| case | measured us | simulated us | error |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r.case} | {r.measured_us:.1f} | {r.predicted_us:.1f} | {100 * r.error:+.1f}% |"
              for r in sorted(ws, key=lambda r: _order(r.case))]

    eager_x, graphs_x, n = h100_stream_speedups(ROOT / STREAM)
    lines += ["", "## Against PyTorch on the H100", "",
              f"The stream trial timed PyTorch eager and CUDA graphs beside the kernels (its default stream, "
              f"bench's method). Over the {n} cases, the fastest of the three plans per case: geomean speedup "
              f"{eager_x:.2f}x over eager, {graphs_x:.2f}x over graphs (the H200's own figures: benchmarks/kernels.md). "
              "The plans were each strategy's fastest of the H200's first final run; none was chosen for the H100.", ""]
    lines += one_run_section()
    lines += repeat_section(sets)
    if exists(ROOT / H100_CALIBRATED):
        lines += slices_run_section(sets, load_hardware(ROOT / H100_CALIBRATED))
    lines += traffic_section(configs)
    if exists(ROOT / H100_CALIBRATED):
        lines += split_shared_section(load_hardware(ROOT / H100_CALIBRATED))
        lines += deep_ring_section(load_hardware(ROOT / H100_CALIBRATED))
        lines += per_gemm_section(load_hardware(ROOT / H100_CALIBRATED))
    lines += final8_section()
    lines += final9_section(sets)
    lines += final10_section(sets)
    if exists(ROOT / H100_CALIBRATED):
        lines += one_wave_section(load_hardware(ROOT / H100_CALIBRATED))
        lines += deep_ring_ws_section(load_hardware(ROOT / H100_CALIBRATED))
    lines += stream_floor_section()
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


def _verified_times(measured: list[tuple[str, dict[str, Any], float, dict]]) -> dict[tuple[str, str], float]:
    """{(case, plan as sorted JSON): measured us} of a set's verified plans (`_bench_measurements`)."""
    return {(case, json.dumps(pd, sort_keys=True)): us for case, pd, us, _switches in measured}


def _env(pattern: str) -> dict[str, Any]:
    """The env block of the first bench file `pattern` matches."""
    files = glob_json(ROOT / pattern)
    return read_json(files[0])["env"] if files else {}


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[round(q * (len(xs) - 1))]


def repeat_section(sets: dict[str, list[tuple[str, dict[str, Any], float, dict]]]) -> list[str]:
    """final6's plans timed twice on H100s, four hours apart (their sets in `measured_sets`): how far a plan's
    time, a case's best and a within-run comparison (the plans final6 added against final5's,
    results/h200/final5_paper_*, in each run) move between runs."""
    a = _verified_times(sets[BENCH_LABEL[FINAL6]])
    b = _verified_times(sets[BENCH_LABEL[FINAL6R]])
    if not a or not b:
        return []
    env_a, env_b = _env(FINAL6), _env(FINAL6R)
    old = set(_verified_times(list(_bench_measurements("results/h200/final5_paper_*[ns].json"))))
    common = sorted(set(a) & set(b))
    ratio = [b[k] / a[k] for k in common]
    cases = sorted({c for c, _p in common}, key=_order)

    def best(t: dict[tuple[str, str], float], case: str, keep=lambda k: True) -> tuple[str, float] | None:
        got = [(k[1], v) for k, v in t.items() if k[0] == case and keep(k)]
        return min(got, key=lambda kv: kv[1]) if got else None

    same = sum(1 for c in cases if best(a, c)[0] == best(b, c)[0])  # type: ignore[index]
    case_ratio = [best(b, c)[1] / best(a, c)[1] for c in cases]  # type: ignore[index]
    added: dict[str, list[float]] = {}
    for c in cases:
        pair = []
        for t in (a, b):
            new_best = best(t, c, lambda k: k not in old)
            old_best = best(t, c, lambda k: k in old)
            if new_best and old_best:
                pair.append(new_best[1] / old_best[1])
        if len(pair) == 2:
            added[c] = pair
    moved = [abs(y - x) for x, y in added.values()]
    flips = [c for c, (x, y) in added.items() if (x < 1) != (y < 1)]
    when = [e.get("date_utc", "?")[:16].replace("T", " ") for e in (env_a, env_b)]
    lines = ["", "## Run to run: final6 twice", "",
             f"`{FINAL6}` ({when[0]} UTC, {env_a.get('gpu')}) and `{FINAL6R}` ({when[1]} UTC, {env_b.get('gpu')}): "
             f"the same plans, generator and command on the H100s the tool lent. {len(common)} plans verified in "
             f"both: the second run's time over the first's, median {statistics.median(ratio):.3f}, 5-95% "
             f"{_quantile(ratio, 0.05):.3f}-{_quantile(ratio, 0.95):.3f}, all {min(ratio):.3f}-{max(ratio):.3f}; "
             f"each case's fastest plan the same in {same} of {len(cases)}, its time "
             f"{min(case_ratio):.3f}-{max(case_ratio):.3f}x. Per case with plans that final6 added to final5's "
             "(results/h200/final5_paper_*), the fastest added plan over the fastest of final5's, in each run: "
             f"the ratio moved by a median {statistics.median(moved):.3f} (at most {max(moved):.3f}) between the "
             f"runs, and {len(flips)} case{'s' if len(flips) != 1 else ''} changed sides of 1"
             + (f" ({', '.join(flips)})" if flips else "") + ".", "",
             "| case | added / final5's, first run | second run |", "| --- | ---: | ---: |"]
    lines += [f"| {c} | {x:.3f} | {y:.3f} |" for c, (x, y) in added.items()]
    return lines + [""]


def traffic_section(configs: dict[str, Hardware]) -> list[str]:
    """Nsight Compute's bytes of the second final6 run (every plan, each kernel on a cold L2: ncu flushes the
    caches between kernels, so an unfused plan's gemm1 reads C' from DRAM where the simulator keeps it in L2)
    against the simulated bytes on each H100 file."""
    files = glob_json(ROOT / FINAL6R)
    if not files:
        return []
    lines = ["", "## Traffic on the H100: Nsight Compute vs simulated bytes", "",
             f"`{FINAL6R}` (every verified plan profiled by `python3 -m fusesim.gpu.ncu --all`; each kernel on a cold "
             "L2, an unfused plan's two kernels summed), simulated with the plan and generator switches each ran with. "
             "Within 5%: plans whose simulated bytes are within 5% of the counter, of those with at least 0.1 MB "
             "measured. The unfused plans' DRAM reads include C' read back by gemm1 after ncu's flush, which the "
             "simulator keeps in L2; the model's L2 bytes are the SMs' requests, which `lts__t_bytes` exceeds "
             "(benchmarks/validation.md: both the same on the H200).", "",
             "| hw config | counter | strategy | plans | within 5% | signed median error | MAPE |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for cfg, hw in configs.items():
        if "without" in cfg:
            continue
        rows = join(files, hw)
        for counter in ("dram_read", "dsm", "l2"):
            for fused in (True, False):
                errs = [(r.predicted_bytes[counter] - m) / m for r in rows
                        if (r.plan is not None and (r.plan.strategy != "unfused") == fused)
                        and (m := r.measured_bytes.get(counter, 0.0)) >= 1e5]
                if not errs:
                    continue
                lines.append(f"| {cfg} | {counter} | {'fused' if fused else 'unfused'} | {len(errs)} | "
                             f"{sum(abs(e) < 0.05 for e in errs)} | {100 * statistics.median(errs):+.1f}% | "
                             f"{100 * statistics.mean(abs(e) for e in errs):.1f}% |")
    return lines + [""]


SPLIT_SHARED_TRIAL = "results/h200/split_shared_trial_run{}_h100.json"


def split_shared_section(hw: Hardware) -> list[str]:
    """The split-K slices trial (scripts/split_shared_trial.py, two runs of one device call): per plan the rule's
    variant (slices where the fp32 partial has 32 KiB or more) over the red.add form, measured (the mean of the two
    runs' ratios) and simulated on `hw`, for the plans the rule changes."""
    runs = [read_json(ROOT / SPLIT_SHARED_TRIAL.format(i)) for i in (1, 2)
            if exists(ROOT / SPLIT_SHARED_TRIAL.format(i))]
    if len(runs) < 2:
        return []
    names = list(runs[0]["variants"].items())  # (name, GEMM_SPLIT_SHARED_MIN_BYTES)
    (base, _), (rule, rule_bytes) = names[0], names[1]
    rows = []
    for a, b in zip(runs[0]["rows"], runs[1]["rows"], strict=True):
        plan = Plan.from_dict(a["plan"])
        if not all(v["ok"] for r in (a, b) for v in r["verify"].values()):
            continue
        sim = {}
        for name, value in ((base, 0), (rule, rule_bytes)):
            with generator_switches({**BEFORE_SOLO, "gemm_split_shared_min_bytes": value}):
                sim[name] = simulate(plan, hw).time_ns
        if any(kernel_split_shared(plan, k) for k in plan.kernels):  # the current rule (the trial's 32 KiB)
            measured = statistics.mean(r["us"][rule] / r["us"][base] for r in (a, b))
            ch = plan.chain
            what = ", ".join(f"{k.op} {k.tiles.block_m}x{k.tiles.block_n} split {k.grid_blocks // tiles}"
                             f"{' (slices)' if kernel_split_shared(plan, k) else ''}"
                             for k, cols in zip(plan.kernels, (ch.n, ch.l), strict=True)
                             if (tiles := -(-ch.m // k.tiles.block_m) * (cols // k.tiles.block_n)))
            rows.append((a["case"], what, measured, sim[rule] / sim[base]))
    if not rows:
        return []
    ms, ps = [r[2] for r in rows], [r[3] for r in rows]
    corr = statistics.correlation(ms, ps) if len(rows) > 2 else float("nan")
    lines = ["", "## Split-K in slices: measured and simulated", "",
             f"`{SPLIT_SHARED_TRIAL.format('{1,2}')}` (scripts/split_shared_trial.py, one device call, two runs, every "
             f"build verified): each plan's \"{rule}\" variant over its \"{base}\" form, the mean of the two runs, against "
             f"the same ratio simulated on `{H100_CALIBRATED}`; the {len(rows)} plans the rule changes. Measured "
             f"{min(ms):.3f}-{max(ms):.3f}x (median {statistics.median(ms):.3f}x), simulated {min(ps):.3f}-{max(ps):.3f}x "
             f"(median {statistics.median(ps):.3f}x), Pearson {corr:.2f}.", "",
             "| case | GEMMs | measured | simulated |", "| --- | --- | --- | --- |"]
    lines += [f"| {c} | {what} | {m:.3f} | {q:.3f} |" for c, what, m, q in sorted(rows, key=lambda r: _order(r[0]))]
    return lines + [""]


DEEP_RING_TRIAL = "results/h200/deep_ring_trial_run{}_h100.json"


def _verified_pairs(runs: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any], Plan]]:
    """(row of run 1, row of run 2, plan) of a two-run trial's plans whose every variant verified in both runs."""
    for a, b in zip(runs[0]["rows"], runs[1]["rows"], strict=True):
        if all(v["ok"] for r in (a, b) for v in r["verify"].values()):
            yield a, b, Plan.from_dict(a["plan"])


def deep_ring_section(hw: Hardware) -> list[str]:
    """The deeper-ring trial (scripts/deep_ring_trial.py, two runs of one device call): per plan each deeper
    variant over the plan as run, measured (the mean of the two runs' ratios) and simulated on `hw`."""
    runs = [read_json(ROOT / DEEP_RING_TRIAL.format(i)) for i in (1, 2)
            if exists(ROOT / DEEP_RING_TRIAL.format(i))]
    if len(runs) < 2:
        return []
    from deep_ring_trial import deepened

    import fusesim.capability as capability

    names = list(runs[0]["variants"].items())  # (name, stages cap; 0: as run)
    base = names[0][0]
    rows = []
    saved = capability.MAX_STAGES
    capability.MAX_STAGES = max(cap for _n, cap in names)  # as the trial built them
    try:
        for a, b, plan in _verified_pairs(runs):
            with generator_switches(BEFORE_SOLO):
                t0 = simulate(plan, hw).time_ns
                cells = []
                for name, cap in names[1:]:
                    variant = deepened(plan, cap)
                    measured = statistics.mean(r["us"][name] / r["us"][base] for r in (a, b))
                    cells.append((tuple(k.stages for k in variant.kernels), measured,
                                  simulate(variant, hw).time_ns / t0))
            what = ", ".join(f"{k.op} {k.tiles.block_m}x{k.tiles.block_n} split {k.grid_blocks // tiles}"
                             f"{f' cluster {k.cluster_size}' if k.cluster_size > 1 else ''} stages {k.stages}"
                             for k, cols in zip(plan.kernels, (plan.chain.n, plan.chain.l), strict=True)
                             if (tiles := -(-plan.chain.m // k.tiles.block_m) * (cols // k.tiles.block_n)))
            rows.append((a["case"], what, a["us"][base], cells))
    finally:
        capability.MAX_STAGES = saved
    if not rows:
        return []
    ms = [c[1] for _c, _w, _us, cells in rows for c in cells]
    ps = [c[2] for _c, _w, _us, cells in rows for c in cells]
    lines = ["", "## Deeper rings: measured and simulated", "",
             f"`{DEEP_RING_TRIAL.format('{1,2}')}` (scripts/deep_ring_trial.py, one device call, two runs, every build "
             f"verified): per plan each variant over the plan as run, the mean of the two runs, against the same ratio "
             f"simulated on `{H100_CALIBRATED}`; {len(rows)} plans. Measured {min(ms):.3f}-{max(ms):.3f}x (median "
             f"{statistics.median(ms):.3f}x), simulated {min(ps):.3f}-{max(ps):.3f}x (median {statistics.median(ps):.3f}x), "
             f"Pearson {statistics.correlation(ms, ps):.2f}. Stages per GEMM in brackets.", "",
             "| case | GEMMs as run | us as run (first run) | " + " | ".join(f"{n}: measured | simulated" for n, _c in names[1:]) + " |",
             "| --- | --- | ---: | " + " | ".join("---: | ---:" for _n in names[1:]) + " |"]
    lines += [f"| {c} | {what} | {us:.2f} | " + " | ".join(f"{m:.3f} ({'/'.join(map(str, st))}) | {q:.3f}"
                                                          for st, m, q in cells) + " |"
              for c, what, us, cells in sorted(rows, key=lambda r: _order(r[0]))]
    return lines + [""]


PER_GEMM_TRIAL = "results/h200/deep_ring_per_gemm_run{}_h100.json"


def per_gemm_section(hw: Hardware) -> list[str]:
    """The per-gemm deep-ring trial (scripts/deep_ring_trial.py per-gemm, two runs of one device call): per plan each
    GEMM 8 deep alone and both, measured and simulated on `hw`, and each GEMM as run launched one block per SM
    (measured only: the simulator places blocks one per SM first, so it runs those as it runs the plan)."""
    runs = [read_json(ROOT / PER_GEMM_TRIAL.format(i)) for i in (1, 2)
            if exists(ROOT / PER_GEMM_TRIAL.format(i))]
    if len(runs) < 2:
        return []
    from deep_ring_trial import deepened

    names = list(runs[0]["variants"].items())  # (name, (cap0, cap1) or [solo GEMMs])
    base = names[0][0]
    rows = []
    for a, b, plan in _verified_pairs(runs):
        with generator_switches(BEFORE_SOLO):
            t0 = simulate(plan, hw).time_ns
            cells = []
            for name, cap in names[1:]:
                if name not in a["us"]:
                    cells.append("--")
                    continue
                measured = statistics.mean(r["us"][name] / r["us"][base] for r in (a, b))
                variant = deepened(plan, tuple(cap)) if "solo" not in name else None
                sim = f"{simulate(variant, hw).time_ns / t0:.3f}" if variant is not None else "--"
                cells.append(f"{measured:.3f} / {sim}")
        what = "; ".join(f"{k.grid_blocks} blocks{f' (clusters of {k.cluster_size})' if k.cluster_size > 1 else ''}, "
                          f"{k.smem_bytes // 1024} KiB" for k in plan.kernels)
        rows.append((a["case"], what, a["us"][base], cells))
    if not rows:
        return []
    return ["", "## Deeper rings per GEMM, and one block per SM", "",
            f"`{PER_GEMM_TRIAL.format('{1,2}')}` (scripts/deep_ring_trial.py per-gemm, one device call, two runs, "
            f"every build verified): the small cases' fastest unfused wgmma plans of final7 with a GEMM whose k tiles "
            f"per part exceed its ring, each variant over the plan as run (the mean of the two runs) / simulated on "
            f"`{H100_CALIBRATED}`. \"solo\": that GEMM as run but asking for more SMEM than half an SM at launch, "
            f"so one block per SM (not simulated: the simulator places blocks one per SM first). SMEM as run, 2 KiB "
            f"of an SM reserved for two blocks: 228 KiB. S8's gains come with gemm1 one block per SM, 8 deep or solo "
            f"alike: its gemm0 (145 or 193 KiB) leaves no room beside it, so gemm1's early (PDL) blocks can only go to "
            f"the SMs gemm0 leaves free, two to an SM where they may. G6's first plan gains 8 deep only, where gemm1 "
            f"(129 KiB) no longer fits beside gemm0 (solo, 114 KiB, still does). gemm0 one block per SM, 8 deep or "
            f"solo, so that gemm1's blocks no longer fit beside it, loses 1.03-1.22x in G4, G6, G9, C3, C6 and C8's "
            f"first plan (C7's, C8's second and G10's 1.00-1.01x, their gemm0 in clusters or a small grid); the "
            f"one-block-per-SM trial below took G6's and G4's plans with gemm0 8 deep 0.864x and 0.868x with gemm1 "
            f"one block per SM (17.18 and 13.81 us there), so those losses were gemm1's doubled blocks too.", "",
            "| case | gemm0; gemm1 as run | us as run (first run) | " + " | ".join(n for n, _c in names[1:]) + " |",
            "| --- | --- | ---: | " + " | ".join("---:" for _n in names[1:]) + " |"] + \
        [f"| {c} | {what} | {us:.2f} | " + " | ".join(cells) + " |"
         for c, what, us, cells in sorted(rows, key=lambda r: _order(r[0]))] + [""]


def slices_run_section(sets: dict[str, list[tuple[str, dict[str, Any], float, dict]]], hw: Hardware) -> list[str]:
    """final7 against final6 and final6r: the same plans, the generator with split-K in slices against the one
    without. Per plan final7's time over the geometric mean of the two earlier runs', apart for the plans the rule
    changes (under final7's recorded switches) and the rest, whose kernels are the same: per case the ratio of the
    two medians is the slices' effect net of the drift between runs. Simulated: the same plans with the rule and
    without, on `hw`."""
    a, b, n = (_verified_times(sets[BENCH_LABEL[p]]) for p in (FINAL6, FINAL6R, FINAL7))
    if not n:
        return []
    switches = next(sw for _c, _p, _us, sw in sets[BENCH_LABEL[FINAL7]])
    common = sorted(set(a) & set(b) & set(n), key=lambda k: _order(k[0]))
    drift = {k: n[k] / (a[k] * b[k]) ** 0.5 for k in common}
    with generator_switches(switches):
        changed = {k for k in common if any(kernel_split_shared(p, kern) for p in [Plan.from_dict(json.loads(k[1]))]
                                            for kern in p.kernels)}
    cases = sorted({c for c, _p in changed}, key=_order)
    table = []
    for c in cases:
        ch = [drift[k] for k in common if k[0] == c and k in changed]
        un = [drift[k] for k in common if k[0] == c and k not in changed]
        sim = []
        for k in common:
            if k[0] == c and k in changed:
                plan = Plan.from_dict(json.loads(k[1]))
                t = []
                for value in (0, switches["gemm_split_shared_min_bytes"]):
                    with generator_switches({**switches, "gemm_split_shared_min_bytes": value}):
                        t.append(simulate(plan, hw).time_ns)
                sim.append(t[1] / t[0])
        table.append((c, len(ch), statistics.median(ch), len(un), statistics.median(un), statistics.median(sim)))
    net = [m / u for _c, _n, m, _k, u, _s in table]
    ch_all = [drift[k] for k in changed]
    un_all = [drift[k] for k in common if k not in changed]
    env = _env(FINAL7)
    speed = []
    for pattern in (FINAL6, FINAL6R, FINAL7):
        rs, _env_ = rows_of(glob_json(ROOT / pattern), ROOT / H100)
        st = run_stats(rs)
        speed.append(f"{st['eager_x']:.3f}x / {st['graphs_x']:.3f}x")
    lines = ["", "## Split-K in slices in a whole run: final7 against final6 twice", "",
             f"`{FINAL7}` ({env.get('date_utc', '?')[:16].replace('T', ' ')} UTC, {env.get('gpu')}): final6's plans "
             "with the generator that sums large split-K partials in slices (`capability.gemm_split_shared`, "
             f"`gemm_split_shared_min_bytes` = {switches['gemm_split_shared_min_bytes']}), the same command. "
             f"{len(common)} plans verified in all three runs; the rule changes {len(changed)} of them. Per plan, "
             "final7's time over the geometric mean of final6's and final6r's: the changed plans median "
             f"{statistics.median(ch_all):.3f} ({min(ch_all):.3f}-{max(ch_all):.3f}), the others (the same kernels) "
             f"median {statistics.median(un_all):.3f} ({min(un_all):.3f}-{max(un_all):.3f}). Per case, the changed "
             f"plans' median over the unchanged ones' (the drift between runs taken out): {min(net):.3f}-"
             f"{max(net):.3f}, median {statistics.median(net):.3f}. Geomean speedup over PyTorch eager / CUDA graphs "
             f"(queued), final6, final6r, final7: {'; '.join(speed)}. Simulated: each changed plan with the rule "
             f"over without, on `{H100_CALIBRATED}`, the case's median.", "",
             "| case | changed plans | their ratio (median) | unchanged plans | their ratio (median) | net | simulated |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {c} | {nc} | {m:.3f} | {nu} | {u:.3f} | {m / u:.3f} | {q:.3f} |" for c, nc, m, nu, u, q in table]
    return lines + [""]


SOLO_TRIAL = "results/h200/solo_sm_trial_run{}_h100.json"


def final8_section() -> list[str]:
    """final8 against final7 (final6's plans, then 23 deeper-ring variants, final7's generator), per case the fastest
    verified plan of each run and where final8's came from; then the one-block-per-SM trial that ran in the same
    device call (scripts/solo_sm_trial.py), per case."""
    files = {p: glob_json(ROOT / p) for p in (FINAL7, FINAL8)}
    if not all(files.values()):
        return []
    runs = {p: rows_of(fs, ROOT / H100) for p, fs in files.items()}
    st = {p: run_stats(rs) for p, (rs, _e) in runs.items()}
    best7 = {r["case"]: r for r in runs[FINAL7][0] if r.get("ours")}
    source = {}
    for f in files[FINAL8]:
        for c in read_json(f)["cases"]:
            ok = [r for r in c["plans"] if (r.get("verify") or {}).get("ok")]
            source[c["case"]] = min(ok, key=lambda r: r["time"]["queued_median_us"])["source"] if ok else "-"
    env = runs[FINAL8][1]
    lines = ["", "## final8: the deeper-ring variants in a whole run", "",
             f"`{FINAL8}` ({env.get('gpu')}, {env.get('date_utc', '?')[:16].replace('T', ' ')} UTC; "
             "`BENCH_TIMEOUT=200 STEPS=bench PREFIX=final8_paper_ PLANS_PREFIX=plans_final8_ scripts/device_final2.sh "
             "$OUT`, in scripts/device_solo_final8.sh): final6's 532 plans and the 23 per-GEMM 8-deep variants frozen "
             "after final7 (results/h200/plans_deep_ring_final7.json), with final7's generator. Plans verified "
             f"{st[FINAL8]['verified']}/{st[FINAL8]['timed']}. Geomean over PyTorch eager / CUDA graphs (queued): final7 "
             f"{st[FINAL7]['eager_x']:.3f}x / {st[FINAL7]['graphs_x']:.3f}x, final8 {st[FINAL8]['eager_x']:.3f}x / "
             f"{st[FINAL8]['graphs_x']:.3f}x; floor above 10 us within 1.3x: {st[FINAL8]['big_near']} of "
             f"{st[FINAL8]['big']}; others under 8 us: {st[FINAL8]['small_fast']} of {st[FINAL8]['small']}. Eager's "
             "geomean moves with PyTorch's own outliers (eager over 1.5x graphs, per case below), graphs' does not.", "",
             "| case | final7 best us | final8 best us | ratio | eager / graphs us (final8) | final8's best: source |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in runs[FINAL8][0]:
        if not r.get("ours") or r["case"] not in best7:
            continue
        b = best7[r["case"]]["ours"]
        flag = " (eager outlier)" if r["eager"] > 1.5 * r["graph"] else ""
        lines.append(f"| {r['case']} | {b:.2f} | {r['ours']:.2f} | {r['ours'] / b:.3f} | {r['eager']:.1f} / "
                     f"{r['graph']:.1f}{flag} | {source.get(r['case'], '-')[:70]} |")
    if (trial := _two_run_trial(SOLO_TRIAL, "one per SM", "ring smem", statistics.mean)) is not None:
        per, ok, gpu = trial
        every = [x for v in per.values() for x in v]
        lines += ["", "### gemm1 one block per SM (`capability.gemm_solo_sm`), the same device call", "",
                  f"`{SOLO_TRIAL.format('{1,2}')}` (scripts/solo_sm_trial.py, two runs, {gpu}): every plan of "
                  f"final8's lists the rule changes ({len(every)}), gemm1 asking for its ring's SMEM and for more than "
                  f"half an SM's, {'all' if ok else 'not all'} verified; one block per SM over its ring's SMEM, the mean "
                  f"of the two runs: {min(every):.3f}-{max(every):.3f}x, median {statistics.median(every):.3f}x. The "
                  "switch (`gemm_solo_secondary`) is on since; final8 ran without it.", "",
                  "| case | plans | one block per SM / ring SMEM |", "| --- | ---: | ---: |"]
        lines += _span_rows(per)
    return lines + [""]


def _two_run_trial(pattern: str, new: str, base: str, combine) -> tuple[dict[str, list[float]], bool, str] | None:
    """A trial's two runs (`pattern` with {} for 1 and 2; None unless both are committed): per case, each plan's
    variant `new` over `base`, the two runs' ratios combined by `combine`; whether every build verified in both;
    the GPU."""
    trial = [read_json(ROOT / pattern.format(i)) for i in (1, 2) if exists(ROOT / pattern.format(i))]
    if len(trial) != 2:
        return None
    per: dict[str, list[float]] = {}
    ok = True
    for a, b in zip(trial[0]["rows"], trial[1]["rows"], strict=True):
        ok &= all(v["ok"] for r in (a, b) for v in r["verify"].values())
        per.setdefault(a["case"], []).append(combine([r["us"][new] / r["us"][base] for r in (a, b)]))
    return per, ok, trial[0]["gpu"]


def _span_rows(per: dict[str, list[float]]) -> list[str]:
    """Table rows: per case (paper order) its plans and their ratios' span."""
    return [f"| {c} | {len(v)} | {min(v):.3f}-{max(v):.3f} |" if len(v) > 1 else f"| {c} | 1 | {v[0]:.3f} |"
            for c, v in sorted(per.items(), key=lambda kv: _order(kv[0]))]


def _rerun_ratios(sets: dict[str, list[tuple[str, dict[str, Any], float, dict]]], before: str, after: str,
                  picked) -> tuple[dict[str, list[float]], list[float]]:
    """Plan by plan, the time in the run `after` over the run `before` (BENCH_SETS patterns) of every plan both
    verified: per case those `picked(plan)` accepts (the plans a generator change rebuilt), and the rest (the
    same kernels: the run-to-run drift)."""
    a, b = (_verified_times(sets[BENCH_LABEL[p]]) for p in (before, after))
    changed: dict[str, list[float]] = {}
    drift = []
    for key in sorted(set(a) & set(b)):
        (changed.setdefault(key[0], []) if picked(Plan.from_dict(json.loads(key[1]))) else drift).append(b[key] / a[key])
    return changed, drift


def _rerun_rows(after: list[dict[str, Any]], best_before: dict[str, float], changed: dict[str, list[float]]) -> list[str]:
    """Table rows of a rerun section: per case its best before and after, their ratio, and the span of the ratios
    of the plans the change rebuilt (`changed`, per case)."""
    out = []
    for r in after:
        if not r.get("ours") or r["case"] not in best_before:
            continue
        ch, b = changed.get(r["case"], []), best_before[r["case"]]
        span = "-" if not ch else f"{min(ch):.3f}" if len(ch) == 1 else f"{len(ch)}: {min(ch):.3f}-{max(ch):.3f}"
        out.append(f"| {r['case']} | {b:.2f} | {r['ours']:.2f} | {r['ours'] / b:.3f} | {span} |")
    return out


def final9_section(sets: dict[str, list[tuple[str, dict[str, Any], float, dict]]]) -> list[str]:
    """final9 against final8: the same plans, the generator with gemm1 one block per SM where
    `capability.gemm_solo_sm` picks it. Per case the fastest verified plan of each run; the plans the rule changes
    against the rest (the run-to-run drift), plan by plan."""
    files = {p: glob_json(ROOT / p) for p in (FINAL8, FINAL9)}
    if not all(files.values()):
        return []
    runs = {p: rows_of(fs, ROOT / H100) for p, fs in files.items()}
    st = {p: run_stats(rs) for p, (rs, _e) in runs.items()}
    from solo_sm_trial import rule_changes

    changed, drift = _rerun_ratios(sets, FINAL8, FINAL9, rule_changes)
    every = [x for v in changed.values() for x in v]
    best8 = {r["case"]: r["ours"] for r in runs[FINAL8][0] if r.get("ours")}
    env = runs[FINAL9][1]
    outliers = ", ".join(f"{r['case']} ({r['eager']:.1f} vs {r['graph']:.1f} us)" for r in runs[FINAL9][0]
                         if r["eager"] > 1.5 * r["graph"]) or "none"
    lines = ["", "## final9: final8's plans with gemm1 one block per SM", "",
             f"`{FINAL9}` ({env.get('gpu')}, {env.get('date_utc', '?')[:16].replace('T', ' ')} UTC; "
             "`BENCH_TIMEOUT=200 STEPS=bench PREFIX=final9_paper_ PLANS_PREFIX=plans_final8_ scripts/device_final2.sh "
             "$OUT`, an H100 where an H200 was not lent): final8's plans with the generator of 2026-12-07, in which "
             "gemm_wgmma's second GEMM asks for over half an SM's SMEM where `capability.gemm_solo_sm` picks it. Plans "
             f"verified {st[FINAL9]['verified']}/{st[FINAL9]['timed']}. Geomean over PyTorch eager / CUDA graphs "
             f"(queued): final8 {st[FINAL8]['eager_x']:.3f}x / {st[FINAL8]['graphs_x']:.3f}x, final9 "
             f"{st[FINAL9]['eager_x']:.3f}x / {st[FINAL9]['graphs_x']:.3f}x; floor above 10 us within 1.3x: "
             f"{st[FINAL9]['big_near']} of {st[FINAL9]['big']}; others under 8 us: {st[FINAL9]['small_fast']} of "
             f"{st[FINAL9]['small']}. PyTorch eager over 1.5x its graphs time in final9 (eager's geomean moves with "
             f"them): {outliers}.", "",
             f"The {len(every)} plans the rule changes, final9 / final8: {min(every):.3f}-{max(every):.3f}x, median "
             f"{statistics.median(every):.3f}x (the trial before it: solo_sm_trial_run{{1,2}}_h100.json); the other "
             f"{len(drift)} plans, the same kernels: median {statistics.median(drift):.3f}x "
             f"({_quantile(drift, 0.05):.3f}-{_quantile(drift, 0.95):.3f}x, 5th-95th percentile).", "",
             "| case | final8 best us | final9 best us | ratio | plans the rule changes: final9 / final8 |",
             "| --- | ---: | ---: | ---: | --- |"]
    return lines + _rerun_rows(runs[FINAL9][0], best8, changed) + [""]


LEAN_TRIAL = "results/h200/split_lean_trial_run{}_h100.json"


def final10_section(sets: dict[str, list[tuple[str, dict[str, Any], float, dict]]]) -> list[str]:
    """Split-K in slices lean (`capability.GEMM_SPLIT_LEAN`): its trial (scripts/split_lean_trial.py, two runs), then
    the shortlist with it and without it on the same H100 minutes apart, per case the fastest verified plan of each
    and the plans it rebuilds against the rest."""
    trial = _two_run_trial(LEAN_TRIAL, "lean", "slices", statistics.geometric_mean)
    files = {p: glob_json(ROOT / p) for p in (FINAL10, FINAL10_LEAN)}
    if trial is None or not all(files.values()):
        return []
    per, ok, gpu = trial
    every = [x for v in per.values() for x in v]
    ws = [x for c, v in per.items() if c in WEIGHT_STREAMING for x in v]
    small = [x for c, v in per.items() if c not in WEIGHT_STREAMING for x in v]
    lines = ["", "## Split-K in slices, lean (`capability.GEMM_SPLIT_LEAN`)", "",
             f"`{LEAN_TRIAL.format('{1,2}')}` (scripts/split_lean_trial.py, two runs of one device call, "
             f"{gpu}): every plan of final8's lists with a GEMM that sums its split-K parts in slices "
             f"({len(every)}), built as before and lean (no store of a part's own share, one epoch-counting ticket per "
             "part, the share summed in one round trip where `split_sum_batch` allows), "
             f"{'all' if ok else 'not all'} verified. Lean over before, the geometric mean of the two runs: "
             f"{min(every):.3f}-{max(every):.3f}x, median {statistics.median(every):.3f}x; the weight-streaming "
             f"cases' {len(ws)} plans {min(ws):.3f}-{max(ws):.3f}x (median {statistics.median(ws):.3f}x), the "
             f"others' {len(small)} {min(small):.3f}-{max(small):.3f}x (median {statistics.median(small):.3f}x).", "",
             "| case | plans | lean / before |", "| --- | ---: | ---: |"]
    lines += _span_rows(per)
    from split_lean_trial import sums_in_slices

    runs = {p: rows_of(fs, ROOT / H100) for p, fs in files.items()}
    st = {p: run_stats(rs) for p, (rs, _e) in runs.items()}
    changed, drift = _rerun_ratios(sets, FINAL10, FINAL10_LEAN, sums_in_slices)
    rebuilt = [x for v in changed.values() for x in v]
    before = {r["case"]: r["ours"] for r in runs[FINAL10][0] if r.get("ours")}
    env = {p: rs[1] for p, rs in runs.items()}  # the same machine: its GPU named once
    outliers = "; ".join(f"{name}: " + (", ".join(f"{r['case']} {what} ({r[what]:.1f} us)" for r in runs[p][0]
                                                  for what, other in (("eager", "graph"), ("graph", "eager"))
                                                  if r[what] > 1.5 * r[other]) or "none")
                         for name, p in (("lean", FINAL10_LEAN), ("before", FINAL10)))
    lines += ["", "### The shortlist with it and without it", "",
              f"`{FINAL10_LEAN}` then `{FINAL10}` ({env[FINAL10_LEAN].get('gpu')}, one machine, minutes apart: the "
              "times are in the header above; `BENCH_TIMEOUT=90 "
              "STEPS=bench PREFIX=final10lean_paper_ PLANS_PREFIX=plans_short10_ scripts/device_final2.sh $OUT`, the "
              "same with PREFIX=final10_paper_ and the switch off): the 171 plans of results/h200/plans_short10_*.json. "
              f"Plans verified {st[FINAL10_LEAN]['verified']}/{st[FINAL10_LEAN]['timed']} and "
              f"{st[FINAL10]['verified']}/{st[FINAL10]['timed']}. Geomean over PyTorch eager / CUDA graphs (queued): "
              f"lean {st[FINAL10_LEAN]['eager_x']:.3f}x / {st[FINAL10_LEAN]['graphs_x']:.3f}x, before "
              f"{st[FINAL10]['eager_x']:.3f}x / {st[FINAL10]['graphs_x']:.3f}x (PyTorch over 1.5x its other mode's "
              f"time, which moves these: {outliers}); floor above 10 us within 1.3x: {st[FINAL10_LEAN]['big_near']} "
              f"and {st[FINAL10]['big_near']} of {st[FINAL10]['big']}; others under 8 us: "
              f"{st[FINAL10_LEAN]['small_fast']} and {st[FINAL10]['small_fast']} of {st[FINAL10]['small']}.", "",
              f"The {len(rebuilt)} plans lean rebuilds, lean / before: {min(rebuilt):.3f}-{max(rebuilt):.3f}x, median "
              f"{statistics.median(rebuilt):.3f}x; the other {len(drift)} plans, the same kernels: median "
              f"{statistics.median(drift):.3f}x ({_quantile(drift, 0.05):.3f}-{_quantile(drift, 0.95):.3f}x, "
              "5th-95th percentile).", "",
              "| case | before: best us | lean: best us | ratio | plans lean rebuilds: lean / before |",
              "| --- | ---: | ---: | ---: | --- |"]
    return lines + _rerun_rows(runs[FINAL10_LEAN][0], before, changed) + [""]


def one_wave_section(hw: Hardware) -> list[str]:
    """The one-wave trial (scripts/device_one_wave.sh, two runs of one device call): per weight-streaming case each
    variant, one GEMM at another tile width with the split-K that keeps its grid within one block per SM, over the
    case's base (final11's fastest plan), measured (the geometric mean of the two runs) and simulated on `hw`."""
    trial = one_wave_runs()
    if trial is None:
        return []
    rows, ms, ps = [], [], []
    for case, runs in trial[1]:
        if len(runs) < 2:
            continue
        plans = [Plan.from_dict(p) for p, _t in runs]
        us = [t for _p, t in runs]
        sims = [simulate(p, hw).time_ns for p in plans]
        base = plans[0]
        for plan, t, q in zip(plans[1:], us[1:], sims[1:], strict=True):
            i = 0 if plan.kernels[0] != base.kernels[0] else 1
            k, b = plan.kernels[i], base.kernels[i]
            what = (f"gemm{i} {b.tiles.block_n} -> {k.tiles.block_n} wide, {b.grid_blocks} -> {k.grid_blocks} "
                    f"blocks, {k.stages} stages")
            rows.append((case, what, us[0], t / us[0], q / sims[0]))
            ms.append(t / us[0])
            ps.append(q / sims[0])
    if not rows:
        return []
    agree = sum((m > 1) == (p > 1) for m, p in zip(ms, ps, strict=True))
    g0 = [m for (_c, w, _u, m, _p) in rows if w.startswith("gemm0")]
    lines = ["", "## One block per SM at another tile width: measured and simulated", "",
             f"`{ONE_WAVE_TRIAL.format('{1,2}', '*')}` (scripts/device_one_wave.sh, one device call, two runs, every build "
             "verified): per weight-streaming case, final11's fastest plan (the base) and each GEMM alone at another "
             "tile width with the largest split-K that keeps its grid within one block per SM "
             "(`scripts/wgmma_variants.py --one-wave`), the other GEMM as in the base. The question: does less "
             "re-read activation per stage (wider tiles) make the weights stream faster? No: every wider gemm0 took "
             f"{min(g0):.3f}-{max(g0):.3f}x the base's time (S2's on 132 SMs instead of 88 too). Each variant's time "
             "over the base's, the geometric mean of the two runs, against the same ratio simulated on "
             f"`{H100_CALIBRATED}`: {len(rows)} variants, measured {min(ms):.3f}-{max(ms):.3f}x, simulated "
             f"{min(ps):.3f}-{max(ps):.3f}x, Pearson {statistics.correlation(ms, ps):.2f}, the same side of 1 in "
             f"{agree} of {len(rows)}.", "",
             "| case | variant | base us | measured | simulated |", "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {c} | {w} | {u:.2f} | {m:.3f} | {p:.3f} |" for c, w, u, m, p in sorted(rows, key=lambda r: _order(r[0]))]
    return lines + one_wave_timeline_lines() + [""]


def deep_ring_ws_section(hw: Hardware) -> list[str]:
    """The deep-ring set (plans_deep_ws.json, two runs of scripts/device_one_wave.sh): per weight-streaming case each
    variant, rings as deep as SMEM allows, over the case's base, measured (the geometric mean of the runs) and
    simulated on `hw`."""
    trial = one_wave_runs(DEEP_WS_TRIAL)
    if trial is None:
        return []
    _env, measured = deep_ring_ratios(trial)
    rows = []
    for _case, runs in trial[1]:
        sims = [simulate(Plan.from_dict(p), hw).time_ns for p, _t in runs]
        rows += [q / sims[0] for q in sims[1:]]
    lines = ["", "## Rings as deep as SMEM allows: measured and simulated", "",
             f"`{DEEP_WS_TRIAL.format('{1,2}', '*')}` (`NCU=0 PLANS_FILE=results/h200/plans_deep_ws.json PREFIX=deep_ws "
             "scripts/device_one_wave.sh`, one device call, two runs): per weight-streaming case final11's fastest plan "
             "and its rings as deep as SMEM allows (`scripts/wgmma_variants.py --deep`), each variant's time over the "
             f"base's against the same ratio simulated on `{H100_CALIBRATED}`.", "",
             "| case | deeper | measured | simulated |", "| --- | --- | ---: | ---: |"]
    lines += [f"| {c} | {w} | {m:.3f} | {p:.3f} |" for (c, w, m), p in zip(measured, rows, strict=True)]
    return lines + [""]


ONE_WAVE_PROBE = "results/h200/probe_one_wave_h100.json"


def one_wave_timeline_lines() -> list[str]:
    """The per-block timelines of some of the trial's plans (scripts/probe_wgmma_timeline.py --lead on
    plans_one_wave.json): per plan gemm0's median block's last wgmma and end, and its last-wgmma-to-end tail."""
    if not exists(ROOT / ONE_WAVE_PROBE):
        return []
    doc = read_json(ROOT / ONE_WAVE_PROBE)
    listed = read_json(ROOT / "results" / "h200" / "plans_one_wave.json")
    lines = ["", f"Per-block %globaltimer timelines of some of these plans (`{ONE_WAVE_PROBE}`, {doc['gpu']}, "
             "scripts/probe_wgmma_timeline.py with bench's host lead, the median of 7 launches after an L2 flush; us "
             "from gemm0's first block): where a wider gemm0 loses.", "",
             "| plan | gemm0 | blocks | last wgmma (median block) | blocks end (median) | last wgmma to end (median) | "
             "gemm1 ends (max) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    base: dict[str, dict[str, float]] = {}
    moved, tails = [], []
    for pick, v in doc["cases"].items():
        case, idx = pick.split(":")
        k = Plan.from_dict(listed[case][int(idx)]["plan"]).kernels[0]
        g0, g1 = v["median_rep"]["gemm0"], v["median_rep"]["gemm1"]
        if idx == "0":  # the case's base (plans_one_wave.json lists it first)
            base[case] = g0
        elif case in base:
            moved.append(g0["mma_done_us_median"] - base[case]["mma_done_us_median"])
            tails.append(g0["tail_us_median"])
        lines.append(f"| {pick} | {k.tiles.block_n} wide, {k.stages} stages | {g0['blocks']} | "
                     f"{g0['mma_done_us_median']:.2f} | {g0['end_us_median']:.2f} | {g0['tail_us_median']:.2f} | "
                     f"{g1['end_us_max']:.2f} |")
    if moved:
        bt = [b["tail_us_median"] for b in base.values()]
        lines += ["", f"Against its base, a wider gemm0's median block finishes its main loop {min(moved):+.2f} to "
                  f"{max(moved):+.2f} us apart, and then spends {min(tails):.2f}-{max(tails):.2f} us to its end (the "
                  f"split-K partial out, the parts' barrier, the sum) where the base's takes {min(bt):.2f}-{max(bt):.2f}: "
                  "the loss is the split-K tail, as the simulator has it."]
    return lines


STREAM_FLOOR_H100 = "results/h200/calibration_stream_floor_h100.json"
STREAM_FLOOR_H100_RUN1 = "results/h200/calibration_stream_floor_run1_h100.json"  # 80dd320's group, no activations


def stream_floor_section() -> list[str]:
    """The stream_floor calibration group on the H100 beside the H100's last run of the shortlist: per case what a
    kernel that only streams the weights takes, and our best kernel's time over it."""
    got = stream_floor_rows("_h100")
    if got is None:
        return []
    env, rows = got
    fixed, tbps = stream_fit(rows)
    lines = ["", "## A pure stream of the weights", "",
             f"`results/h200/calibration_stream_floor_h100.json` ({env['gpu']}, {env['date_utc'][:16]} UTC; "
             "`REQUIRE_GPU= STEPS=stream scripts/device_h200_l2bound.sh $OUT`, the calibration group stream_floor): "
             "one block per SM, one thread keeping 4 or 8 bulk copies of 16 KiB in flight over the block's share of "
             "the case's weights (B, then D), no math, timed as bench times our kernels (L2 flushed, queued, CUDA "
             "events; the faster ring of the two; `1x / 2x`: 4 slots, each also copying 16 or 32 KiB of an "
             "L2-resident activation buffer per 16 KiB of weights). `two kernels` streams B, then D in a programmatic "
             "dependent launch "
             "that issues its first copies before griddepcontrol.wait, as gemm_wgmma's gemm1. `ours`: the case's "
             f"fastest verified plan in `{FINAL10_LEAN}`. One kernel fits {fixed:.1f} us + bytes / {tbps:.2f} TB/s "
             "(least squares).", "",
             f"`left for the GEMMs`: 1.3x the case's floor on `{H100}` (the H200's target, applied to this GPU's "
             "floor) minus the two-kernel stream: what everything a GEMM adds to the stream may cost if the case is to "
             "stay within 1.3x of its floor.", "",
             "| case | weights MB | floor us | one kernel us | two kernels (PDL) us | with 1x / 2x activation re-read us | "
             "left for the GEMMs us | ours us | ours - two kernels us | ours / two kernels |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted(rows, key=lambda r: _order(r["case"])):
        ours = r["ours"]
        act = " / ".join(f"{r['two_act'][a]:.2f}" if a in r["two_act"] else "-" for a in (1, 2))
        tail = f"{ours:.2f} | {ours - r['two']:.2f} | {ours / r['two']:.3f}" if ours else "- | - | -"
        floor = r["floor"]
        lines.append(f"| {r['case']} | {r['bytes'] / 1e6:.1f} | {floor:.2f} | {r['one']:.2f} | {r['two']:.2f} | {act} | "
                     f"{1.3 * floor - r['two']:.2f} | {tail} |")
    extra = [r["two_act"][2] - r["two"] for r in rows if 2 in r["two_act"]]
    if extra:
        lines += ["", f"With each 16 KiB of weights also 32 KiB of an L2-resident activation buffer that every block "
                  "walks in the same order (a 128 x 64 tile's A re-read: three times the bytes into each SM), the "
                  f"two-kernel stream (4 slots) takes {min(extra):+.2f} to {max(extra):+.2f} us longer than the faster "
                  "pure one: on the H100 the re-read activations are at most a small part of our kernels' extra time."]
    lines += _coresident_lines(rows)
    return lines + [""]


def _coresident_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The stream_floor pairs with 4 slots of 16 KiB (64 KiB: a secondary block fits beside a primary one, so PDL can
    start it while the primary runs) against 8 (128 KiB: it starts as a primary block leaves), with PDL and
    stream-ordered, in both runs; the cases with a floor above 10 us, and the others."""
    keys = ("two_kernels_pdl_us_median", "two_kernels_us_median", "one_kernel_us_median")
    files = [STREAM_FLOOR_H100, STREAM_FLOOR_H100_RUN1]
    big = {r["case"] for r in rows if r["floor"] > 10}
    per: dict[tuple[str, bool], list[float]] = {(k, b): [] for k in keys for b in (True, False)}
    net: list[float] = []  # per case and run: the PDL pair's difference less the stream-ordered pair's
    for f in files:
        got = {(r["case"], r["ring"]): r for r in read_json(ROOT / f)["groups"]["stream_floor"]["cases"]
               if r.get("act_per_weight", 0) == 0}
        for (key, is_big), xs in per.items():
            xs += [got[(r["case"], 4)][key] - got[(r["case"], 8)][key] for r in rows if (r["case"] in big) == is_big]
        net += [got[(c, 4)][keys[0]] - got[(c, 8)][keys[0]] - got[(c, 4)][keys[1]] + got[(c, 8)][keys[1]] for c in big]
    span = {k: f"{min(v):+.2f} to {max(v):+.2f}" for k, v in per.items()}
    small = sorted(r["case"] for r in rows if r["case"] not in big)
    return ["", f"4 slots against 8, both runs (`{files[0]}`, `{files[1]}`), the {len(big)} cases with a floor above "
            f"10 us: with PDL {span[(keys[0], True)]} us, stream-ordered {span[(keys[1], True)]} us, one kernel "
            f"{span[(keys[2], True)]} us ({', '.join(small)}: {span[(keys[0], False)]} us with PDL). With 64 KiB a "
            "second-kernel block fits beside a first-kernel one, so PDL can start the second kernel's blocks while "
            "the first still streams, each issuing its first copies of D beside that stream (not timestamped here); "
            "with 128 KiB they start as the first kernel's blocks leave. On the long streams the early start costs "
            f"time: per case and run the PDL pair's difference exceeds the stream-ordered pair's by {min(net):.2f}-"
            f"{max(net):.2f} us. The same direction as gemm_wgmma's second GEMM, faster since it asks for an SM of its "
            "own (`capability.gemm_solo_sm`, above)."]


def one_run_section() -> list[str]:
    """benchmarks/kernels.md's per-case table for the one H100 run of all 26 cases (the floor at the H100 file's
    datasheet HBM rate and peak)."""
    rs, env = rows_of([ROOT / H100_ONE_RUN.format(wl) for wl in WORKLOADS], ROOT / H100)
    st = run_stats(rs)
    lines = ["", "## All 26 cases in one run on the H100", "",
             f"`{ONE_RUN}` ({env.get('gpu')}, {env.get('date_utc')}; `STEPS=bench PREFIX=final3_paper_ "
             "scripts/device_final2.sh $OUT`, asked for an H200): the GEMM chains and gated FFNs with the final run's "
             "frozen plans, the conv chains with the staged-E run's, every one built with the generator of that day "
             "(MUFU activations, swizzled E partial, staged E, early exit arrive, implicit im2col by TMA), verified "
             "and timed next to PyTorch as in benchmarks/kernels.md. Floor = max(FLOPs / peak, min bytes / "
             f"{load_hardware(ROOT / H100).hbm_bandwidth_gbps:.0f} GB/s) on `{H100}`.", "",
             f"- Geomean speedup over PyTorch eager **{st['eager_x']:.2f}x**, over CUDA graphs "
             f"**{st['graphs_x']:.2f}x** (queued; the H200 targets: 3.1x and 2.5x).",
             f"- Floor above 10 us: within 1.3x of it {st['big_near']} of {st['big']}; other cases under 8 us: "
             f"{st['small_fast']} of {st['small']}.",
             f"- Plans verified: {st['verified']}/{st['timed']}; best strategy per case: {st['strategies']}.", "",
             "| case | best | plan | ours us | eager us | graphs us | x eager | x graphs | floor us | % floor | "
             "unfused / smem / dsm us | verified |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rs:
        bs = " / ".join("-" if r["by_strategy"][s] is None else f"{r['by_strategy'][s]:.1f}" for s in ("unfused", "smem", "dsm"))
        if not r.get("ours"):
            lines.append(f"| {r['case']} | - | no verified plan | - | {r['eager']:.1f} | {r['graph']:.1f} | - | - | "
                         f"{r['floor']:.2f} | - | {bs} | {r['verified']} |")
            continue
        lines.append(f"| {r['case']} | {r['strategy']} | {r['plan']}, {r['threads']} thr, {r['instruction']} | "
                     f"{r['ours']:.1f} | {r['eager']:.1f} | {r['graph']:.1f} | {r['eager'] / r['ours']:.2f} | "
                     f"{r['graph'] / r['ours']:.2f} | {r['floor']:.2f} | {100 * r['floor'] / r['ours']:.0f} | {bs} | "
                     f"{r['verified']} |")
    return lines + [""]


if __name__ == "__main__":
    raise SystemExit(main())
