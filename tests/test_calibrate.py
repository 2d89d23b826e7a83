"""`fusesim calibrate`: raw JSON -> calibrated YAML (no GPU), GPC inference, ncu parsing; one GPU run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fusesim.calibrate.derive import (
    check_layout,
    derive,
    predicted_clusters,
    search_layouts,
    union_gpcs,
)
from fusesim.calibrate.runner import match_ncu, parse_ncu_csv
from fusesim.calibrate.writer import write_calibrated
from fusesim.hardware import load_hardware
from fusesim.stored import exists, read_json

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = [18, 18, 18, 18, 18, 18, 16, 8]


def _gpc_launches(layout: list[int]) -> list[dict[str, Any]]:
    """Clusters as the hardware would place them: inside one GPC, on rotating SM subsets."""
    gpcs, sm = [], 0
    for g in layout:
        gpcs.append(list(range(sm, sm + g)))
        sm += g
    launches = []
    for cs in (16, 8, 4, 2):
        clusters = []
        for wave in range(3):
            for sms in gpcs:
                n = len(sms) // cs
                rot = sms[wave:] + sms[:wave]
                clusters += [rot[i * cs:(i + 1) * cs] for i in range(n)]
        launches.append({"cluster_size": cs, "clusters": clusters})
    return launches


def _occ_table(layout: list[int]) -> list[dict[str, Any]]:
    return [{"threads": 128, "smem_bytes": s, "blocks_per_sm": b,
             "max_active_clusters": {str(cs): predicted_clusters(layout, cs, b) for cs in (1, 2, 4, 8, 16)}}
            for s, b in ((204800, 1), (102400, 2))]


def make_raw(layout: list[int] = LAYOUT) -> dict[str, Any]:
    """A raw calibration JSON shaped like calib.cu's output, with round synthetic numbers."""
    sms = sum(layout)
    dsm = {kind: {str(cs): {"max_active_clusters": predicted_clusters(layout, cs),
                            "whole_gpu": {"gbps_per_sm_median": base + cs / 10, "bytes_per_cycle_per_sm_median": 16.5},
                            "one_cluster": {"gbps_per_sm_median": base + 5}}
                  for cs in (2, 4, 8, 16)}
           for kind, base in (("push", 34.0), ("pull", 25.0))}
    dsm["method"] = "ring"
    lat_runs = {str(cs): {"runs": [{"ns_by_peer": [20.0] + [90.0 + cs + p for p in range(1, cs)],
                                     "cycles_by_peer": [40.0] + [180.0 + p for p in range(1, cs)],
                                     "local_cta_ns": 15.0, "local_cta_cycles": 30.0,
                                     "smid_by_rank": list(range(cs))}]} for cs in (2, 4, 8, 16)}
    return {
        "schema": "fusesim-calibration/1",
        "quick": False,
        "environment": {"gpu": "NVIDIA H200", "driver": "580.159.04", "cuda": "13.0", "date_utc": "2026-12-02T12:00:00+00:00",
                        "command": "python3 -m fusesim.calibrate.runner --out x.json"},
        "groups": {
            "info": {"sm_count": sms, "smem_per_sm_bytes": 233472, "smem_per_block_optin_bytes": 232448,
                     "registers_per_sm": 65536, "max_threads_per_sm": 2048, "max_threads_per_block": 1024,
                     "max_blocks_per_sm": 32, "l2_bytes": 62914560, "global_memory_bytes": 150754820096},
            "clock": {"sm_clock_mhz_median": 1980.0, "sm_clock_mhz_min": 1975.0, "sm_clock_mhz_max": 1981.0, "method": "spin"},
            "occupancy": {"max_cluster_size_nonportable": 16, "max_cluster_size_portable": 8, "table": _occ_table(layout)},
            "gpc": {"launches": _gpc_launches(layout), "nsmid": sms},
            "hbm": {"bandwidth": {"copy_gbps_median": 4250.4, "read_gbps_median": 4400.0, "write_gbps_median": 4300.0,
                                  "memcpy_d2d_gbps_median": 4200.0, "method": "copy"},
                    "latency": {"cold_16mib": {"ns_median": 480.5, "cycles_median": 950.0},
                                "cold_1gib": {"ns_median": 700.0, "cycles_median": 1390.0}, "method": "chase"}},
            "l2": {"bandwidth": {"ws_16mib": {"gbps_median": 7000.0}, "ws_8mib": {"gbps_median": 7100.0}, "method": "cg"},
                   "latency": {"ns_median": 140.2, "cycles_median": 277.0, "method": "chase"}},
            "smem": {"gbps_per_sm_median": 250.1, "method": "lds"},
            "dsm": dsm,
            "dsm_lat": {**lat_runs, "launches": 1, "method": "remote chase"},
            "barrier": {**{str(cs): {"whole_gpu": {"ns_per_barrier_median": 100.0 + cs, "cycles_per_barrier_median": 200.0}}
                           for cs in (1, 2, 4, 8, 16)}, "method": "loop"},
            "mma": {"bf16": {"tflops_median": 650.0}, "fp16": {"tflops_median": 655.0}, "method": "mma"},
            "wgmma": {"bf16": {"tflops_median": 900.0}, "fp16": {"tflops_median": 905.0}, "method": "wgmma"},
            "launch": {"grid_1": {"single_event_us_median": 2.5, "stream_back_to_back_us_median": 2.1,
                                  "graph_back_to_back_us_median": 1.1},
                       "grid_528": {"single_event_us_median": 5.0, "stream_back_to_back_us_median": 3.7,
                                    "graph_back_to_back_us_median": 0.8,
                                    "queued": {"overhead_us_median": 1.9, "span_us_median": 0.5, "gap_us_median": 0.45,
                                               "gap_us_mean": 0.47, "gap_with_event_between_us_median": 0.6}}},
        },
        "torch_matmul": {"n": 8192, "bfloat16": {"tflops_median": 780.0}},
        "ncu": {"checks": [{"what": "smem ld.shared.v4", "metrics": {
            "smsp__sass_inst_executed_op_shared_ld.sum": {"expected": 100.0, "measured": 100.0, "ratio": 1.0}}}]},
    }


def test_union_gpcs_recovers_layout() -> None:
    comps = union_gpcs(_gpc_launches(LAYOUT))
    assert sorted((len(c) for c in comps), reverse=True) == LAYOUT


def test_search_finds_layouts_consistent_with_counts() -> None:
    counts = {cs: predicted_clusters(LAYOUT, cs) for cs in (2, 4, 8, 16)}
    found = search_layouts(132, counts, max_gpc=18, max_gpcs=8)
    assert LAYOUT in found
    assert all(not check_layout(f, counts) for f in found)


def test_from_conversion_writes_valid_hardware_with_provenance(tmp_path: Path) -> None:
    raw = make_raw()
    raw_path = tmp_path / "calibration.json"
    raw_path.write_text(json.dumps(raw))
    out = tmp_path / "h200_calibrated.yaml"
    hw, d = write_calibrated(raw, ROOT / "hw_configs" / "h200.yaml", out, raw_path)
    loaded = load_hardware(out)
    assert loaded == hw
    assert loaded.name == "h200_calibrated"
    assert loaded.hbm_bandwidth_gbps == 4250.0
    assert loaded.l2_latency_ns == 140.2
    assert loaded.dsm_push_bandwidth_gbps_per_sm == {2: 34.2, 4: 34.4, 8: 34.8, 16: 35.6}
    assert loaded.dsm_latency_ns[4] == pytest.approx(90 + 4 + 2.0)  # mean over peers 1..3
    assert loaded.cluster_barrier_ns[16] == 116.0
    assert loaded.gpc_sm_counts == LAYOUT
    assert loaded.tensor_tflops["wgmma"].bf16 == 900.0
    assert loaded.kernel_gap_us == 0.45 and loaded.launch_overhead_us == 1.9  # queued, largest grid
    # every measured field's provenance names GPU, driver, CUDA, date and command
    for name in d.values:
        p = loaded.provenance[name]
        assert "NVIDIA H200" in p and "580.159.04" in p and "CUDA 13.0" in p and "2026-12-02" in p and "fusesim" in p, name
    assert "Nsight Compute" in loaded.provenance["smem_bandwidth_gbps_per_sm"]
    # unmeasured fields keep the base value and provenance
    base = load_hardware(ROOT / "hw_configs" / "h200.yaml")
    assert loaded.max_registers_per_thread == base.max_registers_per_thread
    assert loaded.provenance["max_registers_per_thread"] == base.provenance["max_registers_per_thread"]


def test_failed_group_keeps_base_value(tmp_path: Path) -> None:
    raw = make_raw()
    raw["groups"]["dsm"] = {"error": "exit 3: illegal address"}
    raw["groups"]["l2"]["latency"]["ns_median"] = 0.0  # nonsense is not written
    hw, d = write_calibrated(raw, ROOT / "hw_configs" / "h200.yaml", tmp_path / "o.yaml")
    base = load_hardware(ROOT / "hw_configs" / "h200.yaml")
    assert hw.dsm_pull_bandwidth_gbps_per_sm == base.dsm_pull_bandwidth_gbps_per_sm
    assert hw.l2_latency_ns == base.l2_latency_ns
    assert any("dsm failed" in n for n in d.notes)


def test_inconsistent_union_falls_back_to_search() -> None:
    raw = make_raw()
    # drop the clusters of 2 and 4: the 8-SM GPC's halves are then never joined... make it observable
    launches = raw["groups"]["gpc"]["launches"]
    for launch in launches:
        launch["clusters"] = [c for c in launch["clusters"] if not (set(c) & set(range(124, 132))) or len(c) == 4]
    d = derive(raw)
    assert sum(d.values["gpc_sm_counts"]) == 132
    assert not d.gpc["final_mismatch_1_block_per_sm"]


def test_parse_and_match_ncu_csv() -> None:
    text = ('"ID","Kernel Name","gpu__time_duration.sum","smsp__sass_inst_executed_op_shared_ld.sum"\n'
            '"","","nsecond","inst"\n'
            '"0","k_smem_read(int, unsigned int *)","1,000","4,224"\n'
            '"1","void k_dsm_bw<true>(int, unsigned int *, unsigned long long *)","500","10"\n')
    rows = parse_ncu_csv("==PROF== noise\n" + text)
    assert len(rows) == 2 and rows[0]["smsp__sass_inst_executed_op_shared_ld.sum"] == 4224.0
    checks = match_ncu([{"kernel": "k_smem_read", "what": "smem",
                         "expect": {"smsp__sass_inst_executed_op_shared_ld.sum": 4224}}], rows)
    assert checks[0]["metrics"]["smsp__sass_inst_executed_op_shared_ld.sum"]["ratio"] == 1.0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fusesim", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_from_json(tmp_path: Path) -> None:
    raw_path = tmp_path / "calibration.json"
    raw_path.write_text(json.dumps(make_raw()))
    out = tmp_path / "cal.yaml"
    r = _cli("calibrate", "--from", str(raw_path), "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["hw"] == "h200_calibrated" and d["fields"]["hbm_bandwidth_gbps"]["value"] == 4250.0
    assert yaml.safe_load(out.read_text())["sm_count"] == 132


def test_cli_bad_from_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    r = _cli("calibrate", "--from", str(bad), "--out", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.yaml").exists()


def test_committed_calibration_converts(tmp_path: Path) -> None:
    raw_path = ROOT / "results" / "h200" / "calibration.json"
    if not exists(raw_path):
        pytest.skip("no committed calibration yet")
    raw = read_json(raw_path)
    later = [ROOT / "results" / "h200" / f for f in ("calibration_l2.json", "calibration_ticket.json",
                                                     "calibration_pdl.json", "calibration_l2bulk.json",
                                                     "calibration_l2bulk_run2.json")]  # later runs
    hw, d = write_calibrated(raw, ROOT / "hw_configs" / "h200.yaml", tmp_path / "c.yaml", raw_path,
                             [(read_json(p), p) for p in later])
    committed = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
    assert hw.model_dump() == committed.model_dump()  # the committed YAML is what the tool writes
    assert hw.l2_reuse_bytes == 44 << 20
    assert hw.pdl_release_us == 0.77 and hw.l2_row_reduction_gbps_per_sm == 48.8
    assert hw.inter_cluster_ticket_ns == pytest.approx(616 - 145.3, abs=0.1)
    assert hw.l2_bandwidth_gbps == 9833.0  # l2bulk's 2 MiB hot set (the l2 group's 16 MiB set: 9212-9251)


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_quick_calibration(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    raw_path = tmp_path / "raw.json"
    out = tmp_path / "cal.yaml"
    r = _cli("calibrate", "--quick", "--no-ncu", "--no-torch", "--raw", str(raw_path), "--out", str(out),
             "--build-dir", str(tmp_path / "build"))
    assert r.returncode == 0, r.stderr[-2000:]
    hw = load_hardware(out)
    raw = read_json(raw_path)
    assert not [g for g, v in raw["groups"].items() if "error" in v]
    assert hw.hbm_bandwidth_gbps > 1000 and hw.smem_bandwidth_gbps_per_sm > 50


def test_l2_reuse_capacity_from_nsight_bytes() -> None:
    """l2reuse under Nsight Compute: per case 3 launches (flush, pass 1, pass 2); the capacity is the
    working set whose pass 2 misses half, linear between sizes; the TMA evict_first curve is a note
    (never written as l2_evict_first_bytes)."""
    from fusesim.calibrate.derive import derive, half_miss_bytes

    mib = 2**20
    sizes = [32 * mib, 40 * mib, 48 * mib, 56 * mib]
    miss = {"none": [0.0, 0.2, 0.8, 1.0], "tma_evict_first": [0.0, 0.25, 0.75, 1.0]}
    cases, reads = [], []
    for pol, fr in miss.items():
        for b, f in zip(sizes, fr, strict=True):
            cases.append({"policy": pol, "bytes": b})
            reads += [256.0 * mib, float(b), f * b]
    raw = {"groups": {}, "ncu_l2reuse": {"dram_read_bytes": reads, "group": {"reps": 1, "cases": cases, "method": "m"}}}
    assert half_miss_bytes([(b, f) for b, f in zip(sizes, miss["none"], strict=True)]) == pytest.approx(44 * mib)
    d = derive(raw)
    assert d.values["l2_reuse_bytes"] == 44 * mib and "l2_evict_first_bytes" not in d.values
    assert any("evict_first: half of a second read missed at 44.0 MiB" in n for n in d.notes)


def test_ticket_protocol_from_small_slices() -> None:
    """ticket: the 1 KiB-slice cases give the protocol time; the L2 latency the simulator already
    charges the reds is subtracted (this run's l2 group, else the hardware file's value); without any
    L2 latency the cases stay a note."""
    from fusesim.calibrate.derive import derive

    def case(name: str, ticket_ns: float) -> dict[str, Any]:
        return {"case": name, "grid": 8, "issue_ns_median": 50.0, "fence_ticket_ns_median": ticket_ns,
                "convert_ns_median": 900.0, "span_ns_median": 3000.0}

    raw = {"groups": {"ticket": {"method": "m", "cases": [case("t2_c4_f256", 700.0), case("t33_c4_f256", 800.0),
                                                          case("t2_c4_f4096", 2000.0)]}}}
    d = derive(raw, {"l2_latency_ns": 150.0})
    assert d.values["inter_cluster_ticket_ns"] == pytest.approx(750.0 - 150.0)
    assert "hardware file's l2_latency_ns" in d.how["inter_cluster_ticket_ns"]
    alone = derive(raw)
    assert "inter_cluster_ticket_ns" not in alone.values and any(n.startswith("ticket (ns)") for n in alone.notes)


def test_convert_line_from_the_ticket_cases() -> None:
    """ticket: the last block's convert is a straight line in the float4s each of the 256 threads
    converts (least squares: intercept = fixed part, slope = one round trip per float4); a single
    slice size gives no line."""
    from fusesim.calibrate.derive import derive

    def case(name: str, floats: int, convert_ns: float) -> dict[str, Any]:
        return {"case": name, "grid": 8, "floats_per_block": floats, "issue_ns_median": 50.0,
                "fence_ticket_ns_median": 600.0, "convert_ns_median": convert_ns, "span_ns_median": 3000.0}

    pts = [("t2_c4_f256", 256, 1), ("t2_c4_f4096", 4096, 4), ("t16_c8_f16384", 16384, 16), ("t2_c64_f32768", 32768, 32)]
    raw = {"groups": {"ticket": {"method": "m", "cases": [case(n, f, 400.0 + 250.0 * x) for n, f, x in pts]}}}
    d = derive(raw, {"l2_latency_ns": 150.0})
    assert d.values["inter_cluster_convert_ns"] == pytest.approx(400.0)
    assert d.values["inter_cluster_convert_round_trip_ns"] == pytest.approx(250.0)
    assert "least squares" in d.how["inter_cluster_convert_round_trip_ns"]
    one = {"groups": {"ticket": {"method": "m", "cases": [case("t2_c4_f4096", 4096, 1600.0)]}}}
    assert "inter_cluster_convert_ns" not in derive(one, {"l2_latency_ns": 150.0}).values


def test_fragment_reduction_rates_from_the_per_sm_cases() -> None:
    """l2red: the v2-fragment red.add rate per SM comes from the 16-SM case, the all-SM rate from the
    case with the most SMs; without per-SM cases nothing is written (the group stays a note)."""
    from fusesim.calibrate.derive import derive

    def c(grid: int, gbps: float) -> dict[str, Any]:
        return {"vector": 2, "pattern": "frag", "grid": grid, "threads": 256, "gbps_median": gbps}

    warm = {"v2_frag_16mib": {"gbps_median": 2200.0}, "v4_rows_16mib": {"gbps_median": 3500.0}}
    raw = {"groups": {"l2red": {"cases": warm, "per_sm": {"v2_frag_g16_t256": c(16, 480.0),
                                                            "v2_frag_g66_t256": c(66, 1600.0),
                                                            "v2_frag_g132_t256": c(132, 2300.0)}}}}
    d = derive(raw)
    assert d.values["l2_fragment_reduction_gbps_per_sm"] == pytest.approx(30.0)
    assert d.values["l2_fragment_reduction_bandwidth_gbps"] == pytest.approx(2300.0)
    assert "16 blocks" in d.how["l2_fragment_reduction_gbps_per_sm"]
    bare = derive({"groups": {"l2red": {"cases": warm}}})
    assert "l2_fragment_reduction_gbps_per_sm" not in bare.values and any(n.startswith("l2red") for n in bare.notes)


def test_l2bulk_per_sm_rates_are_a_note_and_the_hot_set_rate_is_the_l2_bandwidth() -> None:
    """l2bulk: the per-SM TMA bulk-copy rates are reported, not written as a field; the all-SM rate on a
    2 MiB set (each block its own chunks) is the L2 bandwidth when the group has it, replacing the
    l2 group's 16 MiB one."""
    from fusesim.calibrate.derive import derive

    cases = [{"sms": 16, "ring": 4, "gbps_median": 1636.0}, {"sms": 132, "ring": 8, "gbps_median": 8921.0}]
    d = derive({"groups": {"l2bulk": {"cases": cases}}}, {"clock_mhz": 1980.0})
    assert not d.values  # without the hot-set cases nothing is written
    note = next(n for n in d.notes if n.startswith("l2bulk"))
    assert "16 SMs ring 4: 1636 (102.2)" in note and "132 SMs ring 8: 8921 (67.6)" in note
    shared = [{"sms": 132, "ring": 4, "set_bytes": 2 << 20, "shared": s, "gbps_median": g} for s, g in ((0, 9833.0), (1, 9860.0))]
    d = derive({"groups": {"l2bulk": {"cases": cases, "shared_cases": shared}}})
    assert any("2 MiB own 9833, 2 MiB same 9860" in n for n in d.notes)
    assert d.values["l2_bandwidth_gbps"] == 9833.0
    l2 = {"bandwidth": {"method": "m", "ws_16mib": {"gbps_median": 9212.0}}}
    both = derive({"groups": {"l2": l2, "l2bulk": {"cases": cases, "shared_cases": shared}}})
    assert both.values["l2_bandwidth_gbps"] == 9833.0 and "16 MiB set of ld.global.cg.v4 gives 9212" in both.how["l2_bandwidth_gbps"]
    assert derive({"groups": {"l2": l2}}).values["l2_bandwidth_gbps"] == 9212.0


def test_wgmma_stage_handshake() -> None:
    """wgmma_stage: the n 64 handshake stage per consumer warpgroups becomes wgmma_stage_handshake_ns;
    every case is in the note; with one warpgroup count missing nothing is written."""
    from fusesim.calibrate.derive import derive

    stage = {"iters": 5000, "ring_stages": 4, "n64_wg1_handshake": {"ns_per_stage_median": 139.34},
             "n64_wg1_wgmma_only": {"ns_per_stage_median": 73.5}, "n64_wg2_handshake": {"ns_per_stage_median": 175.94},
             "method": "m"}
    d = derive({"groups": {"wgmma_stage": stage}})
    assert d.values == {"wgmma_stage_handshake_ns": {1: 139.3, 2: 175.9}}
    assert "4-stage ring" in d.how["wgmma_stage_handshake_ns"]
    assert any(n.startswith("wgmma_stage") and "n64_wg1_handshake 139.3, n64_wg1_wgmma_only 73.5" in n for n in d.notes)
    del stage["n64_wg2_handshake"]
    assert not derive({"groups": {"wgmma_stage": stage}}).values


def test_dsm_bulk_rate_is_the_all_to_all_case() -> None:
    """dsm_bulk: every case is in the note; the all-to-all rates (fused_wgmma's shuffle and
    reduce-scatter send a slice to every peer) become dsm_bulk_bandwidth_gbps_per_sm."""
    from fusesim.calibrate.derive import derive

    cases = [{"cluster_size": cs, "all_to_all": a, "gbps_per_sm": g}
             for cs, a, g in ((8, 1, 29.63), (8, 0, 29.4), (2, 1, 29.1), (2, 0, 35.0), (4, 1, 29.6), (16, 1, 29.0))]
    d = derive({"groups": {"dsm_bulk": {"cases": cases, "rounds": 400}}})
    assert d.values == {"dsm_bulk_bandwidth_gbps_per_sm": {2: 29.1, 4: 29.6, 8: 29.6, 16: 29.0}}
    assert any("cs 8 all-to-all 29.6, cs 8 one peer 29.4" in n for n in d.notes)
    # a table the hardware file could not load (a cluster size missing) is not written
    partial = derive({"groups": {"dsm_bulk": {"cases": [c for c in cases if c["cluster_size"] != 16]}}})
    assert not partial.values and any("incomplete ([2, 4, 8])" in n for n in partial.notes)


def test_icache_and_kernel_start_are_notes() -> None:
    """icache and kernel_start write no field: each case's cold / warm / L2-only code time, and each mode's
    first-data time, are in the notes."""
    from fusesim.calibrate.derive import derive

    code = {"cases": [{"case": "straight_4096", "cold": {"ns_median": 4864.0}, "warm": {"ns_median": 4928.0},
                       "l2": {"ns_median": 4944.0}}]}
    start = {"cases": [{"mode": "tma", "data": "cold", "landed_ns_median": 800.0},
                       {"mode": "bulk", "data": "l2", "landed_ns_median": 480.0}]}
    d = derive({"groups": {"icache": code, "kernel_start": start}})
    assert not d.values
    assert any(n.startswith("icache") and "straight_4096: 4864 / 4928 / 4944" in n for n in d.notes)
    assert any(n.startswith("kernel_start") and "tma (cold data) 800, bulk (l2 data) 480" in n for n in d.notes)


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_microbenchmarks_compile_for_sm90a(tmp_path: Path) -> None:
    """calib.cu (every group's kernels) builds for sm_90a here, so a microbenchmark that does not
    compile never reaches the GPU; ptxas reports the new groups' kernels."""
    from fusesim.calibrate.runner import build

    binary, ptxas = build(tmp_path)
    assert binary.exists() and binary.stat().st_size > 0
    for kernel in ("k_l2_bulk", "k_dsm_bulk", "k_l2_read", "k_dsm_bw", "k_code", "k_start"):
        assert kernel in ptxas


# ---- carrying the H200's generated-kernel mechanisms to the other GH100 parts (fusesim.calibrate.carry) ----
def test_shipped_gh100_files_carry_the_h200_mechanisms() -> None:
    """h100_sxm.yaml and h100_pcie.yaml hold exactly what `python3 -m fusesim.calibrate.carry` derives from
    h200.yaml (a re-fit there that is not carried fails here), and the SXM part, same clock, holds the same
    SM-clocked values."""
    from fusesim.calibrate.carry import CLOCKED_NS, MECHANISMS, main

    assert main(["--check"]) == 0
    h200, sxm = load_hardware(ROOT / "hw_configs/h200.yaml"), load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    assert all(getattr(sxm, k) == getattr(h200, k) for k in CLOCKED_NS)
    assert all(getattr(sxm, k) is not None for k in MECHANISMS if getattr(h200, k) is not None)


def test_carry_scales_by_clock_and_l2_and_rewrites_in_place(tmp_path: Path) -> None:
    from fusesim.calibrate.carry import MARK, derive, rewrite
    from fusesim.yamlio import read_mapping

    source = read_mapping(ROOT / "hw_configs/h200.yaml")
    text = rewrite((ROOT / "hw_configs/h100_pcie.yaml").read_text(), {})  # a GH100 file without them
    assert "tma_refill_ns" not in text
    # for a part with half the H200's clock and a quarter of its L2 bandwidth
    target = {**yaml.safe_load(text), "clock_mhz": 990, "l2_bandwidth_gbps": source["l2_bandwidth_gbps"] / 4}
    carried = derive(source, target)
    assert carried["tma_refill_ns"][0] == pytest.approx(2 * source["tma_refill_ns"], abs=0.1)  # SM-clocked latency
    assert carried["wgmma_stage_handshake_ns"][0][2] == pytest.approx(2 * source["wgmma_stage_handshake_ns"][2], abs=0.1)
    assert carried["l2_fragment_reduction_gbps_per_sm"][0] == pytest.approx(source["l2_fragment_reduction_gbps_per_sm"] / 2,
                                                                            abs=0.1)
    assert carried["l2_reduction_bandwidth_gbps"][0] == pytest.approx(source["l2_reduction_bandwidth_gbps"] / 4, abs=0.1)
    assert carried["kernel_start_us"][0] == source["kernel_start_us"]  # the front end: unscaled
    assert all(p.startswith(MARK) for _v, p in carried.values())
    once = rewrite(text, carried)
    assert rewrite(once, carried) == once  # idempotent: the old lines are replaced, not added to
    out = tmp_path / "a.yaml"
    out.write_text(once)
    hw = load_hardware(out)
    assert hw.tma_refill_ns == carried["tma_refill_ns"][0] and "tma_refill_ns" in hw.provenance
    assert [ln for ln in once.splitlines() if ln.startswith("#")] == [ln for ln in text.splitlines() if ln.startswith("#")]
