from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fusesim.capability import codegen_switches
from fusesim.hardware import load_hardware
from fusesim.planner import plan_case
from fusesim.sim import simulate
from fusesim.stored import exists, glob_json, read_json
from fusesim.validate import Row, join, pearson, spearman, summarize
from fusesim.workload import load_workload

ROOT = Path(__file__).resolve().parents[1]
HW = load_hardware(ROOT / "hw_configs" / "h200.yaml")


def test_rank_statistics_by_hand() -> None:
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [10, 20, 15, 40]) == pytest.approx(0.8)


def _synthetic_measurements(tmp_path: Path, scale: dict[str, float]) -> tuple[Path, dict[str, float]]:
    """Bench-shaped JSON whose 'measured' times are the simulation scaled per strategy (a test of the
    join and the statistics, not a measurement)."""
    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G4"])[0]
    res = plan_case(chain, HW, strategies=("unfused", "smem", "dsm"), top_k=1)
    recs, sims = [], {}
    for strategy, scored in res.plans.items():
        plan = scored[0].plan
        t = simulate(plan, HW).time_ns / 1e3
        sims[strategy] = t
        recs.append({"strategy": strategy, "summary": strategy, "plan": plan.to_dict(), "verify": {"ok": True},
                     "time": {"queued_median_us": t * scale[strategy]}, "ncu": {"dram__bytes_read.sum": 1.0e7}})
    recs.append({"strategy": "dsm", "plan": recs[-1]["plan"], "verify": {"ok": False}, "time": {"queued_median_us": 1}})
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"what": "synthetic", "codegen": codegen_switches(), "cases": [{"case": "G4", "plans": recs,
                                                                "pytorch": {"graph": {"queued_median_us": 9.0}}}]}))
    return path, sims


def test_join_and_summary(tmp_path: Path) -> None:
    path, sims = _synthetic_measurements(tmp_path, {"unfused": 1.25, "smem": 1.0, "dsm": 0.8})
    rows = join(tmp_path, HW)
    assert {r.label for r in rows} == set(sims)
    for r in rows:
        assert r.predicted_us == pytest.approx(sims[r.label])
    s = summarize(rows)
    expect = sum(abs(1 / f - 1) for f in (1.25, 1.0, 0.8)) / 3
    assert s["mape"] == pytest.approx(expect)
    assert s["counters"]["dram"]["kernels"] == 3
    assert s["fitted_parameters"] == []


def test_dram_read_and_write_are_counters_of_their_own(tmp_path: Path) -> None:
    """DRAM read and write bytes are compared apart (their sum is the `dram` counter); a kernel that
    records no write bytes is not counted for writes."""
    path, _sims = _synthetic_measurements(tmp_path, {"unfused": 1.0, "smem": 1.0, "dsm": 1.0})
    doc = read_json(path)
    doc["cases"][0]["plans"][0]["ncu"]["dram__bytes_write.sum"] = 2.0e6
    path.write_text(json.dumps(doc))
    rows = join(path, HW)
    first = next(r for r in rows if r.label == doc["cases"][0]["plans"][0]["summary"])
    assert first.measured_bytes["dram_read"] == 1.0e7 and first.measured_bytes["dram_write"] == 2.0e6
    assert first.measured_bytes["dram"] == 1.2e7
    assert first.predicted_bytes["dram"] == first.predicted_bytes["dram_read"] + first.predicted_bytes["dram_write"]
    s = summarize(rows)
    assert s["counters"]["dram_read"]["kernels"] == 3 and s["counters"]["dram_write"]["kernels"] == 1


def test_validate_cli_writes_csv_and_plot(tmp_path: Path) -> None:
    _synthetic_measurements(tmp_path, {"unfused": 1.0, "smem": 1.0, "dsm": 1.0})
    csv_path, png = tmp_path / "v.csv", tmp_path / "v.png"
    r = subprocess.run([sys.executable, "-m", "fusesim", "validate", "--measured", str(tmp_path), "--hw",
                        str(ROOT / "hw_configs" / "h200.yaml"), "--csv", str(csv_path), "--plot", str(png),
                        "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["summary"]["mape"] == pytest.approx(0.0, abs=1e-9)
    assert len(csv_path.read_text().splitlines()) == 1 + 3
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_validate_says_when_the_kernels_ran_on_several_gpus(tmp_path: Path) -> None:
    """results/h200/ holds H100 runs (*_h100*) beside the H200's; validate scores all of them on one file,
    so it names the GPUs and how many kernels each ran."""
    for name, gpu in (("a.json", "NVIDIA H200"), ("b.json", "NVIDIA H100 80GB HBM3")):
        doc = read_json(ROOT / "results" / "h200" / "final11_paper_gemm_chains.json")
        doc["cases"] = [c for c in doc["cases"] if c["case"] == "G1"]
        doc["env"]["gpu"] = gpu
        (tmp_path / name).write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "fusesim", "validate", "--measured", str(tmp_path), "--hw", "h200"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    note = [line for line in r.stdout.splitlines() if line.startswith("note:")]
    assert len(note) == 1 and "2 GPUs" in note[0] and "NVIDIA H100 80GB HBM3 4" in note[0], note
    one = subprocess.run([sys.executable, "-m", "fusesim", "validate", "--measured", str(tmp_path / "a.json"),
                          "--hw", "h200"], capture_output=True, text=True, cwd=ROOT)
    assert one.returncode == 0 and "note:" not in one.stdout
    other = subprocess.run([sys.executable, "-m", "fusesim", "validate", "--measured", str(tmp_path / "b.json"),
                            "--hw", "h200"], capture_output=True, text=True, cwd=ROOT)
    assert other.returncode == 0 and "note: the kernels were measured on NVIDIA H100 80GB HBM3, scored on h200" in other.stdout


def test_validate_missing_folder_exit_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "fusesim", "validate", "--measured", str(tmp_path / "none"),
                        "--hw", "h200"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_fit_and_score_halves_never_mix() -> None:
    from fusesim.validate import FIT, SCORE, best_kernel_start_us, case_split, split_rows

    assert [case_split(c) for c in ("C1", "G3", "S7", "G10", "S8", "C2")] == [FIT, FIT, FIT, SCORE, SCORE, SCORE]
    rows = [Row("G1", "a", 12.0, 8.0, kernels=2), Row("G2", "b", 7.0, 5.0, kernels=1)]
    halves = split_rows(rows)
    assert [r.case for r in halves[FIT]] == ["G1"] and [r.case for r in halves[SCORE]] == ["G2"]
    # a per-kernel start cost shifts each prediction by kernels x value: 2 us makes G1 exact
    start, mape = best_kernel_start_us(halves[FIT], upper_us=3.5)
    assert start == pytest.approx(2.0) and mape == pytest.approx(0.0, abs=1e-9)
    assert best_kernel_start_us(halves[FIT], upper_us=1.0)[0] == pytest.approx(1.0)  # bounded


def test_rows_with_a_time_block_and_failed_verification(tmp_path: Path) -> None:
    """wgmma_check's shape: {rows: [{case, plan, verify, time: {queued_median_us}}]}; unverified rows
    are not measurements."""
    from fusesim.report.measured import load_measured

    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G4"])[0]
    plan = plan_case(chain, HW, strategies=("unfused",), top_k=1).plans["unfused"][0].plan.to_dict()
    rows = [{"case": "G4", "summary": "ok", "plan": plan, "verify": {"ok": True}, "time": {"queued_median_us": 20.0}},
            {"case": "G4", "summary": "bad", "plan": plan, "verify": {"ok": False}, "time": {"queued_median_us": 1.0}}]
    path = tmp_path / "wgmma.json"
    path.write_text(json.dumps({"rows": rows}))
    got = load_measured(path).items
    assert [(m.plan, m.time_us) for m in got] == [("ok", 20.0)] and got[0].plan_dict is not None


def test_recorded_code_bytes_join_the_predicted_dram_reads(tmp_path: Path) -> None:
    """bench's `binary` block (the kernels' code + parameter bank): fetched from HBM after the flush,
    so the join adds it to the simulated DRAM reads; a plan without the block predicts without it."""
    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G4"])[0]
    plan = plan_case(chain, HW, strategies=("dsm",), top_k=1).plans["dsm"][0].plan.to_dict()
    recs = [{"strategy": "dsm", "summary": s, "plan": plan, "verify": {"ok": True}, "time": {"queued_median_us": 30.0},
             "ncu": {"dram__bytes_read.sum": 1.0e7}, **extra}
            for s, extra in (("with", {"binary": {"text_bytes": 30000, "const_bytes": 600, "cubins": 1}}), ("without", {}))]
    (tmp_path / "b.json").write_text(json.dumps({"cases": [{"case": "G4", "plans": recs}]}))
    rows = {r.label: r for r in join(tmp_path, HW)}
    assert rows["with"].predicted_bytes["dram"] - rows["without"].predicted_bytes["dram"] == 30600
    assert rows["with"].predicted_us == rows["without"].predicted_us


def test_exact_simulated_tie_goes_to_the_deeper_ring() -> None:
    """On an exact tie of simulated time the deeper ring is the predicted best (the planner's order,
    planner.search.simulated_rank); a plan simulated even slightly faster still wins."""
    from fusesim.plan import ClusterShape
    from fusesim.sim import examples as ex

    ch = ex.chain("g", 128, 256, 512, 256)
    shallow, deep = (ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 32, 64, 64, n_split=1, stages=s, instruction="mma_sync")
                     for s in (3, 4))
    from fusesim.planner.search import simulated_rank

    assert simulated_rank(11000.0, deep) < simulated_rank(11000.0, shallow) < simulated_rank(11000.01, deep)
    rows = [Row("G1", "shallow", 10.0, 11.0, plan=shallow), Row("G1", "deep", 11.0, 11.0, plan=deep)]
    assert summarize(rows)["best"][0]["predicted_best"] == "deep"
    rows[0].predicted_us = 10.999
    assert summarize(rows)["best"][0]["predicted_best"] == "shallow"


@pytest.mark.skipif(not exists(ROOT / "results" / "h200" / "final_paper_gemm_chains.json"),
                    reason="no committed final run")
def test_committed_final_run_meets_the_validation_targets() -> None:
    """Issue 6's targets on the committed final run (the first final run's 438 kernels, 2026-12-04), so a
    simulator change that loses them fails here: MAPE <= 10%, Pearson >= 0.95, within-case Spearman
    >= 0.9, the predicted best within 3% of the measured best for >= 90% of the cases, and every
    fused kernel's DRAM and DSM bytes within 5% of Nsight Compute."""
    hw = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
    rows = join([str(p) for p in glob_json(ROOT / "results" / "h200" / "final_paper_*.json")], hw)
    s = summarize(rows)
    assert s["kernels"] == 438 and s["cases_with_ranking"] == 26
    assert s["mape"] <= 0.10 and s["pearson"] >= 0.95 and s["spearman_within_case_mean"] >= 0.9
    assert s["best_within_3pct"] >= 0.9, [b["case"] for b in s["best"] if b["loss"] > 0.03]
    for counter in ("dram", "dsm"):
        fused = [r for r in rows if r.plan is not None and r.plan.strategy != "unfused" and r.measured_bytes.get(counter)]
        assert fused
        worst = max(abs(r.predicted_bytes[counter] / r.measured_bytes[counter] - 1) for r in fused)
        assert worst <= 0.05, (counter, worst)


def test_fusion_verdict_on_the_committed_final_run() -> None:
    """Should it be fused? Per paper case, the plans `fusesim simulate` runs per strategy (ranked by
    simulation) give the same answer as the final run's fastest measured plans on at least 25 of 26
    cases (25 today, benchmarks/verdict.md: C5 misses, 1.01x simulated against 0.94x, its unfused plan
    simulating slow by the fixed costs around its kernels, benchmarks/validation.md), and the fused / unfused speedup
    within 25% on average, and on all 22 other cases of the verdict set timed out of sample; C5-C8 are measured in the run that
    timed the wgmma im2col kernels the planner now picks for them (the final run predates them).
    A tie (measured within VERDICT_TIE of 1) accepts either answer, nothing else does."""
    from fusesim.validate import VERDICT_TIE, Verdict, fusion_verdicts

    hw = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
    files = [str(p) for p in glob_json(ROOT / "results" / "h200" / "final_paper_*.json")]
    im2col = [str(p) for p in glob_json(ROOT / "results" / "h200" / "wgmma_im2col_paper_*.json")]
    later = {v.case: v for v in fusion_verdicts(im2col, hw, rank="simulated")}
    assert sorted(later) == ["C5", "C6", "C7", "C8"]
    verdicts = [later.get(v.case, v) for v in fusion_verdicts(files, hw, rank="simulated")]
    assert len(verdicts) == 26 and all(v.agrees is not None for v in verdicts)
    assert sum(v.agrees for v in verdicts) >= 25, [v.case for v in verdicts if not v.agrees]
    errs = [abs(v.simulated_speedup / v.measured_speedup - 1) for v in verdicts]
    assert sum(errs) / len(errs) <= 0.25
    # out of sample: the verdict set, frozen before it was timed; it predates the wgmma im2col kernels, so
    # C5-C8 there hold mma.sync plans only, which `fusesim simulate` no longer picks
    frozen = [str(p) for p in glob_json(ROOT / "results" / "h200" / "verdict_paper_*.json")]
    held = [v for v in fusion_verdicts(frozen, hw, rank="simulated") if v.case not in later]
    assert len(held) == 22 and all(v.agrees for v in held), [v.case for v in held if not v.agrees]
    # the rule itself: fused 10% faster measured, simulated 10% slower -> disagree; a 2% measured gap is a tie
    v = Verdict("x", {"unfused": 11.0, "dsm": 10.0}, {"unfused": 10.0, "dsm": 11.0}, {})
    assert v.measured_speedup == pytest.approx(1.1) and v.agrees is False
    tie = Verdict("x", {"unfused": 10.0, "smem": 10.0 / (1 + VERDICT_TIE / 2)}, {"unfused": 10.0, "smem": 11.0}, {})
    assert tie.agrees is True
    assert Verdict("x", {"unfused": 10.0}, {"unfused": 10.0}, {}).agrees is None
