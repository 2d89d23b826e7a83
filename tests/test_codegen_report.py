"""benchmarks/kernels.md is regenerated from the committed H200 JSON and matches it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fusesim.stored import exists, read_json

ROOT = Path(__file__).resolve().parents[1]


def _report_module():
    spec = importlib.util.spec_from_file_location("kernels_report", ROOT / "benchmarks" / "kernels_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.mark.skipif(not exists(ROOT / "results" / "h200" / "final_paper_gemm_chains.json"),
                    reason="no committed H200 bench results")
def test_kernels_md_is_up_to_date(tmp_path):
    mod = _report_module()
    out = tmp_path / "kernels.md"
    assert mod.main(["--out", str(out)]) == 0
    assert out.read_text() == (ROOT / "benchmarks" / "kernels.md").read_text()


def test_the_report_defaults_to_the_later_whole_run_once_its_h200_files_exist(tmp_path):
    mod = _report_module()
    for wl in mod.WORKLOADS:
        (tmp_path / f"final3_paper_{wl}_h100.json").write_text("{}")
    assert mod.default_prefix(tmp_path) == "final_paper_"  # an H100's run does not replace the H200's
    for wl in mod.WORKLOADS[:2]:
        (tmp_path / f"final3_paper_{wl}.json").write_text("{}")
    assert mod.default_prefix(tmp_path) == "final_paper_"  # nor does part of a run
    (tmp_path / f"final3_paper_{mod.WORKLOADS[2]}.json").write_text("{}")
    assert mod.default_prefix(tmp_path) == "final3_paper_"
    for wl in mod.WORKLOADS[:2]:
        (tmp_path / f"final4_paper_{wl}.json").write_text("{}")
    assert mod.default_prefix(tmp_path) == "final3_paper_"  # the newer run counts once whole
    (tmp_path / f"final4_paper_{mod.WORKLOADS[2]}.json").write_text("{}")
    assert mod.default_prefix(tmp_path) == "final4_paper_"


def test_best_rows_picks_the_fastest_verified_plan():
    from fusesim.commands.bench import best_rows

    case = {"case": "X", "plans": [
        {"strategy": "dsm", "verify": {"ok": True}, "time": {"queued_median_us": 5.0, "sync_median_us": 9.0}},
        {"strategy": "smem", "verify": {"ok": False}, "time": {"queued_median_us": 1.0, "sync_median_us": 2.0}},
        {"strategy": "unfused", "verify": {"ok": True}, "time": {"queued_median_us": 7.0, "sync_median_us": 8.0}},
    ], "pytorch": {"eager": {"queued_median_us": 20.0, "sync_median_us": 40.0},
                   "graph": {"queued_median_us": 10.0, "sync_median_us": 11.0}}}
    (row,) = best_rows([case])
    assert row["best_strategy"] == "dsm" and row["best_us"] == 5.0  # the unverified faster plan never wins
    assert row["by_strategy_us"] == {"dsm": 5.0, "unfused": 7.0}
    assert row["verified"] == "2/3"
    assert row["best_graph_us"] is None and row["best_graph_sync_us"] is None  # not run with --graph-launch
    case["plans"][0]["time_graph"] = {"queued_median_us": 4.5, "sync_median_us": 6.0}
    case["plans"][2]["time_graph"] = {"queued_median_us": 3.0, "sync_median_us": 4.0}
    (row,) = best_rows([case])
    assert row["best_us"] == 5.0 and (row["best_graph_us"], row["best_graph_sync_us"]) == (4.5, 6.0)  # the same plan's


def test_switches_lacking_reads_the_runs_codegen_blocks(tmp_path):
    """The H100 run's bullet names the switches its kernels lack from the two files' "codegen" blocks: a block
    without a later switch ran without it, a file without a block ran the fragment epilogue."""
    import json

    mod = _report_module()
    old, new, none = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "none.json"
    old.write_text(json.dumps({"codegen": {"gemm_staged_store": True, "gemm_staged_red": True, "convert_batch": 4,
                                           "fused_producer_early_wait": False}}))
    new.write_text(json.dumps({"codegen": {"gemm_staged_store": True, "gemm_staged_red": True, "convert_batch": 4,
                                           "fused_producer_early_wait": True, "fused_relaxed_arrive": True}}))
    none.write_text("{}")
    assert mod.switches_lacking(old, new) == [mod.SWITCH_WHAT["fused_producer_early_wait"],
                                              mod.SWITCH_WHAT["fused_relaxed_arrive"]]
    assert mod.switches_lacking(new, new) == []
    assert mod.switches_lacking(none, old)[:3] == ["gemm_staged_store", "gemm_staged_red", "convert_batch"]


def _shortlist_module():
    spec = importlib.util.spec_from_file_location("shortlist_plans", ROOT / "scripts" / "shortlist_plans.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_a_shortlist_keeps_the_plans_near_the_best_and_each_strategys_best():
    mod = _shortlist_module()
    rows = [(10.0, "a", "dsm"), (10.9, "b", "unfused"), (11.2, "c", "unfused"), (30.0, "d", "smem"),
            (31.0, "e", "smem")]
    assert mod.shortlist(rows, 1.10, per_strategy=False) == {"a", "b"}
    assert mod.shortlist(rows, 1.10, per_strategy=True) == {"a", "b", "d"}
    assert mod.shortlist([], 1.10, per_strategy=True) == set()


@pytest.mark.skipif(not exists(ROOT / "results" / "h200" / "plans_short10_gemm_chains.json"),
                    reason="no committed shortlist")
def test_the_committed_shortlist_holds_each_cases_best_plan_of_the_runs_it_was_cut_by():

    mod = _shortlist_module()
    for wl in mod.WORKLOADS:
        short = read_json(ROOT / "results" / "h200" / f"plans_short10_{wl}.json")
        frozen = read_json(ROOT / "results" / "h200" / f"plans_final8_{wl}.json")
        for run in (f"final9_paper_{wl}_h100.json", f"final5_paper_{wl}.json"):
            for case, rows in mod._verified(ROOT / "results" / "h200" / run).items():
                listed = [mod._key(e["plan"]) for e in short[case]]
                assert min(rows)[1] in listed, (run, case)
                assert len(listed) == len(set(listed)) < len(frozen[case])


def test_stream_fit_recovers_a_fixed_cost_and_a_rate():
    mod = _report_module()
    rows = [{"bytes": b, "one": 4.0 + b / 3.2e6} for b in (16e6, 70e6, 150e6, 270e6)]  # 4 us + bytes / 3.2 TB/s
    fixed, tbps = mod.stream_fit(rows)
    assert fixed == pytest.approx(4.0)
    assert tbps == pytest.approx(3.2)


@pytest.mark.skipif(not exists(ROOT / "results" / "h200" / "calibration_stream_floor_h100.json"),
                    reason="no committed stream_floor measurement")
def test_stream_floor_rows_keep_the_activation_variants_out_of_the_pure_stream():
    mod = _report_module()
    _env, rows = mod.stream_floor_rows("_h100")
    raw = read_json(ROOT / "results" / "h200" / "calibration_stream_floor_h100.json")["groups"]["stream_floor"]
    for row in rows:
        pure = [r for r in raw["cases"] if r["case"] == row["case"] and r["act_per_weight"] == 0]
        assert row["two"] == min(r["two_kernels_pdl_us_median"] for r in pure)
        assert set(row["two_act"]) == {1, 2}
        assert row["ours"] is not None and row["ours"] > row["two"]


def test_graph_launch_bullet_compares_our_graphs_with_pytorchs_only_where_timed():
    mod = _report_module()
    base = {"eager_sync": 40.0, "graph_sync": 12.0, "ours": 5.0, "ours_sync": 15.0}
    assert mod.graph_launch_bullet([dict(base)]) == []  # a run without --graph-launch: no bullet
    rows = [{**base, "ours_graph": 5.0, "ours_graph_sync": 8.0}, {**base, "ours_graph": 4.0, "ours_graph_sync": 6.0},
            dict(base)]
    (line,) = mod.graph_launch_bullet(rows)
    assert "2 cases" in line  # the case without a graph time stays out of every mean
    g = (12.0 / 8.0 * 12.0 / 6.0) ** 0.5
    assert f"{g:.2f}x over PyTorch + CUDA graphs" in line and "(launched as above: 2.67x, 0.80x)" in line
    assert "0.894x the launch's time" in line and "0.80-1.00x per case" in line
