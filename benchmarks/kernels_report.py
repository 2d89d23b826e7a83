"""Generate benchmarks/kernels.md from the committed H200 bench JSON of one run.

    python3 benchmarks/kernels_report.py [--prefix PREFIX] [--hw hw_configs/h200.yaml]
                                         [--out benchmarks/kernels.md]

`--prefix` picks the run: results/h200/<prefix>{gemm_chains,gated_ffn,conv_chains}.json
(`final_paper_`: scripts/device_final.sh; `final3_paper_` to `final6_paper_`: the whole runs with the generator of
their time, scripts/device_final2.sh (final6 with 119 plans more), the newest the default once its three H200 files are
committed;
`bench_paper_`: the 440-plan hand run).

Every number in the output comes from those files (measured on the GPU named in them); the only
computed quantities are ratios, FLOP/s and bytes over the measured times, and the roofline floor
(Chain.floor_ns on the hardware file).
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path
from typing import Any

from fusesim.capability import SWITCHES, recorded_switches
from fusesim.hardware import load_hardware
from fusesim.planner.dataflow import gemm_kernel_volumes
from fusesim.stored import exists, glob_json, read_json
from fusesim.workload import Chain, load_workload

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("gemm_chains", "gated_ffn", "conv_chains")
PLANS_NOTE = {
    "final_paper_": "per case: the planner's top-3 plans per strategy, the fastest plan per strategy and "
                    "instruction family of the previous final run, the four best fused_wgmma hand plans by "
                    "a rough score, and the simulator's three fastest of a wider pool (scripts/sim_search.py); "
                    "frozen with the reason each is listed in results/h200/plans_final_*.json "
                    "by scripts/freeze_final_plans.py",
    "bench_paper_": "hand-built plans, top 6 per strategy by a ranking model, all built and timed",
    "final2_paper_": "per case: the GEMM chains and gated FFNs with the final run's frozen plans "
                     "(results/h200/plans_final_*.json), the conv chains with the staged-E run's "
                     "(results/h200/plans_estage.json), all built with today's generator; scripts/device_final2.sh",
    "final3_paper_": "per case: the GEMM chains and gated FFNs with the first final run's frozen plans "
                     "(results/h200/plans_final_*.json: the planner's top-3 per strategy, the fastest plan per strategy "
                     "and instruction family of the run before, the four best fused_wgmma hand plans by a rough score, "
                     "the simulator's three fastest of a wider pool), the conv chains with the staged-E run's "
                     "(results/h200/plans_estage.json: per strategy the simulator's three fastest wgmma plans and the "
                     "fastest measured one), every one built with the generator as committed",
}
PLANS_NOTE["final4_paper_"] = PLANS_NOTE["final3_paper_"]  # the same frozen plans, the generator of a later commit
PLANS_NOTE["final5_paper_"] = PLANS_NOTE["final3_paper_"]
PLANS_NOTE["final6_paper_"] = (PLANS_NOTE["final3_paper_"] + "; and, new in this run (results/h200/plans_final6_*.json, "
                               "scripts/freeze_final_plans.py --extend --into plans_final6_), split-K through DSM "
                               "variants of final5's fastest unfused wgmma plan of each case (results/h200/"
                               "plans_dsm_split_final5.json, plans_dsm_split_small_final5.json) and the two S8 plans "
                               "of the small-case sweep that beat their control (plans_sweep_small_faster.json)")
PLANS_NOTE["final7_paper_"] = PLANS_NOTE["final6_paper_"]  # final6's plans, split-K in slices in the generator
PLANS_NOTE["final8_paper_"] = (PLANS_NOTE["final3_paper_"] + "; final6's additions (split-K through DSM variants of "
                               "final5's fastest unfused wgmma plans, results/h200/plans_dsm_split_final5.json and "
                               "plans_dsm_split_small_final5.json, and two S8 sweep plans, plans_sweep_small_faster.json); "
                               "and, new in this run (results/h200/plans_final8_*.json), the small cases' 8-stage ring "
                               "variants of final7's fastest unfused wgmma plans that deepen no DSM-cluster GEMM "
                               "(results/h200/plans_deep_ring_final7.json, scripts/deep_ring_trial.py --freeze)")
# final8's plans with the generator that launches gemm_wgmma's second GEMM one block per SM (capability.gemm_solo_sm)
PLANS_NOTE["final9_paper_"] = PLANS_NOTE["final8_paper_"].replace("new in this run", "new in final8")
# a shortlist of final8's plans (scripts/shortlist_plans.py: within 1.10x of the case's best in final8 or final9 on an
# H100, each strategy's best there, within 1.05x of the best in final5 on the H200) with final9's generator and split-K
# in slices lean (capability.GEMM_SPLIT_LEAN); final10 was the shortlist without it, on an H100 only
PLANS_NOTE["final11_paper_"] = ("per case, the plans of final8's lists (" + PLANS_NOTE["final9_paper_"]
                                + ") that ran within 1.10x of the case's "
                                "fastest in final8 or final9 (on an H100), each strategy's fastest there, and those "
                                "within 1.05x of the case's fastest in final5 (the H200): 171 of 555, "
                                "results/h200/plans_short10_*.json (scripts/shortlist_plans.py)")
FIRST_RUN = "final_paper_"  # the first final run, 2026-12-04 (scripts/device_final.sh)
# the whole runs of all 26 cases with the generator as committed at their time (scripts/device_final2.sh), newest
# first: final3 2026-12-06 06:08 UTC, final4 08:37 UTC (GEMM1's k-tile loop unrolled in fused_wgmma), final5 10:03 UTC
# (fused_wgmma's cluster barrier arrives relaxed), final6 (final5's generator, its plans and 119 more), final7
# (final6's plans, split-K in slices; an H100 only so far), final8 (final7's generator, final6's plans and 23 more;
# an H100 only so far), final9 (final8's plans, gemm1 one block per SM where capability.gemm_solo_sm says), final11
# (a shortlist of final8's plans that fits a small device budget, split-K in slices lean)
LATER_RUNS = ("final11_paper_", "final9_paper_", "final8_paper_", "final7_paper_", "final6_paper_", "final5_paper_", "final4_paper_", "final3_paper_")
# how each run was taken as a whole (the JSON records one bench command per workload)
WHOLE_RUN = {
    FIRST_RUN: "`scripts/device_final.sh $OUT` with STEPS=\"bench ncu\"",
    **{run: f"`STEPS=bench PREFIX={run} scripts/device_final2.sh $OUT`, then the same with STEPS=ncu"
       for run in LATER_RUNS},
}
WHOLE_RUN["final6_paper_"] = ("`BENCH_TIMEOUT=300 STEPS=bench PREFIX=final6_paper_ PLANS_PREFIX=plans_final6_ "
                              "scripts/device_final2.sh $OUT`, then the same with STEPS=ncu")
WHOLE_RUN.update({run: (f"`BENCH_TIMEOUT=250 NCU_TIMEOUT=130 STEPS=\"bench ncu\" PREFIX={run} PLANS_PREFIX={plans} "
                        "scripts/device_final2.sh $OUT`")
                  for run, plans in (("final7_paper_", "plans_final6_"), ("final8_paper_", "plans_final8_"),
                                     ("final9_paper_", "plans_final8_"))})
WHOLE_RUN["final11_paper_"] = ("`REQUIRE_GPU=H200 BENCH_TIMEOUT=120 NCU_TIMEOUT=100 STEPS=\"bench ncu\" PREFIX=final11_paper_ "
                               "PLANS_PREFIX=plans_short10_ scripts/device_final2.sh $OUT`")
# a whole run's bench step again on the same machine right after it (no Nsight Compute): run-to-run noise
REPEATS = {"final11_paper_": ("final11r_paper_", "`REQUIRE_GPU=H200 BENCH_TIMEOUT=110 STEPS=bench PREFIX=final11r_paper_ "
                                                 "PLANS_PREFIX=plans_short10_ scripts/device_final2.sh $OUT`")}


# cases timed again after the final run, with kernels it did not have (the wgmma implicit im2col)
# runs after the final run that timed cases again with kernels it did not have: (file pattern, what changed,
# how the run chose its plans, the script); a later run's cases replace the earlier ones in the mixed summary
LATER = (
    ("wgmma_im2col_paper_*.json", "on the wgmma templates' implicit im2col",
     "per case and strategy the simulator's four fastest wgmma plans (the templates' implicit-im2col loader, new "
     "after the final run) and the final run's fastest plan of the strategy", "scripts/device_im2col.sh"),
    ("estage_paper_*.json", "with fused_wgmma's last E sub-tile staged in SMEM",
     "per case and strategy the simulator's three fastest wgmma plans (fused_wgmma's last E sub-tile staged in the "
     "drained ring and stored as 16-byte row pieces where E goes straight out, new after the im2col run) and the "
     "fastest plan of the strategy in the final and im2col runs", "scripts/device_estage.sh"),
    ("estage_h200_paper_*.json", "again on the H200, with the early exit arrive of the reduce-scatter plans too",
     "the same 96 plans, with fused_wgmma's exit cluster barrier arriving once the reduce-scatter's slices have "
     "landed (new after the H100 run)",
     "python3 -m fusesim.commands.bench workloads/paper_conv_chains.yaml --hw hw_configs/h200.yaml --plans "
     "file:results/h200/plans_estage.json --top-k 99 --reps 50, then fusesim.gpu.ncu --all"),
    ("final2_paper_conv_chains.json", "again on the H200, with the implicit im2col by TMA in im2col mode",
     "the same 96 plans, the wgmma templates loading the 3x3 convolutions' A tiles by TMA in im2col mode (new after "
     "the H100 trial)", "STEPS=bench WORKLOADS=conv_chains scripts/device_final2.sh $OUT",
     "final2_recheck_c1_c2.json"),
)


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _best(plans: list[dict[str, Any]], strategy: str | None = None) -> dict[str, Any] | None:
    ok = [r for r in plans if r.get("verify", {}).get("ok") and r.get("time")
          and (strategy is None or r["strategy"] == strategy)]
    return min(ok, key=lambda r: r["time"]["queued_median_us"]) if ok else None


def rows(results: Path, hw_path: Path, prefix: str = FIRST_RUN) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return rows_of([results / f"{prefix}{wl}.json" for wl in WORKLOADS], hw_path)


def rows_of(paths: list[Path], hw_path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per case of these bench files: its best verified plan next to PyTorch in the same run."""
    hw = load_hardware(hw_path)
    out = []
    env: dict[str, Any] = {}
    for path in paths:
        doc = read_json(path)
        env = env or doc["env"]
        for c in doc["cases"]:
            ch = Chain.from_dict(c["chain"])
            best = _best(c["plans"])
            pt = c.get("pytorch", {})
            n_ok = sum(1 for r in c["plans"] if r.get("verify", {}).get("ok"))
            n_run = sum(1 for r in c["plans"] if "verify" in r)
            row: dict[str, Any] = {
                "case": ch.case_id, "kind": ch.kind, "mnkl": f"{ch.m}x{ch.n}x{ch.k}x{ch.l}",
                "verified": f"{n_ok}/{n_run}", "plans": len(c["plans"]),
                "eager": pt.get("eager", {}).get("queued_median_us"),
                "eager_sync": pt.get("eager", {}).get("sync_median_us"),
                "graph": pt.get("graph", {}).get("queued_median_us"),
                "graph_sync": pt.get("graph", {}).get("sync_median_us"),
                "floor": ch.floor_ns(hw) / 1e3, "flops": ch.flops, "min_bytes": ch.min_bytes,
                "by_strategy": {s: (b["time"]["queued_median_us"] if (b := _best(c["plans"], s)) else None)
                                for s in ("unfused", "smem", "dsm")},
            }
            if best:
                t = best["time"]["queued_median_us"]
                row.update({"strategy": best["strategy"], "plan": best["summary"].split(": ", 1)[1],
                            "instruction": best["plan"].get("instruction", "mma_sync"),
                            "threads": best["threads"], "ours": t, "ours_sync": best["time"]["sync_median_us"],
                            "rel_err": best["verify"]["rel_err"], "tflops": ch.flops / t / 1e6,
                            "hbm_gbps": ch.min_bytes / t / 1e3,
                            # the same plan as a CUDA graph's replay, where the run timed it so (bench --graph-launch)
                            "ours_graph": (best.get("time_graph") or {}).get("queued_median_us"),
                            "ours_graph_sync": (best.get("time_graph") or {}).get("sync_median_us")})
            out.append(row)
    return out, env


def one_element_us(path: str = "results/h200/probe_small_and_dsm.json") -> float | None:
    """The fastest one-element PyTorch kernel after an L2 flush in the probe (queued, us); None without it."""
    f = Path(path)
    if not exists(f):
        return None
    ts = [r["cold_queued_us"] for r in read_json(f).get("small", [])
          if r.get("what", "").startswith("torch add, 1 element") and r.get("cold_queued_us")]
    return min(ts) if ts else None


def h100_stream_speedups(path: Path = Path("results/h200/stream_trial_h100.json")) -> tuple[float, float, int]:
    """Geomean over the H100 stream trial's cases of PyTorch eager / ours and CUDA graphs / ours (ours: the fastest
    of a case's plans, each the median of its default-stream runs), and the number of cases."""
    eager, graphs = [], []
    for row in read_json(path)["rows"]:
        runs = row["runs"]["default"]
        ours = min(statistics.median(run["ours"][i][0] for run in runs) for i in range(len(row["plans"])))
        eager.append(statistics.median(run["eager"] for run in runs) / ours)
        graphs.append(statistics.median(run["graph"] for run in runs) / ours)
    return geomean(eager), geomean(graphs), len(eager)


# the H100 run of all 26 cases with the generator of 2026-12-06 (benchmarks/h100.md has its table)
H100_ONE_RUN = "results/h200/final3_paper_{}_h100.json"


def run_stats(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's headline numbers against #5's targets: geomean speedups (queued), floor and 8 us counts, verified
    plans, best strategy per case."""
    have = [r for r in rs if r.get("ours")]
    big = [r for r in have if r["floor"] > 10.0]
    small = [r for r in have if r["floor"] <= 10.0]
    return {"eager_x": geomean([r["eager"] / r["ours"] for r in have if r["eager"]]),
            "graphs_x": geomean([r["graph"] / r["ours"] for r in have if r["graph"]]),
            "big": len(big), "big_near": sum(1 for r in big if r["ours"] <= 1.3 * r["floor"]),
            "small": len(small), "small_fast": sum(1 for r in small if r["ours"] < 8.0),
            "verified": sum(int(r["verified"].split("/")[0]) for r in rs),
            "timed": sum(int(r["verified"].split("/")[1]) for r in rs),
            "strategies": ", ".join(f"{s} {sum(1 for r in have if r['strategy'] == s)}" for s in ("unfused", "smem", "dsm"))}


# what a run's kernels have that an earlier run's lack, by generator switch (capability.SWITCHES' keys)
SWITCH_WHAT = {"fused_producer_early_wait": "fused_wgmma's producer early wait (73 plans)",
               "fused_gemm1_unroll": "its unrolled GEMM1 loop",
               "fused_relaxed_arrive": "its relaxed cluster barrier arrives"}


def kept_in(prefix: str, switch: str) -> str:
    """'; in this run's kernels' where the run's recorded generator had `switch` on, else '; not in this run's
    kernels' (a kept change's bullet says which)."""
    on = run_switches(ROOT / "results" / "h200" / f"{prefix}{WORKLOADS[0]}.json").get(switch)
    return "; in this run's kernels" if on else "; not in this run's kernels"


def run_switches(path: Path) -> dict[str, bool | int]:
    """The generator switches a bench file's kernels were built with, as its "codegen" block records them."""
    return recorded_switches(read_json(path).get("codegen"))


def switches_lacking(path: Path, than: Path) -> list[str]:
    """SWITCH_WHAT of every switch whose value in the bench file `path`'s "codegen" block differs from `than`'s,
    in capability.SWITCHES' order."""
    mine, theirs = run_switches(path), run_switches(than)
    return [SWITCH_WHAT.get(s.key, s.key) for s in SWITCHES if mine[s.key] != theirs[s.key]]


def h100_one_run_bullet(first: bool = True, prefix: str = "final3_paper_") -> list[str]:
    """One line on the H100 run of all 26 cases (benchmarks/h100.md has its table); `first`: rendered under the
    first final run, whose kernels it postdates, else under the H200's later run `prefix`, with the switches its
    kernels differ in as the two runs' "codegen" blocks record them (`switches_lacking`)."""
    files = [ROOT / H100_ONE_RUN.format(wl) for wl in WORKLOADS]
    if not all(exists(f) for f in files):
        return []
    rs, env = rows_of(files, ROOT / "hw_configs" / "h100_sxm.yaml")
    st = run_stats(rs)
    missing = [] if first else switches_lacking(files[0], ROOT / "results" / "h200" / f"{prefix}{WORKLOADS[0]}.json")
    what = ("with every kernel change kept since this run" if first else "with this run's kernels" if not missing else
            "with this run's kernels but for " + (", ".join(missing[:-1]) + " and " if len(missing) > 1 else "")
            + missing[-1])
    return [f"- All 26 cases in one run {what}, on an H100 where an H200 was "
            f"asked for ({env.get('date_utc', '?')[:16]} UTC, {H100_ONE_RUN.format('*')}, the same plans; "
            "table in benchmarks/h100.md): "
            f"{st['eager_x']:.2f}x over eager, {st['graphs_x']:.2f}x over graphs (geomean), "
            f"{st['small_fast']} of {st['small']} small cases under 8 us, plans verified {st['verified']}/{st['timed']}."]


# how the run before a whole run chose its plans, where PLANS_NOTE's comparison does not say it
PREVIOUS_RUN_WHAT = {
    "final6_paper_": "this run's plans but its additions, the same generator",
    "final11_paper_": ("final3's lists (this run's plans are a shortlist of them with final6's and final8's additions), "
                       "the generator of its time"),
}


def previous_whole_run_bullet(prefix: str) -> list[str]:
    """One line on the whole run before `prefix` among LATER_RUNS (the same plans, an earlier generator)."""
    if prefix not in LATER_RUNS:
        return []
    earlier = [run for run in LATER_RUNS[LATER_RUNS.index(prefix) + 1:]  # the newest one run on an H200
               if all(exists(ROOT / "results" / "h200" / f"{run}{wl}.json") for wl in WORKLOADS)]
    if not earlier:
        return []
    prev = earlier[0]
    files = [ROOT / "results" / "h200" / f"{prev}{wl}.json" for wl in WORKLOADS]
    rs, env = rows_of(files, ROOT / "hw_configs" / "h200.yaml")
    st = run_stats(rs)
    odd = eager_outlier_rows([r for r in rs if r.get("ours")])
    what = PREVIOUS_RUN_WHAT.get(prefix) or ("the same plans with the generator of its time"
                                             if PLANS_NOTE[prev] == PLANS_NOTE[prefix] else
                                             "this run's plans but its additions, the generator of its time")
    return [f"- The whole run before this one, {what} (results/h200/{prev}*.json, "
            f"{env.get('gpu')}, {env.get('date_utc', '?')[:16]} UTC; `--prefix {prev}` renders it): "
            f"{st['eager_x']:.2f}x over eager, {st['graphs_x']:.2f}x over graphs (geomean), {st['big_near']} of "
            f"{st['big']} within 1.3x of the floor, {st['small_fast']} of {st['small']} under 8 us, plans verified "
            f"{st['verified']}/{st['timed']}"
            + (f"; its PyTorch eager outliers: {', '.join(r['case'] for r in odd)}" if odd else "") + "."]


ONE_WAVE_TRIAL = "results/h200/one_wave_run{}_h100_{}.json"
DEEP_WS_TRIAL = "results/h200/deep_ws_run{}_h100_{}.json"


def one_wave_runs(pattern: str = ONE_WAVE_TRIAL) -> tuple[dict[str, Any], list[tuple[str, list[tuple[dict[str, Any], float]]]]] | None:
    """The one-wave trial (scripts/device_one_wave.sh, two runs; `pattern`: another set it ran, the deep-ring one):
    its first run's env and, per case, (plan, time) of the plans verified in both runs, the time the geometric mean
    of the two; the case's base first, as the trial lists it. None where the files are not committed."""
    files = [[ROOT / pattern.format(i, wl) for wl in WORKLOADS[:2]] for i in (1, 2)]
    if not all(exists(f) for run in files for f in run):
        return None
    cases, env = [], {}
    for f1, f2 in zip(*files, strict=True):
        d1 = read_json(f1)
        env = env or d1["env"]
        for c1, c2 in zip(d1["cases"], read_json(f2)["cases"], strict=True):
            cases.append((c1["case"], [(p1["plan"], (p1["time"]["queued_median_us"] * p2["time"]["queued_median_us"]) ** 0.5)
                                       for p1, p2 in zip(c1["plans"], c2["plans"], strict=True)
                                       if all((p.get("verify") or {}).get("ok") and p.get("time") for p in (p1, p2))]))
    return env, cases


def one_wave_bullet() -> list[str]:
    """One line on the one-wave trial (benchmarks/h100.md has its table and simulates it): per GEMM, the variants'
    time over their case's base."""
    trial = one_wave_runs()
    if trial is None:
        return []
    env, cases = trial
    ratios: dict[int, list[float]] = {0: [], 1: []}
    for _case, runs in cases:
        (base, t0), variants = runs[0], runs[1:]
        for plan, t in variants:
            ratios[0 if plan["kernels"][0] != base["kernels"][0] else 1].append(t / t0)
    return [f"- Again after this run, on an H100 ({env.get('date_utc', '?')[:16]} UTC, "
            f"{ONE_WAVE_TRIAL.format('{1,2}', '*')}, two runs, all verified): each GEMM of each weight-streaming case's "
            "fastest plan alone at another tile width, with the split-K that keeps its grid within one block per SM "
            f"(less re-read activation per stage): gemm0 {min(ratios[0]):.3f}-{max(ratios[0]):.3f}x the plan's time "
            f"({len(ratios[0])} variants, every one wider), gemm1 {min(ratios[1]):.3f}-{max(ratios[1]):.3f}x "
            f"({len(ratios[1])}); the simulator's H100 file predicts these ratios (benchmarks/h100.md)."]


def deep_ring_ratios(trial: tuple[dict[str, Any], list[tuple[str, list[tuple[dict[str, Any], float]]]]] | None = None,
                     ) -> tuple[dict[str, Any], list[tuple[str, str, float]]] | None:
    """The deep-ring set (plans_deep_ws.json, two runs; `trial`: `one_wave_runs(DEEP_WS_TRIAL)` where the caller has
    read it): its env and per variant (case, which rings deepened, time over the case's base)."""
    trial = trial or one_wave_runs(DEEP_WS_TRIAL)
    if trial is None:
        return None
    env, cases = trial
    out = []
    for case, runs in cases:
        (base, t0), variants = runs[0], runs[1:]
        for plan, t in variants:
            deeper = [i for i in (0, 1) if plan["kernels"][i]["stages"] != base["kernels"][i]["stages"]]
            out.append((case, " and ".join(f"gemm{i} {base['kernels'][i]['stages']} -> {plan['kernels'][i]['stages']}"
                                           for i in deeper), t / t0))
    return env, out


def deep_ring_bullet() -> list[str]:
    """One line on the weight-streaming cases' deepest rings (H100)."""
    got = deep_ring_ratios()
    if got is None:
        return []
    env, rows = got
    r = [x for _c, _w, x in rows]
    return [f"- The weight-streaming cases' fastest plans with their rings as deep as SMEM allows (gemm0, gemm1, both; "
            f"`scripts/wgmma_variants.py --deep`, results/h200/plans_deep_ws.json), on an H100 "
            f"({env.get('date_utc', '?')[:16]} UTC, {DEEP_WS_TRIAL.format('{1,2}', '*')}, two runs): "
            f"{len(r)} variants verified in both, {min(r):.3f}-{max(r):.3f}x the base's time (median {statistics.median(r):.3f}x). The "
            "H100's HBM is as busy with 6 stages; the H200 (more bandwidth to cover with bytes in flight) was asked for "
            "this trial and not lent."]


MCAST_TRIAL = "results/h200/mcast_trial_h100.json"


def l2_rate_bullet(prefix: str, ws: set[str]) -> list[str]:
    """One line from the run's Nsight data: the weight-streaming cases' best kernels' average tile loads (from the
    plan), L2 and DRAM throughput per GEMM over the kernel's duration, against the calibrated L2 and HBM bandwidths."""
    # per GEMM: (tile loads, lts__t_bytes, DRAM reads) in bytes per ns, case, block_n
    per: dict[int, list[tuple[float, float, float, str, int]]] = {0: [], 1: []}
    hw = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
    for wl in WORKLOADS[:2]:
        path = ROOT / "results" / "h200" / f"{prefix}{wl}.json"
        if not exists(path):
            return []
        for c in read_json(path)["cases"]:
            best = _best(c["plans"]) if c["case"] in ws else None
            kernels = ((best or {}).get("ncu") or {}).get("per_kernel", [])
            if best and best["strategy"] == "unfused" and len(kernels) == 2:
                for i, k in enumerate(kernels):
                    t = k["gpu__time_duration.sum"]
                    kern = best["plan"]["kernels"][i]
                    # the tile bytes the blocks load from L2: the dataflow analyzer's l2_read of an unfused GEMM
                    tiles = gemm_kernel_volumes(Chain.from_dict(c["chain"]), hw, f"gemm{i}", kern["tiles"]["block_m"],
                                                kern["tiles"]["block_n"])["l2_read"]
                    per[i].append((tiles / t, k["lts__t_bytes.sum"] / t,
                                   k["dram__bytes_read.sum"] / t, c["case"], kern["tiles"]["block_n"]))
    if not per[0] or not exists(ROOT / MCAST_TRIAL):
        return []
    l2_gbps, hbm_gbps = hw.l2_bandwidth_gbps, hw.hbm_bandwidth_gbps
    mcast = read_json(ROOT / MCAST_TRIAL)["rows"]
    mc2 = statistics.median(r["us"]["multicast 2"] / r["us"]["own A"] for r in mcast if "multicast 2" in r["us"])

    def span(i: int, j: int) -> str:
        v = [x[j] / 1e3 for x in per[i]]
        return f"{min(v):.1f}-{max(v):.1f}"

    def share(i: int, j: int, bw: float) -> str:
        v = [x[j] / bw for x in per[i]]
        return f"{min(v):.0%}-{max(v):.0%}"

    lts_ratio = [x[1] / x[0] for i in (0, 1) for x in per[i]]
    l2_first = sorted(x[3] for x in per[0] if x[0] / l2_gbps > x[2] / hbm_gbps)
    narrow = sorted(x[3] for x in per[0] if x[4] == 64)
    return [f"- Where the weight-streaming GEMMs' time goes on the H200 (this run's Nsight Compute, each case's best "
            "kernel, bytes over the kernel's whole duration): the first GEMM's blocks load their tiles from L2 at "
            f"{span(0, 0)} TB/s ({share(0, 0, l2_gbps)} of the calibrated {l2_gbps / 1e3:.2f} TB/s; the tile bytes "
            f"follow from the plan, and Nsight's lts__t_bytes counts {min(lts_ratio):.2f}-{max(lts_ratio):.2f}x them) "
            f"while DRAM delivers {span(0, 2)} TB/s ({share(0, 2, hbm_gbps)} of the calibrated {hbm_gbps / 1e3:.2f}); "
            f"the second GEMM {span(1, 0)} and {span(1, 2)}. Two thirds of a non-gated 128 x 64 tile's loads (half of a "
            "gated one's or a 128 x 128 one's) are the activation tile every column tile re-reads, yet only "
            f"{', '.join(l2_first) or 'no case'} of the {len(per[0])} first GEMMs uses more of L2's bandwidth than of "
            f"HBM's (the 128 x 64 ones: {', '.join(narrow)}); on the H100 HBM binds first (loading each A tile once per "
            f"cluster of 2 by multicast took {mc2:.3f}x the time there, median of {len(mcast)} plans, {MCAST_TRIAL}). "
            "The same trial on the H200 is prepared (scripts/device_h200_l2bound.sh) and was not run: no H200 was lent "
            "for it."]


CODE_WARM_TRIAL = "results/h200/code_warm_trial_h100.json"
CALIB_ICACHE = "results/h200/calibration_icache_h100.json"
CALIB_KERNEL_START = "results/h200/calibration_kernel_start_h100.json"


def cold_start_bullet() -> list[str]:
    """One line on the cold-start trials (H100): is a kernel's fixed cost after the flush its own code or its TMA
    descriptor coming from HBM? Computed from the trial and the two calibration groups."""
    paths = [ROOT / f for f in (CODE_WARM_TRIAL, CALIB_ICACHE, CALIB_KERNEL_START)]
    if not all(exists(f) for f in paths):
        return []
    trial, icache, start = (read_json(f) for f in paths)
    rows = trial["rows"]
    warm = [r["queued_median_us"]["warm_self"] / r["queued_median_us"]["flush"] for r in rows]
    other = [r["queued_median_us"]["warm_other"] / r["queued_median_us"]["flush"] for r in rows]
    code = {c["case"]: c for c in icache["groups"]["icache"]["cases"]}["straight_4096"]
    landed = {(c["mode"], c["data"]): c["landed_ns_median"] for c in start["groups"]["kernel_start"]["cases"]}
    return [f"- Not the kernels' fixed cost (on an H100, {icache['environment']['date_utc'][:16]} UTC): their own code "
            f"or TMA descriptors coming back from HBM after the flush. Each case's fastest plan run once more on other "
            f"buffers between the flush and the timed launch ({CODE_WARM_TRIAL}, {len(rows)} cases, "
            f"{sum(bool(r['verify']['ok']) for r in rows)} verified): "
            f"median {statistics.median(warm):.3f}x the time ({min(warm):.3f}-{max(warm):.3f}x), another case's kernel "
            f"there {statistics.median(other):.3f}x. 64 KiB of straight-line code takes {code['cold']['ns_median']:.0f} "
            f"ns after the flush and {code['warm']['ns_median']:.0f} ns warm ({CALIB_ICACHE}); a block's first TMA tile "
            f"from a cold buffer lands {landed[('tma', 'cold')]:.0f} ns after the block's entry, a descriptor-less bulk "
            f"copy {landed[('bulk', 'cold')]:.0f} ns ({CALIB_KERNEL_START}): the cold HBM round trip, no descriptor "
            "fetch in front of it."]


# the calibration group stream_floor (fusesim/calibrate/cuda/calib.cu): a kernel that only streams each
# weight-streaming case's weights, in bench's harness; "" on the H200, "_h100" where an H100 ran it
STREAM_FLOOR = "results/h200/calibration_stream_floor{}.json"
# the whole run each GPU's stream is held against: the H200's kernels.md run, the H100's last run of the shortlist
STREAM_FLOOR_RUNS = {"": "results/h200/final11_paper_*.json", "_h100": "results/h200/final10lean_paper_*_h100.json"}
STREAM_FLOOR_HW = {"": "hw_configs/h200.yaml", "_h100": "hw_configs/h100_sxm.yaml"}  # each GPU's floor


def best_verified(pattern: str) -> dict[str, float]:
    """Each case's fastest verified plan (queued median, us) in the bench files matching `pattern`."""
    out: dict[str, float] = {}
    for path in glob_json(str(ROOT / pattern)):
        for c in read_json(path)["cases"]:
            if best := _best(c["plans"]):
                t = best["time"]["queued_median_us"]
                out[c["case"]] = min(out.get(c["case"], t), t)
    return out


def stream_floor_rows(tag: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """Per case of the stream_floor group measured with `tag`: the weights' bytes, the one-kernel and two-kernel (PDL)
    streams (us, the faster ring), and the GPU's best generated kernel of the case in STREAM_FLOOR_RUNS[tag]."""
    path = ROOT / STREAM_FLOOR.format(tag)
    if not exists(path):
        return None
    raw = read_json(path)
    ours = best_verified(STREAM_FLOOR_RUNS[tag])
    hw = load_hardware(ROOT / STREAM_FLOOR_HW[tag])
    floor_us = {ch.case_id: ch.floor_ns(hw) / 1e3 for wl in ("gemm_chains", "gated_ffn")
                for ch in load_workload(ROOT / "workloads" / f"paper_{wl}.yaml").cases}
    per: dict[str, dict[str, Any]] = {}
    for r in raw["groups"]["stream_floor"]["cases"]:
        row = per.setdefault(r["case"], {"case": r["case"], "bytes": r["b_bytes"] + r["d_bytes"], "one": math.inf,
                                         "two": math.inf, "two_act": {}, "ours": ours.get(r["case"]),
                                         "floor": floor_us[r["case"]]})
        if a := r.get("act_per_weight", 0):  # the stream with the activation re-read of a GEMM tile
            row["two_act"][a] = r["two_kernels_pdl_us_median"]
            continue
        row["one"] = min(row["one"], r["one_kernel_us_median"])
        row["two"] = min(row["two"], r["two_kernels_pdl_us_median"])
    return raw["environment"], list(per.values())


def stream_fit(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """Least-squares fixed cost (us) and rate (TB/s) of the one-kernel stream's time against its bytes."""
    xs, ys = [r["bytes"] / 1e6 for r in rows], [r["one"] for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, 1.0 / slope


def stream_floor_bullet() -> list[str]:
    """One line per GPU that ran the stream_floor group: what a pure stream of the weights costs in this harness, and
    how far above it each GPU's best generated kernels of the cases sit."""
    lines = []
    for tag, run in STREAM_FLOOR_RUNS.items():
        got = stream_floor_rows(tag)
        if got is None:
            continue
        env, rows = got
        fixed, tbps = stream_fit(rows)
        both = [r for r in rows if r["ours"]]
        extra = [r["ours"] - r["two"] for r in both]
        ratio = [r["ours"] / r["two"] for r in both]
        pdl = [r["two"] - r["one"] for r in rows]
        act = [r["two_act"][2] - r["two"] for r in rows if 2 in r["two_act"]]
        big = sorted((r for r in rows if r["floor"] > 10), key=lambda r: 1.3 * r["floor"] - r["two"])
        text = (
            f"- What streaming these cases' weights costs any kernel in this harness ({env['gpu']}, "
            f"{env['date_utc'][:16]} UTC, {STREAM_FLOOR.format(tag)}, calibration group stream_floor): one block per "
            "SM keeping 4 or 8 bulk copies of 16 KiB in flight over its share of B and D, no math, timed as bench "
            f"times ours. One kernel takes {fixed:.1f} us + bytes / {tbps:.2f} TB/s (least squares over "
            f"{len(rows)} cases: G5, G6, G8, S1-S8); B then D as two kernels with PDL, as the unfused chain runs, "
            f"{min(pdl):.2f}-{max(pdl):.2f} us more. The best generated kernels of that GPU's run ({run}) take "
            f"{min(extra):.1f}-{max(extra):.1f} us (median {statistics.median(extra):.1f}) more than the two-kernel "
            f"stream, {min(ratio):.2f}-{max(ratio):.2f}x its time: that is what the GEMMs add to the stream (first "
            "data needing both operands, the epilogues, the split-K sums, grids that leave SMs idle, among others), "
            "not the launches or HBM.")
        if act:
            text += (" Little of it is the activation re-read there: with 32 KiB of an L2-resident activation buffer "
                     "per 16 KiB of weights (a 128 x 64 tile's A: three times the bytes into each SM) the two-kernel "
                     f"stream (4 slots) takes {min(act):+.2f} to {max(act):+.2f} us longer than the faster pure one.")
        text += (f" Held against the 1.3x-of-the-floor target with that GPU's floor (`{STREAM_FLOOR_HW[tag]}`), the "
                 "two-kernel stream leaves " + ", ".join(f"{r['case']} {1.3 * r['floor'] - r['two']:.1f}" for r in big)
                 + " us for all that the GEMMs add (the cases with a floor above 10 us).")
        lines.append(text)
    if lines and not exists(ROOT / STREAM_FLOOR.format("")):
        lines[-1] += (" The same group on the H200 is prepared (`STEPS=stream scripts/device_h200_l2bound.sh`) and was "
                      "not run: no H200 was lent.")
    return lines


L2_LOOKAHEAD_TRIAL = "results/h200/l2_lookahead_trial_h100.json"


def lookahead_bullet(ws: set[str]) -> list[str]:
    """One line on the L2-lookahead trial (H100): gemm1 prefetching its next weight tiles into L2 before its wait;
    `ws`: the weight-streaming cases (floor over 10 us)."""
    if not exists(ROOT / L2_LOOKAHEAD_TRIAL):
        return []
    rows = read_json(ROOT / L2_LOOKAHEAD_TRIAL)["rows"]

    def span(variant: str, big: bool) -> str:
        r = [row["us"][variant] / row["us"]["off"] for row in rows if (row["case"] in ws) == big]
        return f"{min(r):.3f}-{max(r):.3f}x (median {statistics.median(r):.3f}x)"

    ok = sum(all(v["ok"] for v in r["verify"].values()) for r in rows)
    return [f"- Tried after this run, kept off (on an H100, {L2_LOOKAHEAD_TRIAL}, results/h200/l2_lookahead_trial.patch): "
            "gemm_wgmma's second GEMM also starting the weight tiles after its ring's first stages into L2 (TMA tensor "
            f"prefetch) before its griddepcontrol.wait, each case's fastest unfused wgmma plan ({len(rows)}, {ok} verified "
            f"in every form): 8 tiles ahead {span('lookahead 8', True)} the time on the weight-streaming cases, "
            f"{span('lookahead 8', False)} on the others; 32 tiles {span('lookahead 32', True)} and "
            f"{span('lookahead 32', False)}. HBM is not idle while the first GEMM drains."]


def repeat_run_bullet(prefix: str, rs: list[dict[str, Any]]) -> list[str]:
    """The same plans timed again on the same machine right after the run (REPEATS): how far each case's best moved."""
    if prefix not in REPEATS:
        return []
    again, how = REPEATS[prefix]
    files = [ROOT / "results" / "h200" / f"{again}{wl}.json" for wl in WORKLOADS]
    if not all(exists(f) for f in files):
        return []
    rs2, env = rows_of(files, ROOT / "hw_configs" / "h200.yaml")
    first = {r["case"]: r["ours"] for r in rs if r.get("ours")}
    moved = sorted((r["ours"] / first[r["case"]], r["case"]) for r in rs2 if r.get("ours") and r["case"] in first)
    ratios = [m for m, _ in moved]
    st = run_stats(rs2)
    odd = eager_outlier_rows([r for r in rs2 if r.get("ours")])
    return [f"- The same plans again on the same machine right after (results/h200/{again}*.json, {how}, "
            f"{env.get('date_utc', '?')[:16]} UTC, no Nsight Compute): each case's best {ratios[0]:.3f}x "
            f"({moved[0][1]}) to {ratios[-1]:.3f}x ({moved[-1][1]}) this run's, median {statistics.median(ratios):.3f}x; "
            f"{st['eager_x']:.2f}x over eager, {st['graphs_x']:.2f}x over graphs (geomean), {st['big_near']} of "
            f"{st['big']} within 1.3x of the floor, {st['small_fast']} of {st['small']} under 8 us, plans verified "
            f"{st['verified']}/{st['timed']}" + (f"; its PyTorch eager outliers: {', '.join(r['case'] for r in odd)}"
                                                 if odd else "") + "."]


def relaxed_arrive_bullet(prefix: str) -> list[str]:
    """The relaxed cluster barrier arrives (capability.FUSED_RELAXED_ARRIVE), kept after final4: in the kernels of
    the runs whose recorded "codegen" block has them, not in final4's (none for the runs before final4)."""
    if prefix in ("final3_paper_", FIRST_RUN):
        return []
    head = ("- Kept after final4 (in this run's kernels; measured on an H100)"
            if run_switches(ROOT / "results" / "h200" / f"{prefix}{WORKLOADS[0]}.json")["fused_relaxed_arrive"] else
            "- Kept after this run (not in its kernels; measured on an H100)")
    return [f"{head}: fused_wgmma's start and exit cluster barriers arrive",
            "  .relaxed (`capability.FUSED_RELAXED_ARRIVE`; the mbarrier-init fence and the receivers' acquire waits order",
            "  what they protect). With .release every thread's arrive waited out a cluster-scope release: the start",
            "  one before the first load (first data 0.26-0.43 us later), the exit one 0.32-0.64 us (per-block timelines,",
            "  results/h200/probe_release_arrive_h100.json vs probe_relaxed_arrive_h100.json). The two fastest cluster",
            "  plans of each small case (34) both ways, all verified: 0.886-0.974x the time, median 0.932x, 0.48-1.02 us",
            "  less (results/h200/relaxed_arrive_trial_h100.json); compute-sanitizer's memcheck, racecheck and synccheck",
            "  on every template family (78 runs) clean with it (results/h200/relaxed_sanitize_all.json, an H200)."]


def eager_outlier_rows(have: list[dict[str, Any]], ratio: float = 1.5) -> list[dict[str, Any]]:
    """The cases whose PyTorch eager time is over `ratio` times its CUDA-graphs time in the same run."""
    return [r for r in have if r["eager"] and r["graph"] and r["eager"] > ratio * r["graph"]]


def eager_outliers(have: list[dict[str, Any]], ratio: float = 1.5) -> list[str]:
    """A line on the cases whose PyTorch eager time is over `ratio` times its CUDA-graphs time in the same run
    (host gaps between eager's kernels, e.g. a cuDNN conv's setup, not GPU work) and the eager geomean without
    them, since they lift the eager figure."""
    odd = eager_outlier_rows(have, ratio)
    if not odd:
        return []
    rest = [r["eager"] / r["ours"] for r in have if r not in odd and r["eager"]]
    return [f"- PyTorch eager over {ratio}x its CUDA-graphs time in this run: "
            + ", ".join(f"{r['case']} ({r['eager']:.1f} vs {r['graph']:.1f} us)" for r in odd)
            + f"; without them the geomean over eager is {geomean(rest):.2f}x ({len(rest)} cases)."]


def graph_launch_bullet(have: list[dict[str, Any]]) -> list[str]:
    """Where the run timed each case's best plan also as a CUDA graph's replay (bench --graph-launch): the sync
    geomeans with our kernels launched as PyTorch's graphs are (one graph launch per call), and what the graph
    changes on the GPU side (queued). Nothing where no case has it."""
    g = [r for r in have if r.get("ours_graph_sync") and r.get("ours_graph")]
    if not g:
        return []
    return [f"- Our best plan of each case captured into a CUDA graph too (bench --graph-launch, {len(g)} cases), "
            f"sync: {geomean([r['eager_sync'] / r['ours_graph_sync'] for r in g]):.2f}x over PyTorch eager and "
            f"{geomean([r['graph_sync'] / r['ours_graph_sync'] for r in g]):.2f}x over PyTorch + CUDA graphs "
            f"(launched as above: {geomean([r['eager_sync'] / r['ours_sync'] for r in g]):.2f}x, "
            f"{geomean([r['graph_sync'] / r['ours_sync'] for r in g]):.2f}x); queued, the replay takes "
            f"{geomean([r['ours_graph'] / r['ours'] for r in g]):.3f}x the launch's time (geometric mean; "
            f"{_range([r['ours_graph'] / r['ours'] for r in g])}x per case)."]


def _range(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return f"{min(xs):.2f}-{max(xs):.2f}" if xs else "-"


def _f(x: Any, fmt: str = "{:.1f}") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def render(rs: list[dict[str, Any]], env: dict[str, Any], prefix: str = FIRST_RUN,
           before: list[dict[str, Any]] | None = None) -> str:
    """kernels.md's summary and per-case table of one run; `before`: the first final run's rows, a column to compare."""
    have = [r for r in rs if r.get("ours")]
    st = run_stats(rs)
    g_eager_s = geomean([r["eager_sync"] / r["ours_sync"] for r in have if r["eager_sync"]])
    g_graph_s = geomean([r["graph_sync"] / r["ours_sync"] for r in have if r["graph_sync"]])
    big = [r for r in have if r["floor"] > 10.0]
    small = [r for r in have if r["floor"] <= 10.0]
    t1 = one_element_us()
    h100_eager, h100_graphs, h100_n = h100_stream_speedups()
    bound_eager = geomean([r["eager"] / max(r["floor"], t1) for r in have]) if t1 else None
    first = before is None  # the first final run; a later one is compared with it per case
    lines = [
        "# Generated kernels vs PyTorch on the H200",
        "",
        f"Generated by `python3 benchmarks/kernels_report.py --prefix {prefix}` from results/h200/{prefix}*.json "
        "(one run); do not edit.",
        f"Measured on: {env.get('gpu')} ({env.get('sm_count')} SMs), driver {env.get('driver')}, "
        f"torch {env.get('torch')} (CUDA {env.get('torch_cuda')}), {env.get('nvcc')}, {env.get('date_utc')}"
        + (f", fusesim {str(env['fusesim_commit'])[:7]}" if env.get("fusesim_commit") else "")
        + (f"; {env['measured_on']}" if env.get("measured_on") else "") + ".",
        f"Command: `{env.get('device_command', env.get('command'))}` (one per workload; the whole run: "
        f"{WHOLE_RUN.get(prefix, WHOLE_RUN[FIRST_RUN])}, kernels prebuilt here by scripts/prebuild.py).",
        "",
        "Method: bf16 in/out, fp32 accumulate. Each plan is verified against a float32 PyTorch reference",
        "(fresh random inputs, output poisoned with NaN, rel. Frobenius error < 1e-2) before it is timed.",
        "Times are CUDA-event medians of 60 launches with L2 evicted before each (reading a 2.5x L2",
        "buffer). `queued`: the host enqueues while the GPU is still flushing, so the interval is GPU-side",
        "time (kernels + the gaps between them); `sync`: the GPU is idle when the launch is issued, so",
        "host launch cost is included. Ours = the fastest verified plan of the case among those the run",
        f"timed ({PLANS_NOTE.get(prefix, 'see the JSON: plans_source')}).",
        "PyTorch = the unfused chain (`act(A@B)@D`; `(silu(A@Bg)*(A@Bu))@D`; conv chains as",
        "`conv2d` channels_last through cuDNN) in the same run. Floor = max(FLOPs / 989 TFLOP/s,",
        "min bytes / 4.3 TB/s) (`Chain.floor_ns`); HBM GB/s = the chain's minimum bytes over our time",
        "(an effective rate, not a counter).",
        "",
        "## Summary",
        "",
        f"- Geomean speedup over PyTorch eager: **{st['eager_x']:.2f}x** (queued), {g_eager_s:.2f}x (sync). Target 3.1x.",
        f"- Geomean speedup over PyTorch + CUDA graphs: **{st['graphs_x']:.2f}x** (queued), {g_graph_s:.2f}x (sync). "
        "Target 2.5x.",
        *graph_launch_bullet(have),
        f"- Cases with an HBM floor above 10 us: {st['big']}; within 1.3x of the floor: {st['big_near']}.",
        f"- Other cases: {st['small']}; under 8 us: {st['small_fast']}.",
        *([f"- A bound on the targets: were every case as fast as max(its floor, {t1:.2f} us) -- {t1:.2f} us being the "
           "fastest one-element kernel after the flush on this H200 (results/h200/probe_small_and_dsm.json) -- "
           f"the geomeans would be {bound_eager:.2f}x over eager and "
           f"{geomean([r['graph'] / max(r['floor'], t1) for r in have]):.2f}x over graphs; the 3.1x target leaves "
           f"{bound_eager / 3.1 - 1:.0%} of slack on that bound "
           "(geometric mean over the cases)."] if t1 else []),
        f"- Cases with a verified kernel: {len(have)}/{len(rs)}; plans verified: {st['verified']}/{st['timed']}.",
        f"- Weight-streaming cases (floor > 10 us: {', '.join(r['case'] for r in big)}): ours / graphs "
        f"{_range([r['graph'] / r['ours'] for r in big])}x, {_range([100 * r['floor'] / r['ours'] for r in big])}% "
        "of the floor; best kernels by instruction: " + ", ".join(
            f"{i} {sum(1 for r in big if r['instruction'] == i)}" for i in ("mma_sync", "wgmma")) + ".",
        f"- Other cases: ours {_range([r['ours'] for r in small])} us, graphs "
        f"{_range([r['graph'] for r in small])} us, ours / graphs {_range([r['graph'] / r['ours'] for r in small])}x. "
        "After an L2 flush a one-element kernel already takes 3.3-4.2 us and one cuBLAS GEMM 5.7-6.4 us"
        " (results/h200/probe_small_and_dsm.json); a generated fused kernel of the tiniest chains is active"
        " on its SMs for about half of its ~8.5 us (results/h200/ncu_small_cases.txt): dependent load round"
        " trips on a cold L2 and the inter-cluster reduction, not FLOPs or bytes, decide these.",
        *eager_outliers(have),
        f"- Best strategy per case: {st['strategies']}.",
        "- Tried and measured slower (kept off): an L2 bulk prefetch of the first chunk's B and D at kernel",
        "  start (results/h200/prefetch_trial_*.json: the same 150 plans 5.8% slower, median); gemm0 of",
        "  gemm_wgmma prefetching gemm1's weights into L2 once its last weight tile is issued",
        "  (results/h200/d_prefetch_trial.json, 46 plans: 16 MiB 1.009x, 48 MiB 1.061x, median); both GEMMs",
        "  as one persistent cooperative kernel, gemm1's C' loads gated by a flag per gemm0 tile",
        "  (results/h200/persist_trial.json, 38 plans, all verified: 1.13x median, 0.96-1.30x). Both suggest",
        "  that HBM is already busy through gemm0's tail, so the kernel boundary is not where the time goes.",
        "- Tried after final4, kept off (on an H100): fused_wgmma's producer issuing job 0, or every stage the ring",
        "  starts with, inside the prologue as soon as the ring's barriers exist (job 0's loads went out 0.64-0.70 us",
        "  after the first consumer's entry, results/h200/probe_prologue_h100.json): the two fastest fused_wgmma plans",
        "  of each small case (34), all verified: 0.995x and 0.999x the time (median; results/h200/",
        "  early_issue_trial_h100.json). A cold kernel's first data waits on more than the issue's place.",
        "- The small cases' whole fused_wgmma hand-plan space (on an H100, after final5): every plan of",
        "  `handplans.fused_wgmma_candidates` for the 17 cases whose floor is under 10 us that no H200 run had timed",
        "  (352; scripts/freeze_sweep_plans.py), timed beside final5's fastest plan of each case in one run",
        "  (results/h200/sweep_small_paper_*_h100.json): all 369 verified; none beats its case's control but in S8",
        "  (20.03 against 20.64 us, 0.971x); the next best are 1.02x (G9) to 1.40x (C8) their control. The frozen",
        "  plans above already hold the fastest of that space; what the small cases lack is not a plan.",
        "- All 26 cases again with those plans and 119 more (on an H100, 2026-12-06 12:48 UTC, results/h200/",
        "  final6_paper_*_h100.json, 532/532 verified; results/h200/plans_final6_*.json): split-K through DSM variants",
        "  of final5's fastest unfused plan of each case and the sweep's two faster S8 plans. The best new plan",
        "  against the case's best old one in the same run: G7 0.960x, C8 0.957x, S1 0.978x, G4 0.981x, G5 0.984x,",
        "  S3 0.985x, G10 0.994x, the rest 1.00-1.65x (the S8 plans 1.06x: their 0.97x in the sweep was that run's",
        "  slow control); 1.47x over eager, 1.36x over graphs there (final3 on an H100: 1.42x, 1.32x). The same",
        "  plans again four hours later (results/h200/final6r_paper_*_h100.json, an H100): each of these ratios within",
        "  0.026 of the first run's, none across 1 (benchmarks/h100.md, \"Run to run\").",
        f"- Kept after final6 (measured on an H100{kept_in(prefix, 'gemm_split_shared_min_bytes')}): split-K GEMMs of gemm_wgmma whose fp32 partial has 32 KiB or more",
        "  sum their parts in slices (`capability.gemm_split_shared`): each part stores its partial into its own",
        "  workspace slab, the parts wait for each other, and each sums a 1/split share of the tile; before, every part",
        "  red.added into one tile and the last part converted it alone. Per-block timelines of gemm1's tail",
        "  (results/h200/probe_splitk_tail_h100.json, G5, G8, S1, S7: the partial out 0.9-2.5 us, the fence and ticket",
        "  1.3-2.2 us, the last part's convert 1.3-2.2 us). The 46 fastest split-K plans of final5 three ways, twice in",
        "  one run, all verified",
        "  (results/h200/split_shared_trial_run*_h100.json): the 23 it changes 0.933-1.029x the time (median 0.983x; the",
        "  weight-streaming cases' 18 plans 0.964-0.991x); slices for every split GEMM 0.908-1.051x, slower on most 64x64 tiles.",
        "  final6's 532 plans again with it (on an H100, 2026-12-06 20:24 UTC, results/h200/final7_paper_*_h100.json,",
        "  532/532 verified): the 42 plans it changes against the geometric mean of final6's two runs, net of the",
        "  unchanged plans' drift, 0.933x (G6) to 1.017x (G2) per case, the weight-streaming cases 0.961-0.999x; 1.48x",
        "  over eager, 1.38x over graphs there, S1 and S7 at 1.31x their floor (benchmarks/h100.md).",
        "- Deeper gemm_wgmma rings (on an H100, after final7; results/h200/deep_ring_trial_run*_h100.json): the two",
        "  fastest unfused wgmma plans per case whose GEMMs have more k tiles per part than ring stages (31), as run,",
        "  8 deep and as deep as the k tiles (up to 16), all 93 builds verified: not faster in general (weight-streaming",
        "  0.995-1.025x; G4, C3-C8 1.00-1.12x; gemm1 split through DSM clusters of 4 1.04-1.37x, fewer fit); S8's",
        "  fastest unfused plan 0.933x at 8 stages (18.4 us, below S8's best fused plan of final7, 19.65) and G6's",
        "  0.979x. Their per-GEMM variants, frozen untimed for final8 (results/h200/plans_final8_*.json), ran there",
        "  (on an H100, 2026-12-06 23:36 UTC, results/h200/final8_paper_*_h100.json, 555/555 verified): S8 19.65 ->",
        "  17.81 us, G6 17.41 -> 17.10 us, the other cases 0.97-1.02x final7; 1.38x over graphs.",
        f"- Kept after final8 (measured on an H100{kept_in(prefix, 'gemm_solo_secondary')}): gemm_wgmma's second GEMM asks for over half an SM's SMEM where two of",
        "  its blocks fit an SM but none fits beside the first GEMM's (`capability.gemm_solo_sm`): its early (PDL) blocks",
        "  went two to an SM on the SMs the first GEMM left free. S8's 8-deep gain was that (gemm1 one block per SM at",
        "  its own depth 0.882-0.926x, 8 deep 0.899-0.916x; results/h200/deep_ring_per_gemm_run*_h100.json); the 26",
        "  plans of final8's lists it changes, both ways, all verified: 0.864-0.999x the time, median 0.941x",
        "  (results/h200/solo_sm_trial_run*_h100.json); none was its case's fastest in final8 (1.08-1.56x it).",
        f"- Kept after final9 (measured on an H100{kept_in(prefix, 'gemm_split_lean')}): split-K in slices lean (`capability.GEMM_SPLIT_LEAN`): a part does",
        "  not store the share of its partial it sums itself, the parts' barrier is one atomicInc per part on a ticket",
        "  that counts epochs (no second atomic, no re-zeroing), and a part sums its share in one L2 round trip where 16",
        "  loads per thread allow. final8's 48 plans that sum in slices, both ways, twice, all verified: 0.935-1.001x",
        "  the time (median 0.987x; weight-streaming 0.983-1.001x, G4, G6, G9, S8 0.935-0.964x;",
        "  results/h200/split_lean_trial_run*_h100.json); per block (S1, G5, G8, S7) the last wgmma to the barrier",
        "  0.06-0.32 us shorter, the barrier 0.15-0.19 us (S1: 0.03 longer), the sum 0.09-0.44 us (medians; results/",
        "  h200/probe_splitk_tail_shared[_lean]_run2_h100.json); the shortlist's 27 such plans in whole runs with and",
        "  without it on one H100: 0.979-0.997x, each weight-streaming case's best 0.979-0.998x",
        "  (results/h200/final10lean_paper_*_h100.json against final10's).",
        "- Weight-streaming cases, unfused gemm_wgmma tile width / split-K / ring depth per GEMM and rings small",
        "  enough for gemm1 to start beside gemm0 (results/h200/wgmma_sweep_*.json, 144 plans, another run): no",
        "  variant beats the plan above by more than 0.7%. Nsight per-kernel durations of the best ones fit",
        "  8.1 us + bytes / 4.18 TB/s (gemm0) and 9.6 us + bytes / 3.83 TB/s (gemm1): the weights stream near",
        "  the HBM rate, the two kernels' fixed costs are what is left. A per-block timeline",
        "  (results/h200/probe_wgmma_timeline.json) splits them: 1.3-1.9 us to the first stage, gemm0's",
        "  last wgmma to block end (C' stores) 1.2-4.5 us, gemm1's wait for gemm0, and gemm1's split-K",
        "  red.add + ticket + convert 2-5 us. Staging gemm0's epilogue through SMEM for 16-byte stores",
        "  (results/h200/epilogue_trial_*.json, the 36 unfused wgmma plans) measured a median 0.997x: the",
        "  C' stores wait behind the weight stream at the tail, not on their instructions (not kept).",
        "- gemm1's split-K through DSM instead of the L2 workspace (the split parts of a tile as one cluster,",
        "  dsm_reduce_scatter of fp32 partials; results/h200/dsm_split_trial_*.json, 82 plans, another run):",
        "  faster on S1 only (0.92x, 54.9 -> 50.6 us), 0.99x on S3, S6, S7, 1.01-1.05x slower on the rest. The",
        "  H200 co-schedules at most 30 clusters of 4 (66 of 2) with one block per SM, so the tiles that fit",
        "  trade the workspace round trip for fewer blocks or narrower tiles (more SMEM fill per FLOP); the",
        "  time from the median block's last wgmma to the blocks' ends stays 1.5-4.4 us (a cluster waits for",
        "  its slowest part; results/h200/probe_wgmma_timeline_dsm_split.json).",
        "  The generator and simulator support it (`cluster_size` = split); the planner does not emit it.",
        "  On the ten small cases with an unfused wgmma plan (results/h200/dsm_split_small_*_h100.json, on an",
        "  H100, 40 plans): the best DSM variant 0.94-0.99x its control in eight, 1.01-1.06x in two, none faster",
        "  than a case's fused best.",
        "- Tried on an H100 (the device tool lent one), kept off: gemm_wgmma's A tiles loaded once per cluster",
        "  of 2 or 4 neighbouring column tiles by TMA multicast (results/h200/mcast_trial_h100.json, 44 plans,",
        "  all verified): 1.042x / 1.111x the time (median), where the simulator predicted 0.87-0.98x; the",
        "  re-read activations do not bind these kernels there. Bench's stream does not matter either: on a",
        "  side stream instead of the default one our best took 1.001x, eager 0.998x, graphs 1.000x",
        "  (results/h200/stream_trial_h100.json). On that H100 the same run's plans per strategy (the H200's",
        f"  picks) gave {h100_eager:.2f}x over eager and {h100_graphs:.2f}x over graphs (geomean, {h100_n} cases;",
        "  benchmarks/h100.md, which also scores the simulator's H100 file on what ran there).",
        *h100_one_run_bullet(first, prefix),
        *previous_whole_run_bullet(prefix),
        *repeat_run_bullet(prefix, rs),
        *(one_wave_bullet() if prefix == "final11_paper_" else []),
        *(l2_rate_bullet(prefix, {r["case"] for r in big}) if prefix == "final11_paper_" else []),
        *(deep_ring_bullet() if prefix == "final11_paper_" else []),
        *(cold_start_bullet() if prefix == "final11_paper_" else []),
        *(stream_floor_bullet() if prefix == "final11_paper_" else []),
        *(lookahead_bullet({r["case"] for r in big}) if prefix == "final11_paper_" else []),
        *(["- Kept (after this run, measured on an H100): the wgmma templates' implicit im2col A by TMA in im2col mode",
           "  (`capability.WGMMA_IM2COL_TMA`; one load per stage for the stage's filter tap, no producer copies): the 40",
           "  im2col plans of C5-C8 and the representatives took 0.82-1.01x the time, median 0.925x, all verified",
           "  (results/h200/im2col_tma_trial_h100.json); C1-C8 rerun with it on that H100: C5 7.62 us, C6 fused 9.41 us",
           "  (results/h200/tma_im2col_paper_conv_chains_h100.json, benchmarks/h100.md). No H200 was lent for it."]
          if first else [
           "- Kept after the first final run, and in this run's kernels (each section under \"Before this run\" below",
           "  measures one): the wgmma templates' implicit im2col, cp.async first, then A by TMA in im2col mode",
           "  (`capability.WGMMA_IM2COL_TMA`: the 40 im2col plans of C5-C8 and the representatives 0.82-1.01x the time,",
           "  median 0.925x, all verified, results/h200/im2col_tma_trial_h100.json on an H100); fused_wgmma's last E",
           "  sub-tile staged in the drained ring and stored as 16-byte row pieces; the reduce-scatter plans' exit",
           "  cluster barrier arriving once their slices have landed; fused_wgmma's producer warp waiting on the entry",
           "  cluster barrier before the first ring slot its consumers free after their own wait on it",
           "  (`capability.FUSED_PRODUCER_EARLY_WAIT`, for compute-sanitizer's racecheck, which deadlocked on the wait",
           "  after the loop: 35 plans both ways all verified, 0.989-1.013x the time, results/h200/",
           "  producer_wait_trial_h100.json on an H100).",
           ("- Kept after this run (not in its kernels; measured on an H100): fused_wgmma's GEMM1 k-tile loop unrolled"
            if prefix == "final3_paper_" else
            "- Kept after final3 (in this run's kernels; measured on an H100): fused_wgmma's GEMM1 k-tile loop unrolled"),
           "  (`capability.FUSED_GEMM1_UNROLL`): rolled, ptxas serialized the wgmmas of 5 of this run's 413 plans (note",
           "  C7520, \"WG.AR in divergent path\"; C1's dsm plans, G1's 64x128x64x256 one). The 45 fastest fused_wgmma",
           "  plans with block_n > 64 of the first final run both ways, all verified: 0.935-1.017x the time, median",
           "  1.000x, geomean 0.996x (C1 dsm 7.28 -> 6.88 us, G1 9.79 -> 9.15 us; results/h200/gemm1_unroll_trial_h100.json).",
           "  Bench records ptxas's performance notes per plan (`ptxas_perf_notes`).",
           *relaxed_arrive_bullet(prefix)]),
        "- Kept: GELU and SiLU in MUFU tanh forms (fusesim/codegen/include/tile.cuh; erff and an IEEE division",
        "  before, which an epilogue thread's 32-128 values wait on): the 13 gelu/silu cases' fastest plans",
        "  took 0.93-0.995x the time at the same verification error (results/h200/act_math_trial.json, another",
        "  run); this run's kernels use them.",
        "- Kept: fused_wgmma's fp32 E partial (the reduce-scatter's SMEM rows) with each row's 32-byte chunks",
        "  XOR-swizzled by row (fused_wgmma.cu.j2 `eswz`): a warp's fragment stores hit the same 8 banks before",
        f"  whenever a slice row was a multiple of 128 B. The 54 reduce-scatter plans of {'this' if first else 'the first final'} run, plain rows vs",
        "  swizzled in one device call (results/h200/ebuf_trial.json): all verified, median 0.975x the time",
        "  (0.91-1.02x; rows of 32, 64, 96 ... floats 0.967x median); G9's fastest plan 12.64 -> 12.16 us. A",
        "  rotation by row instead (results/h200/ebuf_trial_rotate.json) cost a modulo per store and lost up to",
        "  6% on 48-float rows. This run's kernels use the XOR swizzle.",
        "- Clocks in the JSON were read after the run (idle); the GPU was not reconfigured (boost 1980 MHz).",
        "",
        "## Per case",
        "",
        "| case | M x N x K x L | best | plan | ours us | eager us | graphs us | x eager | x graphs "
        "| TFLOP/s | HBM GB/s | floor us | % floor | unfused / smem / dsm us | verified |"
        + (" first final run: ours us, x eager |" if before else ""),
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|" + ("---|" if before else ""),
    ]
    was_of = {r["case"]: r for r in before or []}
    for r in rs:
        bs = " / ".join(_f(r["by_strategy"][s]) for s in ("unfused", "smem", "dsm"))
        if not r.get("ours"):
            lines.append(f"| {r['case']} | {r['mnkl']} | - | no verified plan | - | {_f(r['eager'])} | "
                         f"{_f(r['graph'])} | - | - | - | - | {_f(r['floor'])} | - | {bs} | {r['verified']} |")
            continue
        lines.append(
            f"| {r['case']} | {r['mnkl']} | {r['strategy']} | {r['plan']}, {r['threads']} thr, {r['instruction']} | "
            f"{_f(r['ours'])} | "
            f"{_f(r['eager'])} | {_f(r['graph'])} | {_f(r['eager'] / r['ours'], '{:.2f}')} | "
            f"{_f(r['graph'] / r['ours'], '{:.2f}')} | {_f(r['tflops'])} | {_f(r['hbm_gbps'], '{:.0f}')} | "
            f"{_f(r['floor'], '{:.2f}')} | {_f(100 * r['floor'] / r['ours'], '{:.0f}')} | {bs} | {r['verified']} |"
            + (f" {_was(was_of.get(r['case'], {}))} |" if before else ""))
    lines += ["", "% floor = floor / ours (100 = at the roofline floor).", ""]
    if before:
        st = run_stats(before)
        lines += [
            "## Before this run", "",
            f"The first final run (results/h200/{FIRST_RUN}*.json, `--prefix {FIRST_RUN}` renders it whole), "
            f"with the kernels of 2026-12-04: geomean **{st['eager_x']:.2f}x** PyTorch eager, "
            f"**{st['graphs_x']:.2f}x** CUDA graphs (queued); within 1.3x of the floor {st['big_near']} of {st['big']}; "
            f"under 8 us {st['small_fast']} of {st['small']}. "
            "Later runs timed some cases again with kernels it did not have:", ""]
    return "\n".join(lines)


def _was(b: dict[str, Any]) -> str:
    """A case's time and speedup over eager in an earlier run, '-' if it had no verified plan."""
    return f"{_f(b.get('ours'))}, {_f(b['eager'] / b['ours'], '{:.2f}')}" if b.get("ours") else "-"


def render_later(final: list[dict[str, Any]], runs: list[tuple[list[dict[str, Any]], dict[str, Any], tuple[str, ...]]],
                 level: str = "##") -> str:
    """Cases timed again after the final run in other runs (with kernels the final run did not have): each
    run's rows against the run before, and the summary geomeans with those cases taken from the latest run
    that timed them."""
    current = {r["case"]: r for r in final}
    out: list[str] = []
    for later, env, (pattern, what, how, script, *recheck) in runs:
        if not later:
            continue
        by_case = {r["case"]: r for r in later if r.get("ours")}
        lines = ["", f"{level} After the final run: {', '.join(by_case)} {what} (another run)", "",
                 f"`results/h200/{pattern}` ({env.get('gpu', '?')}, {env.get('date_utc', '?')}, `{script}`): {how}, "
                 "with PyTorch, in one run.", "",
                 "| case | best | plan | ours us | eager us | graphs us | x eager | x graphs | before: ours us, x eager "
                 "| % floor | unfused / smem / dsm us | verified |", "|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---|"]
        for r in later:
            if not r.get("ours"):
                continue
            b = current.get(r["case"], {})
            bs = " / ".join(_f(r["by_strategy"][s]) for s in ("unfused", "smem", "dsm"))
            was = _was(b)
            lines.append(f"| {r['case']} | {r['strategy']} | {r['plan']}, {r['threads']} thr, {r['instruction']} | "
                         f"{_f(r['ours'])} | {_f(r['eager'])} | {_f(r['graph'])} | {_f(r['eager'] / r['ours'], '{:.2f}')} | "
                         f"{_f(r['graph'] / r['ours'], '{:.2f}')} | {was} | {_f(100 * r['floor'] / r['ours'], '{:.0f}')} | "
                         f"{bs} | {r['verified']} |")
        current.update(by_case)
        mixed = [current[r["case"]] for r in final if current[r["case"]].get("ours")]
        st = run_stats(mixed)
        other_gpu = "" if "H200" in str(env.get("gpu", "")) else f", this one on an {env.get('gpu', '?')}"
        lines += ["", f"With these cases from this run and the rest as above (several runs{other_gpu}; the targets ask for "
                  "one on the H200): "
                  f"geomean **{st['eager_x']:.2f}x** PyTorch eager, **{st['graphs_x']:.2f}x** CUDA graphs (queued); "
                  f"cases with an HBM floor under 10 us: {st['small_fast']} of {st['small']} under 8 us.", ""]
        if recheck and (again := recheck_rows(recheck[0])):
            fixed = [{**r, "eager": again[r["case"]]["eager"], "graph": again[r["case"]]["graph"]}
                     if r["case"] in again else r for r in mixed]
            st_fixed = run_stats(fixed)
            odd = ", ".join(f"{c} eager {_f(by_case[c]['eager'])} us here, {_f(a['eager'])} in the recheck"
                            for c, a in again.items() if c in by_case and by_case[c]["eager"] > 2 * a["eager"])
            lines += [f"PyTorch's times of {', '.join(again)} were measured again on the same machine minutes later "
                      f"(`results/h200/{recheck[0]}`){': ' + odd if odd else ''}. With the recheck's PyTorch times "
                      f"for those cases: geomean **{st_fixed['eager_x']:.2f}x** "
                      f"eager, **{st_fixed['graphs_x']:.2f}x** graphs.", ""]
        out += lines
    return "\n".join(out)


def recheck_rows(name: str) -> dict[str, dict[str, Any]]:
    """Per case, the rows of a recheck run's file in results/h200/ (PyTorch measured again), {} if absent."""
    path = ROOT / "results" / "h200" / name
    return {r["case"]: r for r in rows_of([path], ROOT / "hw_configs" / "h200.yaml")[0]} if exists(path) else {}


def default_prefix(results: Path) -> str:
    """The newest whole run of LATER_RUNS whose three H200 files are committed (an H100's end in _h100 and do
    not count), else the first final run."""
    for run in LATER_RUNS:
        if all(exists(results / f"{run}{wl}.json") for wl in WORKLOADS):
            return run
    return FIRST_RUN


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(ROOT / "results" / "h200"))
    p.add_argument("--hw", default=str(ROOT / "hw_configs" / "h200.yaml"))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "kernels.md"))
    p.add_argument("--prefix", default=None,
                   help=f"default: the newest of {', '.join(LATER_RUNS)} whose H200 files exist, else {FIRST_RUN}")
    args = p.parse_args(argv)
    args.prefix = args.prefix or default_prefix(Path(args.results))
    rs, env = rows(Path(args.results), Path(args.hw), args.prefix)
    runs = []
    for spec in LATER:
        later_files = glob_json(Path(args.results) / spec[0])
        runs.append((*(rows_of(later_files, Path(args.hw)) if later_files else ([], {})), spec))
    if args.prefix == FIRST_RUN:
        text = render(rs, env, args.prefix) + render_later(rs, runs)
    else:  # a later full run: the first final run and the runs after it become its history
        first, _env = rows(Path(args.results), Path(args.hw), FIRST_RUN)
        text = render(rs, env, args.prefix, first) + render_later(first, runs, "###")
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
