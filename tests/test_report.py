"""Plots: every plot command writes a PNG, and the figure has the expected axes and labels.

Figures are checked as objects (scales, labels, artists), never by pixels. CLI commands run
in-process with `fusesim.report.save_png` wrapped so the test sees the figure that was saved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.figure import Figure

import fusesim.report as report
from fusesim.cli import main
from fusesim.hardware import load_hardware
from fusesim.report import (
    Ceilings,
    load_measured,
    load_sweep,
    load_trace,
    plot_heatmap,
    plot_roofline,
    plot_speedup_lines,
    plot_timeline,
    points_from_rows,
    roofline_rows,
)
from fusesim.sweep import run_sweep, spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BOUND = "fusesim.sweep.evaluate:bound_case"


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Figures passed to save_png by a command (the file is still written)."""
    figs: list[Figure] = []
    real = report.save_png

    def spy(fig: Figure, path, dpi: int = 120):  # noqa: ANN001, ANN202
        figs.append(fig)
        return real(fig, path, dpi)

    monkeypatch.setattr(report, "save_png", spy)
    return figs


def _is_png(p: Path) -> bool:
    return p.is_file() and p.read_bytes()[:8] == PNG_MAGIC


@pytest.fixture(scope="module")
def sweep_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "r.csv"
    spec = spec_from_dict({"name": "plots", "hw": "h100_sxm", "workloads": ["paper_gemm_chains"],
                           "cases": ["G1", "G4", "G5"], "evaluator": BOUND,
                           "vary": {"hbm_bandwidth_gbps": [1675, 3350, 6700]},
                           "scale": {"l2_bandwidth_gbps": [1, 2]}}, "t.yaml")
    run_sweep(spec, out, progress=False)
    return out


# ---- roofline ---------------------------------------------------------------------------------
def test_roofline_figure_has_log_axes_ceilings_and_points() -> None:
    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    rows = roofline_rows("paper_gemm_chains", "h100_sxm", ["G1", "G5"], evaluator=BOUND)
    points = points_from_rows(rows)
    assert {(p.case, p.strategy) for p in points} == {(c, s) for c in ("G1", "G5") for s in ("unfused", "smem", "dsm")}
    fig = plot_roofline(Ceilings.of(hw), points, title="t")
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "Arithmetic intensity" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    texts = " ".join(t.get_text() for t in ax.texts)
    for ceiling in ("wgmma peak", "mma_sync peak", "HBM", "L2", "DSM"):
        assert ceiling in texts
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"unfused", "smem", "dsm", "HBM intensity"} <= set(labels)
    assert len(ax.collections) >= len(points)  # one scatter per (point, level)


def test_ceilings_follow_the_machine() -> None:
    hw = load_hardware(ROOT / "hw_configs/h200.yaml")
    c = Ceilings.of(hw)
    assert c.bandwidth_gbps["hbm"] == 4300
    assert c.bandwidth_gbps["dsm"] == max(hw.dsm_push_bandwidth_gbps_per_sm.values()) * hw.sm_count
    assert c.attainable_tflops(1e6) == 989 and c.attainable_tflops(10) == pytest.approx(43.0)


def test_roofline_command_writes_png_with_measured_points(tmp_path: Path, saved: list[Figure]) -> None:
    out = tmp_path / "roof.png"
    rc = main(["roofline", "paper_gemm_chains", "--hw", "h200", "--case", "G1", "G4", "--evaluator", BOUND,
               "--measured", str(ROOT / "results" / "h200"), "--out", str(out), "--format", "json"])
    assert rc == 0 and _is_png(out)
    (fig,) = saved
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "h200" in ax.get_title()
    has_measured = (ROOT / "results" / "h200").is_dir()
    assert ("measured" in [t.get_text() for t in ax.get_legend().get_texts()]) == has_measured


def test_roofline_command_tolerates_missing_measured(tmp_path: Path, saved: list[Figure],
                                                     capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "roof.png"
    rc = main(["roofline", "paper_gemm_chains", "--hw", "h100_sxm", "--case", "G1", "--evaluator", BOUND,
               "--measured", str(tmp_path / "nothing"), "--out", str(out)])
    assert rc == 0 and _is_png(out)
    assert "no such file" in capsys.readouterr().err


def test_roofline_command_rejects_non_png(tmp_path: Path) -> None:
    assert main(["roofline", "paper_gemm_chains", "--hw", "h100_sxm", "--out", str(tmp_path / "x.pdf")]) == 2


def test_roofline_with_the_real_planner(tmp_path: Path, saved: list[Figure]) -> None:
    pytest.importorskip("fusesim.planner")
    from fusesim.planner import plan_case  # noqa: F401 - skip cleanly if the API is not there

    out = tmp_path / "roof.png"
    assert main(["roofline", "paper_gemm_chains", "--hw", "h100_sxm", "--case", "G1", "G9", "--source",
                 "simulated", "--out", str(out), "--format", "json"]) == 0
    assert _is_png(out)
    ax = saved[0].axes[0]
    dsm_markers = [c for c in ax.collections if c.get_offsets().shape[0] == 1]
    assert len(dsm_markers) >= 6  # 2 cases x 3 strategies, at least their HBM points


# ---- measured data ----------------------------------------------------------------------------
def test_measured_reader_is_tolerant(tmp_path: Path) -> None:
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "empty.json").write_text(json.dumps({"hello": 1}))
    (tmp_path / "bench.json").write_text(json.dumps({"results": [
        {"case": "G1", "strategy": "dsm", "time_us": 4.2, "ncu": {"dram__bytes_read.sum": 1000,
                                                                   "dram__bytes_write.sum": 24}},
        {"case": "G2", "plan": {"strategy": "smem"}, "timing": {"median_us": 5.0}},
        {"strategy": "dsm", "time_us": 1.0},  # no case: skipped
    ]}))
    m = load_measured(tmp_path)
    got = {(x.case, x.strategy): x for x in m.items}
    assert set(got) == {("G1", "dsm"), ("G2", "smem")}
    assert got[("G1", "dsm")].hbm_bytes == 1024
    assert len(m.warnings) == 2
    assert load_measured(tmp_path / "absent").warnings


def test_measured_reader_reads_the_pytorch_baselines() -> None:
    path = ROOT / "results" / "h200" / "pytorch_baselines.json"
    if not path.is_file():
        pytest.skip("no committed baselines")
    m = load_measured(path)
    assert not m.warnings
    assert {x.strategy for x in m.items} >= {"pytorch-eager", "pytorch-graph"}
    assert all(x.time_us > 0 for x in m.items)


# ---- timeline ---------------------------------------------------------------------------------
SYNTH = {"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "SM 0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "SM 1"}},
    {"ph": "X", "name": "load", "pid": 1, "tid": 0, "ts": 1.0, "dur": 2.0},
    {"ph": "X", "name": "mma", "pid": 1, "tid": 0, "ts": 3.0, "dur": 4.0},
    {"ph": "B", "name": "exchange", "pid": 1, "tid": 1, "ts": 2.0},
    {"ph": "E", "name": "exchange", "pid": 1, "tid": 1, "ts": 5.0},
]}


def test_timeline_figure_tracks_and_labels(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps(SYNTH))
    fig = plot_timeline(load_trace(p))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["SM 0", "SM 1"]
    assert "µs" in ax.get_xlabel() and "Track" in ax.get_ylabel()
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"load", "mma", "exchange"}


def test_timeline_command_on_a_real_simulator_trace(tmp_path: Path) -> None:
    sim = pytest.importorskip("fusesim.sim")
    from fusesim.plan import ClusterShape
    from fusesim.sim.examples import chain, fused_plan

    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    plan = fused_plan(chain("t", 128, 2048, 512, 512), ClusterShape(1, 4, 1, 4), 128, 128, 64, 4)
    res = sim.simulate(plan, hw, trace=True)
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": res.trace}))
    out = tmp_path / "tl.png"
    r = subprocess.run([sys.executable, "-m", "fusesim.report.timeline", str(trace), "--out", str(out),
                        "--tracks", "8"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert _is_png(out)
    fig = plot_timeline(res.trace, max_tracks=8)
    assert len(fig.axes[0].get_yticklabels()) == 8


def test_timeline_bad_file_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    r = subprocess.run([sys.executable, "-m", "fusesim.report.timeline", str(bad), "--out", str(tmp_path / "x.png")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "bad.json" in r.stderr


# ---- sweep plots ------------------------------------------------------------------------------
def test_sweep_table_knows_its_axes(sweep_csv: Path) -> None:
    t = load_sweep(sweep_csv)
    assert t.axes == ["hbm_bandwidth_gbps", "scale:l2_bandwidth_gbps"]
    assert t.values("hbm_bandwidth_gbps") == [1675, 3350, 6700]
    assert t.cases() == ["G1", "G4", "G5"]


def test_speedup_lines_one_line_per_case(sweep_csv: Path) -> None:
    fig = plot_speedup_lines(load_sweep(sweep_csv), "hbm_bandwidth_gbps")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "hbm_bandwidth_gbps" and ax.get_xscale() == "log"
    assert "Speedup of dsm over unfused" in ax.get_ylabel()
    assert [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")] == ["G1", "G4", "G5"]
    assert "scale:l2_bandwidth_gbps=1" in ax.get_title()  # the held axis is named


def test_gain_metric_is_one_at_the_first_value(sweep_csv: Path) -> None:
    fig = plot_speedup_lines(load_sweep(sweep_csv), "hbm_bandwidth_gbps", metric="gain")
    for line in fig.axes[0].get_lines():
        if not line.get_label().startswith("_"):
            assert line.get_ydata()[0] == pytest.approx(1.0)


def test_heatmap_axes_and_colorbar(sweep_csv: Path) -> None:
    fig = plot_heatmap(load_sweep(sweep_csv), "hbm_bandwidth_gbps", "scale:l2_bandwidth_gbps")
    ax, cax = fig.axes
    assert ax.get_xlabel() == "hbm_bandwidth_gbps" and ax.get_ylabel() == "scale:l2_bandwidth_gbps"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1675", "3350", "6700"]
    assert "geomean" in cax.get_ylabel()
    assert len(ax.texts) == 6  # one annotated cell per (x, y)


def test_sweep_plot_command(tmp_path: Path, sweep_csv: Path, saved: list[Figure]) -> None:
    out = tmp_path / "h.png"
    assert main(["sweep", "--out", str(sweep_csv), "--plot", str(out)]) == 0
    assert _is_png(out)
    assert saved[0].axes[0].get_ylabel() == "scale:l2_bandwidth_gbps"  # default: heatmap of the two axes
    out2 = tmp_path / "l.png"
    assert main(["sweep", "--out", str(sweep_csv), "--plot", str(out2), "--plot-x", "hbm_bandwidth_gbps",
                 "--metric", "gain"]) == 0
    assert _is_png(out2) and "speedup vs first" in saved[1].axes[0].get_ylabel()


def test_gain_against_an_explicit_reference_point(sweep_csv: Path) -> None:
    ref = {"hbm_bandwidth_gbps": 3350, "scale:l2_bandwidth_gbps": 1.0}
    fig = plot_heatmap(load_sweep(sweep_csv), "hbm_bandwidth_gbps", "scale:l2_bandwidth_gbps", metric="gain",
                       reference=ref)
    ax = fig.axes[0]
    cell = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts}
    assert cell[(1, 0)] == "1.00"  # the reference cell
    assert "hbm_bandwidth_gbps=3350" in fig.axes[1].get_ylabel()


def test_measured_reader_reads_fusesim_bench_json(tmp_path: Path) -> None:
    """`fusesim bench` nests timed plans under each case; unverified plans are not measurements."""
    from fusesim.plan import Plan
    from fusesim.sim.examples import chain, unfused_plan

    plan = unfused_plan(chain("G1", 128, 512, 32, 256))
    doc = {"what": "fusesim bench", "cases": [{"case": "G1", "chain": plan.chain.to_dict(), "plans": [
        {"strategy": "unfused", "plan": plan.to_dict(), "summary": plan.summary(), "verify": {"ok": True},
         "time": {"queued_median_us": 7.5, "sync_median_us": 9.0},
         "ncu": {"dram__bytes_read.sum": 1000.0, "dram__bytes_write.sum": 24.0}},
        {"strategy": "dsm", "plan": plan.to_dict(), "summary": "x", "verify": {"ok": False}}],
        "pytorch": {"eager": {"queued_median_us": 20.0}, "graph": {"queued_median_us": 12.0}}}]}
    (tmp_path / "bench.json").write_text(json.dumps(doc))
    m = load_measured(tmp_path)
    got = {x.strategy: x for x in m.items}
    assert set(got) == {"unfused", "pytorch-eager", "pytorch-graph"} and not m.warnings
    assert got["unfused"].time_us == 7.5 and got["unfused"].hbm_bytes == 1024
    assert Plan.from_dict(got["unfused"].plan_dict) == plan


def test_measured_counters_never_come_from_the_prediction(tmp_path: Path) -> None:
    doc = {"rows": [{"case": "G1", "strategy": "dsm", "time_us": 4.0,
                     "predicted": {"time_us": 3.0, "bytes": {"hbm": 10, "l2": 20, "dsm": 30}},
                     "plan": {"strategy": "dsm", "l2": 5}}]}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    (m,) = load_measured(tmp_path).items
    assert m.time_us == 4.0 and m.hbm_bytes is None and m.l2_bytes is None and m.dsm_bytes is None
