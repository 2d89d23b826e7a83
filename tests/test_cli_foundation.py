from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fusesim", *args], capture_output=True, text=True, cwd=cwd)


def test_help_lists_commands() -> None:
    r = cli("--help")
    assert r.returncode == 0
    for name in ("list", "show"):
        assert name in r.stdout


def test_list_json() -> None:
    r = cli("list", "--format", "json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert {h["name"] for h in d["hardware"]} >= {"h100_sxm", "h200", "h100_pcie", "a100_sxm"}
    assert any(w["name"] == "paper-gemm-chains" for w in d["workloads"])


def test_show_workload_table_has_every_case() -> None:
    r = cli("show", "workloads/paper_gemm_chains.yaml", "--hw", "hw_configs/h100_sxm.yaml")
    assert r.returncode == 0, r.stderr
    for i in range(1, 11):
        assert f"G{i} " in r.stdout
    assert "floor us" in r.stdout and "GFLOP" in r.stdout


def test_show_workload_json_values() -> None:
    r = cli("show", "workloads/paper_conv_chains.yaml", "--hw", "hw_configs/h200.yaml", "--format", "json")
    d = json.loads(r.stdout)
    c5 = next(c for c in d["cases"] if c["case"] == "C5")
    assert (c5["m"], c5["n"], c5["k"], c5["l"]) == (3136, 64, 576, 256)
    assert c5["floor_us"] > 0


def test_show_hardware() -> None:
    r = cli("show", "hw_configs/h200.yaml", "--format", "json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["derived"]["max_active_clusters_1_block_per_sm"]["16"] == 7


def _bad(tmp_path: Path, name: str, data: dict | str) -> subprocess.CompletedProcess:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return cli("show", str(p))


def test_bad_workload_one_line_exit_2(tmp_path: Path) -> None:
    r = _bad(tmp_path, "w.yaml", {"cases": [{"id": "G1", "kind": "ffn", "m": -1, "n": 1, "k": 1, "l": 1}]})
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "w.yaml" in lines[0] and "case G1" in lines[0] and "field m" in lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_yaml_syntax_error(tmp_path: Path) -> None:
    r = _bad(tmp_path, "w.yaml", "cases: [ {id: G1, kind: ffn\n")
    assert r.returncode == 2 and "YAML syntax error" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bad_hardware_exit_2(tmp_path: Path) -> None:
    d = yaml.safe_load((ROOT / "hw_configs" / "h100_sxm.yaml").read_text())
    d["max_cluster_size"] = 8
    r = _bad(tmp_path, "hw.yaml", d)
    assert r.returncode == 2 and "field dsm_push_bandwidth_gbps_per_sm" in r.stderr


def test_missing_file_exit_2() -> None:
    r = cli("show", "nope.yaml")
    assert r.returncode == 2 and "nope.yaml" in r.stderr


def test_unknown_subcommand_exit_2() -> None:
    r = cli("frobnicate")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_bench_plans_file_checked_before_any_build(tmp_path: Path) -> None:
    """`bench --plans file:X`: a missing or malformed plans file, or an unknown source, is one line, exit 2 and no
    result file -- before torch is imported or a kernel is built (so this runs on a machine with neither)."""
    (tmp_path / "bad.json").write_text('{"G1": [')
    (tmp_path / "list.json").write_text("[]")
    out = tmp_path / "r.json"
    base = ("bench", "workloads/paper_gemm_chains.yaml", "--hw", "hw_configs/h200.yaml", "--out", str(out))
    for plans, says in ((f"file:{tmp_path / 'nope.json'}", "nope.json: no such file"),
                        (f"file:{tmp_path / 'bad.json'}", "bad.json: JSON syntax error"),
                        (f"file:{tmp_path / 'list.json'}", "list.json: top level must be a mapping"),
                        ("planer", "field --plans")):
        r = cli(*base, "--plans", plans)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not out.exists()


def test_bench_without_a_hopper_gpu_is_one_line_before_any_build(tmp_path: Path) -> None:
    """On a machine that cannot run the kernels (no torch, no CUDA GPU, not sm_90, no nvcc) bench says why in one
    line, exit 2, and writes nothing: no result, no scratch folder, no kernel built."""
    from fusesim.gpu.env import hopper_missing

    why = hopper_missing()
    if why is None:
        pytest.skip("this machine runs the kernels")
    out = tmp_path / "r.json"
    r = cli("bench", "workloads/paper_gemm_chains.yaml", "--hw", "hw_configs/h200.yaml", "--case", "G1",
            "--out", str(out))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"fusesim: error: this machine: {why}: ") and "fusesim codegen" in r.stderr
    assert not out.exists() and not (tmp_path / ".bench_work").exists() and r.stdout == ""


def test_unwritable_outputs_are_one_line_before_any_work(tmp_path: Path) -> None:
    """Every command that writes names an output it cannot write (under a file, or a folder given for a file and
    a file for a folder) in one line, exit 2, before it computes anything -- and leaves nothing behind."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    under = str(blocker / "sub" / "out")
    wl, hw = "workloads/paper_gemm_chains.yaml", "hw_configs/h200.yaml"
    runs = {
        "--out": [("bench", wl, "--hw", hw, "--case", "G1", "--out", under + ".json"),
                  ("calibrate", "--from", "results/h200/calibration.json", "--out", under + ".yaml"),
                  ("roofline", wl, "--hw", hw, "--case", "G1", "--out", under + ".png"),
                  ("codegen", wl, "--hw", hw, "--case", "G1", "--out", under),
                  ("codegen", wl, "--hw", hw, "--case", "G1", "--out", str(blocker)),
                  ("sweep", "--hw", "h100_sxm", "--vary", "max_cluster_size=4,8", "--workloads", "paper_gemm_chains",
                   "--case", "G1", "--out", under + ".csv"),
                  ("bench", wl, "--hw", hw, "--case", "G1", "--out", str(tmp_path))],
        "--trace": [("simulate", wl, "--hw", hw, "--case", "G1", "--trace", under + ".json"),
                    ("simulate", wl, "--hw", hw, "--case", "G1", "--trace", str(tmp_path))],
        "--csv": [("validate", "--measured", "results/h200/final11_paper_gemm_chains.json", "--hw", hw,
                   "--csv", under + ".csv")],
    }
    for flag, cmds in runs.items():
        for args in cmds:
            r = cli(*args)
            assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
            assert f"field {flag}: " in r.stderr and ("not a folder" in r.stderr or "is a folder" in r.stderr or
                                                      "is a file" in r.stderr), (args, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_plan_table_with_a_case_rejected_before_the_search(tmp_path: Path) -> None:
    """A case the planner rejects up front (N not a multiple of 16) ran no pruning rule; the rules table
    once indexed its empty row and ended in a traceback."""
    wl = tmp_path / "mixed.yaml"
    wl.write_text(yaml.safe_dump({"name": "mixed", "cases": [
        {"id": "odd", "kind": "gemm_chain", "m": 100, "n": 3000, "k": 512, "l": 512},
        {"id": "ok", "kind": "gemm_chain", "m": 128, "n": 256, "k": 512, "l": 64}]}))
    r = cli("plan", str(wl), "--hw", "h100_sxm", "--rank", "cost")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith(("odd ", "ok "))}
    assert set(rows) == {"odd", "ok"}
    assert "(-" not in rows["odd"] and "(-" in rows["ok"]  # the rejected case's rule cells are "-"
    assert "N = 3000 not a multiple of 16" in r.stdout


def test_plans_respect_the_thread_limit_of_the_hardware_file(tmp_path: Path) -> None:
    """The generator's wgmma enumerations fix their threads (256, 384); on a machine with 64 threads per
    block they are not candidates (the simulator once raised on them: an internal error)."""
    raw = yaml.safe_load((ROOT / "hw_configs" / "h100_sxm.yaml").read_text())
    raw["max_threads_per_block"] = 64
    hw = tmp_path / "threads64.yaml"
    hw.write_text(yaml.safe_dump(raw))
    r = cli("simulate", "workloads/paper_gemm_chains.yaml", "--hw", str(hw), "--case", "G3", "--format", "json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["results"]
    assert len(res) == 3 and all("infeasible" in x or x["time_us"] > 0 for x in res)
    from fusesim.hardware import load_hardware
    from fusesim.planner import plan_case
    from fusesim.workload import load_workload

    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G3"])[0]
    found = plan_case(chain, load_hardware(hw), top_k=3)
    plans = [sp.plan for sps in found.plans.values() for sp in sps]
    assert all(k.threads <= 64 for p in plans for k in p.kernels)


def test_codegen_writes_each_strategy_named(tmp_path: Path) -> None:
    r = cli("codegen", "workloads/paper_gemm_chains.yaml", "--hw", "h100_sxm", "--case", "G2", "--strategy", "unfused",
            "--strategy", "dsm", "--no-harness", "--format", "json", "--out", str(tmp_path / "cg"))
    assert r.returncode == 0, r.stderr
    assert sorted(f["strategy"] for f in json.loads(r.stdout)["files"]) == ["dsm", "unfused"]


def test_simulate_counts_the_outputs_write_back_and_prints_whole_reasons(tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(yaml.safe_dump({"name": "w", "cases": [
        {"id": "odd", "kind": "gemm_chain", "m": 100, "n": 3000, "k": 512, "l": 512},
        {"id": "ok", "kind": "gemm_chain", "m": 128, "n": 256, "k": 512, "l": 64}]}))
    r = cli("simulate", str(wl), "--hw", "h100_sxm", "--rank", "cost", "--format", "json")
    assert r.returncode == 0, r.stderr
    ok = [x for x in json.loads(r.stdout)["results"] if x["case"] == "ok"]
    e_bytes = 128 * 64 * 2  # E, written back after the last kernel (a fused plan's split workspace too)
    assert [x["drain_bytes"] for x in ok if x["strategy"] == "unfused"] == [e_bytes]
    assert all(x["drain_bytes"] >= e_bytes for x in ok)
    t = cli("simulate", str(wl), "--hw", "h100_sxm", "--rank", "cost")
    reason = "N = 3000 not a multiple of 16: kernels tile N, K and L exactly in 16-wide MMA steps (only M is predicated)"
    assert f"  odd unfused: infeasible: {reason}" in t.stdout.splitlines()


def test_simulate_refuses_one_case_id_in_two_files(tmp_path: Path) -> None:
    """Rows and speedups are keyed by case id: the same id from two files printed two look-alike rows and
    mixed their speedups."""
    copy = tmp_path / "copy.yaml"
    copy.write_text((ROOT / "workloads" / "paper_gemm_chains.yaml").read_text())
    r = cli("simulate", "workloads/paper_gemm_chains.yaml", str(copy), "--hw", "h100_sxm", "--case", "G1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "copy.yaml: case G1: field id" in r.stderr and r.stdout == ""


def test_a_file_of_the_wrong_kind_or_a_folder_is_named_as_such(tmp_path: Path) -> None:
    cases = [(("show", str(tmp_path)), "a folder, not a file"),
             (("simulate", "hw_configs/h100_sxm.yaml", "--hw", "h100_sxm"), "a hardware file (it has sm_count), not a workload"),
             (("simulate", "workloads/paper_gemm_chains.yaml", "--hw", "workloads/paper_gemm_chains.yaml"),
              "a workload (it has cases), not a hardware file")]
    for args, says in cases:
        r = cli(*args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert says in r.stderr, (args, r.stderr)


def test_codegen_for_a_machine_without_wgmma_says_the_kernels_are_hopper_only(tmp_path: Path) -> None:
    r = cli("codegen", "workloads/paper_gemm_chains.yaml", "--hw", "a100_sxm", "--case", "G2", "--no-harness",
            "--out", str(tmp_path / "cg"))
    assert r.returncode == 0, r.stderr
    assert "target sm_90a (Hopper) only; a100_sxm has no wgmma" in r.stderr
    quiet = cli("codegen", "workloads/paper_gemm_chains.yaml", "--hw", "h100_sxm", "--case", "G2", "--no-harness",
                "--out", str(tmp_path / "cg2"))
    assert quiet.returncode == 0 and "note:" not in quiet.stderr


def test_a_plan_file_round_trips_through_simulate_and_codegen(tmp_path: Path) -> None:
    """codegen writes each kernel's plan beside it; that file, hand-edited or not, simulates to the time simulate
    gives the case, and generates the same kernel source."""
    first = tmp_path / "first"
    r = cli("codegen", "workloads/paper_gemm_chains.yaml", "--hw", "h200", "--case", "G2", "--strategy", "dsm",
            "--no-harness", "--out", str(first))
    assert r.returncode == 0, r.stderr
    plan_file = next(first.glob("G2_dsm_*.plan.json"))
    by_plan = cli("simulate", "--plan", str(plan_file), "--hw", "h200", "--format", "json")
    by_case = cli("simulate", "workloads/paper_gemm_chains.yaml", "--case", "G2", "--strategy", "dsm", "--hw", "h200",
                  "--format", "json")
    assert by_plan.returncode == 0 and by_case.returncode == 0, (by_plan.stderr, by_case.stderr)
    (a,), (b,) = json.loads(by_plan.stdout)["results"], json.loads(by_case.stdout)["results"]
    assert a["time_us"] == b["time_us"] > 0 and a["plan"] == b["plan"]
    again = tmp_path / "again"
    r = cli("codegen", "--plan", str(plan_file), "--hw", "h200", "--no-harness", "--out", str(again))
    assert r.returncode == 0, r.stderr
    cu = next(first.glob("G2_dsm_*.cu"))
    assert (again / cu.name).read_text() == cu.read_text()
    both = cli("simulate", "workloads/paper_gemm_chains.yaml", "--plan", str(plan_file), "--hw", "h200")
    assert both.returncode == 2 and "not both" in both.stderr
    other = json.loads(plan_file.read_text())
    other["chain"]["m"] = 100  # another problem under the same case id: its speedup would compare the two
    other_file = tmp_path / "m100.json"
    other_file.write_text(json.dumps(other))
    mixed = cli("simulate", "--plan", str(plan_file), "--plan", str(other_file), "--hw", "h200")
    assert mixed.returncode == 2 and "m100.json: case G2: field chain" in mixed.stderr


def test_show_plan_says_whether_the_generator_builds_it(tmp_path: Path) -> None:
    r = cli("codegen", "workloads/paper_gemm_chains.yaml", "--hw", "h200", "--case", "G2", "--strategy", "dsm",
            "--no-harness", "--out", str(tmp_path / "cg"))
    assert r.returncode == 0, r.stderr
    plan = json.loads(next((tmp_path / "cg").glob("*.plan.json")).read_text())
    ok = json.loads(cli("show", str(next((tmp_path / "cg").glob("*.plan.json"))), "--hw", "h200",
                        "--format", "json").stdout)
    assert ok["valid"] and ok["buildable"] and ok["not_buildable_because"] is None
    plan["stages"] = 1
    plan["kernels"][0]["stages"] = 1
    edited = tmp_path / "one_stage.json"
    edited.write_text(json.dumps(plan))  # fits SMEM, so valid on the machine; the pipeline needs 2 stages
    r = cli("show", str(edited), "--hw", "h200")
    assert r.returncode == 0 and "the generator cannot build it: stages = 1" in r.stdout


def test_roofline_notes_measured_points_from_another_gpu(tmp_path: Path) -> None:
    from fusesim.stored import read_json

    doc = read_json(ROOT / "results" / "h200" / "final11_paper_gemm_chains.json")
    doc["cases"] = [c for c in doc["cases"] if c["case"] == "G1"]
    doc["env"]["gpu"] = "NVIDIA H100 80GB HBM3"
    (tmp_path / "h100.json").write_text(json.dumps(doc))
    r = cli("roofline", "workloads/paper_gemm_chains.yaml", "--hw", "h200", "--case", "G1", "--measured",
            str(tmp_path / "h100.json"), "--out", str(tmp_path / "r.png"))
    assert r.returncode == 0, r.stderr
    assert "note: the kernels were measured on NVIDIA H100 80GB HBM3, plotted against h200" in r.stderr
