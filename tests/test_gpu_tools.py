"""CPU-side checks of the GPU tooling: what the sanitizer run covers, how ncu rows map to plans."""

from __future__ import annotations

from pathlib import Path

from fusesim.capability import can_build, fused_wgmma_layout
from fusesim.codegen import generate
from fusesim.gpu.ncu import METRICS, SMEM_METRICS, SMEM_OPS, _summed, smem_compact, smem_table, so_kernel_stem
from fusesim.gpu.sanitize import TOOLS, family_plans
from fusesim.stored import glob_json, read_json


def test_sanitizer_covers_every_family_and_cluster_size() -> None:
    plans = family_plans()
    assert all(can_build(p)[0] for p in plans.values())
    assert {p.cluster.size for p in plans.values()} == {1, 2, 4, 8, 16}
    assert {p.strategy for p in plans.values()} == {"unfused", "smem", "dsm"}
    assert {p.instruction for p in plans.values()} == {"mma_sync", "wgmma"}
    wg = [p for p in plans.values() if p.instruction == "wgmma"]
    tiles = [-(-p.chain.m // k.tiles.block_m) * ((p.chain.n, p.chain.l)[i] // k.tiles.block_n)
             for p in wg for i, k in enumerate(p.kernels)]
    blocks = [k.grid_blocks for p in wg for k in p.kernels]
    assert any(b > t for b, t in zip(blocks, tiles, strict=True))  # split-K runs under the sanitizer
    forms = {s.primitive for p in plans.values() for s in p.dsm_comm}
    assert forms == {"dsm_all_exchange", "dsm_shuffle", "dsm_reduce_scatter", "inter_cluster_reduce"}
    # the reduce-scatter whose receive slots live in the drained ring, on one cluster and on four (its
    # inter_cluster_reduce after the reduce-scatter)
    aliased = [p for p in wg if p.strategy != "unfused" and fused_wgmma_layout(p).receive_aliased]
    assert sorted(p.kernels[0].grid_blocks for p in aliased) == [8, 32]
    assert all(p.cluster.size == 8 for p in aliased)
    assert [s.primitive for s in max(aliased, key=lambda p: p.kernels[0].grid_blocks).dsm_comm][-1] == \
        "inter_cluster_reduce"
    assert set(TOOLS) == {"memcheck", "racecheck", "synccheck"}


def test_ncu_rows_map_to_their_plan_by_kernel_name() -> None:
    plan = family_plans()["gemm (unfused, gated, predicated M), cluster 1"]
    src = generate(plan)
    stem = so_kernel_stem(f"/cache/{src.name}_0123456789abcdef.so")
    assert stem == src.name
    names = [f"fs_gemm0_{src.name}", f"fs_gemm1_{src.name}"]
    assert all(f"{n}(" in src.code for n in names)
    launches = [{"name": n, **{m: 10.0 * (i + 1) for m in METRICS}} for i, n in enumerate(names)]
    got = _summed([k for k in launches if k["name"].endswith(stem)], "cmd")
    assert got["dram__bytes_read.sum"] == 30.0 and got["kernels"] == names


def test_smem_audit_reports_conflict_share_and_cost_per_family() -> None:
    """`ncu --smem`'s table: a fused_wgmma kernel whose stores take twice their ideal wavefronts shows a
    0.50 conflict share for st, and the conflicts' cost as a share of its duration (1,980 conflict wavefronts
    per SM at 1.98 GHz = 1 us of a 10 us kernel: 10%)."""
    plan = family_plans()["fused_wgmma (exchange shuffle reduce), cluster 8"]
    wave_st, conf_st = SMEM_OPS["st"]
    k = {m: 0.0 for m in SMEM_METRICS} | {"name": "fs_fused_x", wave_st: 2.0 * 1980 * 132, conf_st: 1980.0 * 132,
                                        "gpu__time_duration.sum": 10_000.0}
    row = {"strategy": plan.strategy, "summary": plan.summary(), "plan": plan.to_dict(), "time": {},
           "ncu_smem": {"per_kernel": [k]}, "verify": {"ok": True}}
    doc = smem_compact({"cases": [{"case": "t", "plans": [row, {"strategy": "smem"}]}], "ncu_smem": {"what": "x"}})
    assert len(doc["cases"][0]["plans"]) == 1 and "verify" not in doc["cases"][0]["plans"][0]
    line = next(x for x in smem_table(doc) if x.startswith("fused_wgmma fused"))
    assert "0.50 0.50" in line and "10.00%" in line


def test_a_plan_listed_twice_counts_one_launch_of_each_kernel() -> None:
    """`--all` launches each distinct kernel once; a block's bytes are one launch of each of the plan's
    kernels, and the committed bench files hold no row whose counters repeat a kernel."""

    from fusesim.gpu.ncu import first_launch_of_each

    a = {"name": "fs_fwg_C1_smem_x", "dram__bytes_read.sum": 10.0}
    b = {"name": "fs_fwg_C1_smem_x", "dram__bytes_read.sum": 12.0}
    g0, g1 = {"name": "fs_wgmma0_C1_unfused_y", "dram__bytes_read.sum": 1.0}, {"name": "fs_wgmma1_C1_unfused_y"}
    assert first_launch_of_each([a, b]) == [a]
    assert first_launch_of_each([g0, g1, g0]) == [g0, g1]
    assert _summed(first_launch_of_each([a, b]), "cmd", ("dram__bytes_read.sum",))["dram__bytes_read.sum"] == 10.0
    root = Path(__file__).resolve().parents[1] / "results" / "h200"
    for f in glob_json(root / "*_paper_*.json"):
        for case in read_json(f).get("cases", []):
            for row in case.get("plans", []):
                kernels = (row.get("ncu") or {}).get("kernels", [])
                assert len(kernels) == len(set(kernels)), (f.name, case["case"], kernels)


def test_ncu_rebuilds_the_kernels_a_run_recorded_with_the_switches_it_recorded(tmp_path, monkeypatch) -> None:
    """`ncu --all` profiles the kernels a bench file timed: built under its "codegen" block (the aliased
    reduce-scatter plan renders differently with fused_producer_early_wait on and off), under
    FRAGMENT_EPILOGUE without one, and its block records the switches it built with."""
    import json

    import fusesim.codegen.build as build_mod
    import fusesim.gpu.env as env_mod
    import fusesim.gpu.ncu as ncu_mod
    from fusesim.capability import FRAGMENT_EPILOGUE, codegen_switches, generator_switches
    from fusesim.codegen.handplans import representative_plans

    plan = representative_plans()["fused_wgmma_reduce_receive_aliased"]
    built: list[str] = []

    def fake_build(src, mode):  # noqa: ANN001, ANN202 - the cache's signature
        built.append(src.digest)
        return tmp_path / f"{src.name}_{src.digest}.so"

    def fake_ncu(cmd, timeout_s, metrics):  # noqa: ANN001, ANN202
        spec = read_json(cmd[cmd.index("--launch-many") + 1])
        return [{"name": "fs_fused_" + so_kernel_stem(s["so"]), **{m: 1.0 for m in metrics}} for s in spec], ""

    monkeypatch.setattr(build_mod, "build", fake_build)
    monkeypatch.setattr(ncu_mod, "_run_ncu", fake_ncu)
    monkeypatch.setattr(ncu_mod.shutil, "which", lambda _: "/usr/bin/ncu")
    monkeypatch.setattr(env_mod, "environment", lambda argv=None: {})
    off = {**codegen_switches(), "fused_producer_early_wait": False}
    on = {**codegen_switches(), "fused_producer_early_wait": True}
    digests = []
    for recorded in (off, on, None):
        doc = {"cases": [{"case": "ta", "chain": {}, "plans": [
            {"strategy": "dsm", "verify": {"ok": True}, "plan": plan.to_dict()}]}]}
        if recorded is not None:
            doc["codegen"] = recorded
        bench = tmp_path / "bench.json"
        bench.write_text(json.dumps(doc))
        built.clear()
        assert ncu_mod._all_from_bench(str(bench), str(tmp_path / "out.json"), ("dsm",), tmp_path / "w") == 0
        with generator_switches(recorded or FRAGMENT_EPILOGUE):
            assert built == [generate(plan).digest]
            out = read_json(tmp_path / "out.json")
            assert out["ncu"]["codegen"] == codegen_switches()
            assert out["cases"][0]["plans"][0]["ncu"]["dram__bytes_read.sum"] == 1.0
        digests += built
    assert len(set(digests)) == 3  # three different kernels: the switches reached the generator
