"""Sweep machinery: specs, grids, derive rules, the resumable CSV store, executors, error rows.

The evaluation is injected (`bound_case`, or the fakes below) so these tests exercise the
machinery in milliseconds, independent of the planner and simulator.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fusesim.errors import InputError
from fusesim.stored import read_json
from fusesim.sweep import (
    NONDETERMINISTIC_COLUMNS,
    load_spec,
    read_rows,
    run_sweep,
    spec_from_args,
    spec_from_dict,
)
from fusesim.sweep.derive import cluster_tables, gpc_layout
from fusesim.sweep.evaluate import bound_case
from fusesim.sweep.spec import Task
from fusesim.sweep.store import ResultStore
from fusesim.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]
BOUND = "fusesim.sweep.evaluate:bound_case"


def failing_on_g2(task: Task) -> list[dict]:
    """Deterministic failure for one case: the sweep must record it and go on."""
    if task.case_id == "G2":
        raise ValueError("synthetic failure\nwith a newline")
    return bound_case(task)


def small_spec(**extra):
    raw = {"name": "t-small", "hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "cases": ["G1", "G2", "G4"],
           "vary": {"hbm_bandwidth_gbps": [3350, 6700]}, "evaluator": BOUND}
    raw.update(extra)
    return spec_from_dict(raw, "t.yaml")


def strip(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in NONDETERMINISTIC_COLUMNS} for r in rows),
                  key=lambda r: r["point_id"])


# ---- specs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", sorted((ROOT / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_specs_build_valid_grids(spec: Path) -> None:
    s = load_spec(spec)
    machines = s.validate_hardware()
    assert len(machines) >= 3
    tasks, total = s.tasks()
    assert total == len(machines) * len(s.chains()) * len(s.strategies)
    assert sum(len(t.strategies) for t in tasks) == total
    ids = [p for t in tasks for p in t.point_ids]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("raw, field", [
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "bogus": 1}, "bogus"),
    ({"workloads": ["paper_gemm_chains"]}, "hw"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "vary": {"nope.x": [1]}}, "vary.nope.x"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "vary": {"l2_bytes": []}}, "vary.l2_bytes"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "vary": {"l2_bytes": [1, 1]}}, "vary.l2_bytes"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "strategies": ["fast"]}, "strategies"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "scale": {"l2_bytes": [0]}}, "scale.l2_bytes"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "scale": {"name": [2]}}, "scale.name"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "derive": ["magic"]}, "derive"),
    ({"hw": "h100_sxm", "workloads": ["nope.yaml"]}, "workloads"),
    ({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "name": "a b"}, "name"),
])
def test_bad_spec_names_file_and_field(raw: dict, field: str) -> None:
    with pytest.raises(InputError) as ei:
        spec_from_dict(raw, "bad.yaml").tasks()
    assert ei.value.file == "bad.yaml"
    assert ei.value.field == field


def test_invalid_grid_point_fails_before_running_with_a_hint() -> None:
    spec = spec_from_args(["h100_sxm"], ["max_cluster_size=16,32"], [], ["paper_gemm_chains"])
    with pytest.raises(InputError) as ei:
        spec.tasks()
    msg = ei.value.line()
    assert "max_cluster_size=32" in msg and "derive" in msg


def test_cli_bad_spec_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "vary": {"l2": [1]}}))
    r = subprocess.run([sys.executable, "-m", "fusesim", "sweep", str(bad), "--out", str(tmp_path / "r.csv")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bad.yaml" in r.stderr and "vary.l2" in r.stderr


# ---- derive rules -----------------------------------------------------------------------------
def test_cluster_tables_extend_and_truncate_with_provenance() -> None:
    raw = read_mapping(ROOT / "hw_configs/h100_sxm.yaml")
    up = cluster_tables({**raw, "max_cluster_size": 32})
    assert sorted(up["dsm_push_bandwidth_gbps_per_sm"]) == [2, 4, 8, 16, 32]
    assert up["dsm_push_bandwidth_gbps_per_sm"][32] == raw["dsm_push_bandwidth_gbps_per_sm"][16]
    assert up["dsm_latency_ns"][32] > raw["dsm_latency_ns"][16]
    assert "sweep-derived (cluster_tables)" in up["provenance"]["dsm_latency_ns"]
    down = cluster_tables({**raw, "max_cluster_size": 4})
    assert sorted(down["cluster_barrier_ns"]) == [2, 4]
    assert down["portable_cluster_size"] == 4


def test_gpc_layout_keeps_sm_count_and_fits_the_cluster() -> None:
    raw = read_mapping(ROOT / "hw_configs/h100_sxm.yaml")
    out = gpc_layout({**raw, "max_cluster_size": 32})
    assert sum(out["gpc_sm_counts"]) == raw["sm_count"] and max(out["gpc_sm_counts"]) >= 32
    assert gpc_layout(dict(raw))["gpc_sm_counts"] == raw["gpc_sm_counts"]  # untouched when not needed


def test_cluster_32_on_h100_with_derive_rules_is_valid() -> None:
    spec = spec_from_args(["h100_sxm"], ["max_cluster_size=16,32"], [], ["paper_gemm_chains"],
                          derive=["cluster_tables", "gpc_layout"])
    hws = [hw for _, hw in spec.validate_hardware()]
    assert [h.max_cluster_size for h in hws] == [16, 32]
    assert hws[1].max_active_clusters(32) >= 1


def test_scale_multiplies_whole_tables_together() -> None:
    spec = spec_from_args(["h200"], [], ["dsm_push_bandwidth_gbps_per_sm+dsm_pull_bandwidth_gbps_per_sm=1,2"],
                          ["paper_gemm_chains"])
    (_, h1), (_, h2) = spec.validate_hardware()
    assert h2.dsm_push_bandwidth_gbps_per_sm[8] == 2 * h1.dsm_push_bandwidth_gbps_per_sm[8]
    assert h2.dsm_pull_bandwidth_gbps_per_sm[2] == 2 * h1.dsm_pull_bandwidth_gbps_per_sm[2]


# ---- running, resuming, errors ----------------------------------------------------------------
def test_run_writes_every_row_then_resume_skips_all(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    s1 = run_sweep(small_spec(), out, progress=False)
    assert s1.total_rows == 2 * 3 * 3 and s1.computed == 18 and s1.ok == 18
    header, rows = read_rows(out)
    assert len(rows) == 18 and len({r["point_id"] for r in rows}) == 18
    assert "hbm_bandwidth_gbps" in header and {r["hbm_bandwidth_gbps"] for r in rows} == {3350, 6700}
    assert all(r["sweep"] == "t-small" for r in rows)
    s2 = run_sweep(small_spec(), out, progress=False)
    assert s2.computed == 0 and s2.already_done == 18
    assert len(read_rows(out)[1]) == 18


def test_partial_run_then_completion_equals_one_run(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    run_sweep(small_spec(), a, progress=False, limit=2)
    assert len(read_rows(a)[1]) == 6
    run_sweep(small_spec(), a, progress=False)
    run_sweep(small_spec(), b, progress=False)
    assert strip(read_rows(a)[1]) == strip(read_rows(b)[1])


def test_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    s = run_sweep(small_spec(evaluator="test_sweep:failing_on_g2"), out, progress=False)
    rows = read_rows(out)[1]
    errs = [r for r in rows if r["status"] == "error"]
    assert s.errors == len(errs) == 6 and {r["case"] for r in errs} == {"G2"}
    assert all("synthetic failure with a newline" in r["error"] for r in errs)
    assert sum(r["status"] == "ok" for r in rows) == 12
    # errors count as done, unless retried
    assert run_sweep(small_spec(evaluator="test_sweep:failing_on_g2"), out, progress=False).computed == 0
    s3 = run_sweep(small_spec(evaluator="test_sweep:failing_on_g2"), out, progress=False, retry_errors=True)
    assert s3.computed == 6 and len(read_rows(out)[1]) == 18


def test_torn_last_line_is_dropped_and_recomputed(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    run_sweep(small_spec(), out, progress=False)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a write cut by kill -9
    s = run_sweep(small_spec(), out, progress=False)
    assert s.dropped_torn == 1 and s.computed == 1
    rows = read_rows(out)[1]
    assert len(rows) == 18 and len({r["point_id"] for r in rows}) == 18


def test_other_sweeps_file_is_refused_not_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    run_sweep(small_spec(), out, progress=False)
    before = out.read_bytes()
    other = small_spec(vary={"l2_bytes": [52428800, 104857600]})
    with pytest.raises(InputError, match="other columns"):
        run_sweep(other, out, progress=False)
    assert out.read_bytes() == before


def test_second_writer_is_locked_out(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    spec = small_spec()
    from fusesim.sweep import columns_for

    with ResultStore(out, columns_for(spec)) as st:
        st.open()
        with pytest.raises(InputError, match="another sweep"):
            run_sweep(spec, out, progress=False)


def test_two_workers_give_the_same_rows(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    run_sweep(small_spec(), a, progress=False, jobs=1)
    run_sweep(small_spec(), b, progress=False, jobs=2)
    assert strip(read_rows(a)[1]) == strip(read_rows(b)[1])


def test_numeric_looking_ids_stay_text(tmp_path: Path) -> None:
    from fusesim.sweep.store import ResultStore

    cols = ["point_id", "hw_base", "workload", "case", "strategy", "status", "error", "pred_time_us"]
    with ResultStore(tmp_path / "r.csv", cols) as st:
        st.open()
        st.append([{"point_id": "4155e12345678901", "case": "1", "strategy": "dsm", "status": "ok",
                    "pred_time_us": 2.5}])
    (row,) = read_rows(tmp_path / "r.csv")[1]
    assert row["point_id"] == "4155e12345678901" and row["case"] == "1" and row["pred_time_us"] == 2.5
    assert row["error"] is None


def test_parquet_copy_matches_csv(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "r.csv"
    s = run_sweep(small_spec(), out, progress=False)
    assert s.parquet and Path(s.parquet).is_file()
    t = pq.read_table(s.parquet)
    assert t.num_rows == 18
    assert t.schema.field("hbm_bandwidth_gbps").type == "int64"
    assert t.schema.field("pred_time_us").type == "double"


def test_point_ids_follow_the_effective_hardware(tmp_path: Path) -> None:
    """Editing the base config changes ids: a rerun recomputes instead of reusing stale rows."""
    base = tmp_path / "hw.yaml"
    base.write_text((ROOT / "hw_configs/h100_sxm.yaml").read_text())
    spec = spec_from_dict({"hw": str(base), "workloads": ["paper_gemm_chains"], "cases": ["G1"],
                           "evaluator": BOUND}, "t.yaml")
    ids1 = [p for t in spec.tasks()[0] for p in t.point_ids]
    import re

    base.write_text(re.sub(r"(?m)^l2_bandwidth_gbps: .*$", "l2_bandwidth_gbps: 8765", base.read_text()))
    from fusesim.sweep.spec import _hardware, _raw_json

    _raw_json.cache_clear()
    _hardware.cache_clear()
    ids2 = [p for t in spec.tasks()[0] for p in t.point_ids]
    assert ids1 != ids2


def test_cli_flags_run_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    r = subprocess.run([sys.executable, "-m", "fusesim", "sweep", "--hw", "h100_sxm", "--vary",
                        "hbm_bandwidth_gbps=3350,6700", "--workloads", "paper_gemm_chains", "--case", "G1", "G4",
                        "--evaluator", BOUND, "--out", str(out), "--quiet", "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert len(read_rows(out)[1]) == 12
    assert out.with_suffix(".meta.json").is_file()


# ---- the real evaluators (planner + simulator) ------------------------------------------------
def _planner_ready() -> bool:
    try:
        from fusesim.planner import plan_case  # noqa: F401
        from fusesim.sim import simulate  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _planner_ready(), reason="planner or simulator not importable")
@pytest.mark.parametrize("evaluator", ["evaluate_case", "evaluate_case_unconstrained"])
def test_real_evaluator_rows(tmp_path: Path, evaluator: str) -> None:
    spec = spec_from_dict({"name": "real", "hw": "h100_sxm", "workloads": ["paper_gemm_chains", "paper_gated_ffn"],
                           "cases": ["G1", "S8"], "strategies": ["unfused", "smem", "dsm", "best"],
                           "evaluator": f"fusesim.sweep.evaluate:{evaluator}"}, "t.yaml")
    s = run_sweep(spec, tmp_path / "r.csv", progress=False)
    assert s.errors == 0, s.first_errors
    rows = {(r["case"], r["strategy"]): r for r in read_rows(tmp_path / "r.csv")[1]}
    for key in (("G1", "unfused"), ("G1", "dsm"), ("S8", "dsm"), ("G1", "best")):
        r = rows[key]
        assert r["status"] == "ok"
        assert r["pred_time_us"] > 0 and r["sim_time_us"] > 0 and r["sim_hbm_read_bytes"] > 0
        assert r["plan"].startswith(r["plan_strategy"]) and isinstance(r["buildable"], bool)
    assert rows[("G1", "dsm")]["cluster_size"] > 1
    best = rows[("G1", "best")]
    assert best["pred_time_us"] == min(rows[("G1", s)]["pred_time_us"] for s in ("unfused", "smem", "dsm"))


@pytest.mark.skipif(not _planner_ready(), reason="planner or simulator not importable")
def test_unconstrained_planner_picks_unbuildable_plans_on_the_successor() -> None:
    """The what-if evaluator exists because today's planner cannot pick what today's generator
    cannot build; on hopper_next the unconstrained one picks such a plan for some case (today's
    planner: only buildable plans, clusters of at most 16)."""
    from fusesim.sweep.evaluate import evaluate_case, evaluate_case_unconstrained

    spec = spec_from_dict({"hw": "hopper_next", "workloads": ["paper_gemm_chains"], "cases": ["G2", "G3"],
                           "strategies": ["dsm"]}, "t.yaml")
    tasks, _ = spec.tasks()
    free = [r for t in tasks for r in evaluate_case_unconstrained(t)]
    today = [r for t in tasks for r in evaluate_case(t)]
    assert max(r["cluster_size"] for r in today) <= 16 and all(r["buildable"] for r in today)
    assert any(r["buildable"] is False for r in free)


def test_several_bases_make_an_hw_axis(tmp_path: Path) -> None:
    spec = spec_from_dict({"name": "bases", "hw": ["h100_sxm", "h200"], "workloads": ["paper_gemm_chains"],
                           "cases": ["G1"], "vary": {"l2_bandwidth_gbps": [5500, 11000]}, "evaluator": BOUND},
                          "t.yaml")
    assert spec.axis_columns == ["hw", "l2_bandwidth_gbps"]
    run_sweep(spec, tmp_path / "r.csv", progress=False)
    rows = read_rows(tmp_path / "r.csv")[1]
    assert {(r["hw"], r["hw_name"]) for r in rows} == {("h100_sxm", "h100_sxm"), ("h200", "h200")}
    assert len(rows) == 2 * 2 * 3


@pytest.mark.skipif(not _planner_ready(), reason="planner or simulator not importable")
def test_reranked_evaluator_never_simulates_slower_than_the_first_choice() -> None:
    from fusesim.sweep.evaluate import RERANK_K, evaluate_case, evaluate_case_reranked

    spec = spec_from_dict({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "cases": ["G4"],
                           "strategies": ["unfused", "dsm"]}, "t.yaml")
    (task,), _ = spec.tasks()
    first = {r["plan_strategy"]: r for r in evaluate_case(task)}
    checked = {r["plan_strategy"]: r for r in evaluate_case_reranked(task)}
    for s in ("unfused", "dsm"):
        assert checked[s]["sim_time_us"] <= first[s]["sim_time_us"] * (1 + 1e-9)
        assert 1 <= checked[s]["plan_rank"] <= checked[s]["plans_simulated"] <= RERANK_K
    assert first["dsm"]["plan_rank"] == first["dsm"]["plans_simulated"] == 1  # the planner's first choice only


def test_unknown_evaluator_fails_the_spec_not_every_row(tmp_path: Path) -> None:
    with pytest.raises(InputError) as ei:
        run_sweep(small_spec(evaluator="fusesim.sweep.evaluate:no_such_fn"), tmp_path / "r.csv", progress=False)
    assert ei.value.field == "evaluator" and ei.value.file == "t.yaml"
    assert not (tmp_path / "r.csv").exists()


def test_resume_under_other_code_warns(tmp_path: Path) -> None:
    import json

    out = tmp_path / "r.csv"
    run_sweep(small_spec(), out, progress=False)
    meta_path = out.with_suffix(".meta.json")
    meta = read_json(meta_path)
    assert meta["state"] == "finished" and meta["summary"]["computed"] == 18
    meta["code_version"] = "0000000"
    meta_path.write_text(json.dumps(meta))
    s = run_sweep(small_spec(), out, progress=False)
    from fusesim.sweep.runner import code_version

    if code_version():
        assert s.warnings and "0000000" in s.warnings[0]


@pytest.mark.skipif(not _planner_ready(), reason="planner or simulator not importable")
def test_traces_folder_gets_one_perfetto_trace_per_row(tmp_path: Path) -> None:
    from fusesim.report import load_trace, plot_timeline

    spec = spec_from_dict({"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "cases": ["G1"],
                           "strategies": ["unfused", "dsm"]}, "t.yaml")
    run_sweep(spec, tmp_path / "r.csv", progress=False, traces=tmp_path / "traces")
    rows = read_rows(tmp_path / "r.csv")[1]
    assert len(rows) == 2
    for r in rows:
        events = load_trace(r["trace_file"])
        assert any(e.get("ph") == "X" for e in events)
        assert plot_timeline(events, max_tracks=4).axes[0].get_yticklabels()
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "traces").glob("*.json")) == ["dsm", "unfused"]


def test_cli_values_may_be_lists_and_table_entries() -> None:
    spec = spec_from_args(["h100_sxm"], ["gpc_sm_counts=[18,18,18,18,18,18,16,8],[34,34,32,32]",
                                         "dsm_push_bandwidth_gbps_per_sm.16=33,66"],
                          ["tensor_tflops=1,2"], ["paper_gemm_chains"])
    hws = [hw for _, hw in spec.validate_hardware()]
    assert len(hws) == 8
    assert {tuple(h.gpc_sm_counts) for h in hws} == {(18, 18, 18, 18, 18, 18, 16, 8), (34, 34, 32, 32)}
    assert {h.dsm_push_bandwidth_gbps_per_sm[16] for h in hws} == {33, 66}
    assert {h.tensor_tflops["wgmma"].bf16 for h in hws} == {989, 1978}


def test_smem_reserve_keeps_the_per_block_limit_below_a_scaled_capacity() -> None:
    spec = spec_from_dict({"hw": "h200", "workloads": ["paper_gemm_chains"],
                           "scale": {"smem_per_sm_bytes": [0.5, 2]}, "derive": ["smem_reserve"]}, "t.yaml")
    for _, hw in spec.validate_hardware():
        assert hw.smem_per_sm_bytes - hw.smem_per_block_bytes == 1024
        assert "smem_reserve" in hw.provenance["smem_per_block_bytes"]


def test_dry_run_json_counts_without_running(tmp_path: Path) -> None:
    import json

    out = tmp_path / "r.csv"
    r = subprocess.run([sys.executable, "-m", "fusesim", "sweep", str(ROOT / "sweeps" / "dsm_bandwidth_x_cluster.yaml"),
                        "--dry-run", "--format", "json", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["rows"] == 15 * 26 * 3 and info["machines"] == 15
    assert info["axes"] == ["max_cluster_size", "scale:dsm_bandwidth"]
    assert not out.exists()


def test_hopper_next_is_the_h200_with_bigger_clusters() -> None:
    """The hypothetical successor differs from the H200 only where it says so; every value inferred."""
    h200 = read_mapping(ROOT / "hw_configs/h200.yaml")
    nxt = read_mapping(ROOT / "hw_configs/hopper_next.yaml")
    differs = {"name", "description", "provenance", "gpc_sm_counts", "max_cluster_size",
               "dsm_push_bandwidth_gbps_per_sm", "dsm_pull_bandwidth_gbps_per_sm", "dsm_bulk_bandwidth_gbps_per_sm",
               "dsm_latency_ns", "cluster_barrier_ns"}
    assert {k: v for k, v in h200.items() if k not in differs} == {k: v for k, v in nxt.items() if k not in differs}
    for table in differs & {"dsm_push_bandwidth_gbps_per_sm", "dsm_pull_bandwidth_gbps_per_sm",
                            "dsm_bulk_bandwidth_gbps_per_sm", "dsm_latency_ns", "cluster_barrier_ns"}:
        assert {k: v for k, v in nxt[table].items() if k <= 16} == h200[table]
    assert all(v.startswith("inferred") for v in nxt["provenance"].values())


def test_l2_rates_rule_caps_the_reduction_rates_at_a_swept_l2_bandwidth() -> None:
    """Sweeping the H100's L2 bandwidth below its measured reduction rates is refused with a hint; with
    `derive: [l2_rates]` each rate above the swept bandwidth is set to it (noted in its provenance) and the
    rates below it stay as measured."""
    raw = {"hw": "h100_sxm", "workloads": ["paper_gemm_chains"], "cases": ["G1"], "vary": {"l2_bandwidth_gbps": [2000, 9212]},
           "evaluator": BOUND}
    with pytest.raises(InputError) as exc:
        spec_from_dict(raw, "t.yaml").validate_hardware()
    assert "derive: [l2_rates]" in exc.value.message
    machines = [hw for _gp, hw in spec_from_dict({**raw, "derive": ["l2_rates"]}, "t.yaml").validate_hardware()]
    slow, full = sorted(machines, key=lambda h: h.l2_bandwidth_gbps)
    assert slow.l2_row_reduction_bandwidth_gbps == 2000 and "l2_rates" in slow.provenance["l2_row_reduction_bandwidth_gbps"]
    assert slow.l2_reduction_bandwidth_gbps == full.l2_reduction_bandwidth_gbps < 2000  # below the cap: as measured
    assert full.l2_row_reduction_bandwidth_gbps > 2000 and "l2_rates" not in full.provenance["l2_row_reduction_bandwidth_gbps"]


def test_another_sweep_into_the_same_out_is_refused(tmp_path: Path) -> None:
    """Rows of two sweeps in one file mixed in its plots, and the sidecar described only the last."""
    out = tmp_path / "r.csv"
    run_sweep(small_spec(name="first"), out, progress=False)
    rows = out.read_text()
    with pytest.raises(InputError) as ei:
        run_sweep(small_spec(name="second"), out, progress=False)
    assert ei.value.field == "--out" and "'first'" in str(ei.value)
    with pytest.raises(InputError):
        run_sweep(small_spec(name="first", evaluator="test_sweep:failing_on_g2"), out, progress=False)
    assert out.read_text() == rows
    assert run_sweep(small_spec(name="first"), out, progress=False).computed == 0


def test_plot_of_a_strategy_the_sweep_did_not_run_is_refused(tmp_path: Path) -> None:
    from fusesim.report.sweepplots import plot_sweep

    out = tmp_path / "r.csv"
    run_sweep(small_spec(strategies=["unfused", "dsm"]), out, progress=False)
    plot_sweep(out)  # dsm over unfused: both ran
    for kw, flag in ((dict(target="smem"), "--target"), (dict(target="dsm", baseline="best"), "--baseline")):
        with pytest.raises(InputError) as ei:
            plot_sweep(out, **kw)
        assert ei.value.field == flag


def test_traces_of_rows_done_before_are_announced_missing(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    run_sweep(small_spec(), out, progress=False)
    s = run_sweep(small_spec(), out, progress=False, traces=tmp_path / "tr")
    assert s.computed == 0 and any("get no trace" in w for w in s.warnings)
