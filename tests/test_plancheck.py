from __future__ import annotations

import json
from pathlib import Path

import pytest

from fusesim.errors import InputError
from fusesim.hardware import load_hardware
from fusesim.plan import ClusterShape, Kernel, Placement, Plan, Schedule, Tiles
from fusesim.plancheck import check_plan, load_plan, plan_problems
from fusesim.planner.dsm_comm import dsm_steps
from fusesim.workload import Chain

ROOT = Path(__file__).resolve().parents[1]
H100 = load_hardware(ROOT / "hw_configs" / "h100_sxm.yaml")
A100 = load_hardware(ROOT / "hw_configs" / "a100_sxm.yaml")


def dsm_plan(**kw) -> Plan:
    chain = Chain("G4", "ffn", 128, 3072, 768, 768, "gelu", False)
    tiles = Tiles(64, 128, 64, 192)
    base = dict(
        case_id="G4", chain=chain, strategy="dsm", schedule=Schedule("MNLK", "MN"),
        cluster=ClusterShape(1, 4, 1, 4), tiles=tiles, grid_m=2, n_split=3, n_passes=2, stages=3,
        threads=256, instruction="mma_sync", gated_mode="none", placement=Placement(C="dsm"),
        dsm_comm=dsm_steps(ClusterShape(1, 4, 1, 4), tiles, 2, 3, "none", 2),
        kernels=(Kernel("fused", "fused", 24, 4, 256, 150_000, tiles, 3),),
    )
    base.update(kw)
    return Plan(**base)


def test_valid_plan_has_no_problems() -> None:
    assert plan_problems(dsm_plan(), H100) == []


@pytest.mark.parametrize("change,field", [
    (dict(cluster=ClusterShape(1, 32, 1, 32)), "cluster"),
    (dict(tiles=Tiles(64, 96, 64, 192)), "tiles.block_n"),
    (dict(tiles=Tiles(64, 128, 64, 128)), "tiles.block_l"),
    (dict(grid_m=1), "grid_m"),
    (dict(strategy="smem"), "cluster"),
    (dict(gated_mode="sequential"), "gated_mode"),
    (dict(stages=0), "stages"),
])
def test_each_violation_is_named(change: dict, field: str) -> None:
    fields = [f for f, _ in plan_problems(dsm_plan(**change), H100)]
    assert field in fields


def test_smem_overflow_named() -> None:
    p = dsm_plan()
    k = p.kernels[0]
    p = p.with_(kernels=(Kernel(k.name, k.op, k.grid_blocks, k.cluster_size, k.threads, 300_000, k.tiles, 3),))
    with pytest.raises(InputError) as ei:
        check_plan(p, H100, "p.json")
    assert ei.value.field == "kernels[0].smem_bytes" and ei.value.case == "G4"


def test_no_clusters_on_a100() -> None:
    fields = [f for f, _ in plan_problems(dsm_plan(), A100)]
    assert "cluster" in fields and "instruction" not in fields


def test_load_plan_type_errors(tmp_path: Path) -> None:
    d = dsm_plan().to_dict()
    d["tiles"]["block_n"] = "wide"
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError) as ei:
        load_plan(str(p), H100)
    assert ei.value.field == "tiles.block_n"
    p.write_text(json.dumps({"strategy": "dsm"}))
    with pytest.raises(InputError, match="missing") as ei:
        load_plan(str(p), H100)
    assert ei.value.field == "case_id"
    p.write_text(dsm_plan().to_json())
    assert load_plan(str(p), H100) == dsm_plan()


@pytest.mark.parametrize("case", ["G1", "G3"])
def test_the_planners_own_plans_pass_the_check(case: str) -> None:
    """G1 (K = 32) and G3 (K = 416) end their single K slice in a tile the fused_wgmma template
    zero-fills; the check once rejected the plans `simulate` and `codegen` pick for them."""
    from fusesim.planner import plan_case
    from fusesim.workload import load_workload

    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select([case])[0]
    found = plan_case(chain, H100, top_k=1, rank="simulated")
    assert sorted(found.plans) == ["dsm", "smem", "unfused"]
    for strategy, sps in found.plans.items():
        assert plan_problems(sps[0].plan, H100) == [], (strategy, sps[0].plan.summary())


def test_stages_beyond_smem_named_even_with_the_recorded_size_unchanged() -> None:
    from fusesim.planner import best_plan
    from fusesim.workload import load_workload

    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G9"])[0]
    plan = best_plan(chain, H100, "dsm")
    deep = plan.with_(stages=40)  # kernels[0].smem_bytes still the 6-stage layout's
    assert deep.kernels[0].smem_bytes == plan.kernels[0].smem_bytes
    assert [f for f, _ in plan_problems(deep, H100)] == ["stages"]


def _edit(d: dict, path: str, value) -> dict:
    node = d
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return d


@pytest.mark.parametrize("strategy,path,value,field", [
    ("dsm", "stages", 2, "kernels[0].stages"),  # codegen read the top level, the simulator the kernel's
    ("dsm", "kernels.0.cluster_size", 4, "kernels[0].cluster_size"),
    ("dsm", "threads", 0, "kernels[0].threads"),
    ("dsm", "dsm_comm", [], "dsm_comm"),  # the simulator trusted the steps, the generator ignores them
    ("dsm", "dsm_comm.0.bytes_per_block", 10**12, "dsm_comm"),
    ("dsm", "stage", 2, "stage"),  # a typo was ignored
    ("dsm", "dsm_comm.0.foo", 1, "dsm_comm[0].foo"),
    ("dsm", "case_id", "X9", "case_id"),
    ("dsm", "chain.dtype", "fp8", "chain.dtype"),  # the simulator raised KeyError
    ("dsm", "chain.activation", "banana", "chain.activation"),
    ("dsm", "chain.gated", True, "chain.gated"),
    ("dsm", "chain.m", 2**40, "chain.m"),  # past the element limit workload files get
    ("unfused", "kernels.0.grid_blocks", 999, "kernels[0].grid_blocks"),  # the simulator raised IndexError
    ("unfused", "grid_m", -3, "grid_m"),
    ("smem", "strategy", "unfused", "kernels"),  # the cost model raised on unpacking the kernels
])
def test_hand_edits_that_make_a_plan_inconsistent_are_named(tmp_path: Path, strategy: str, path: str, value,
                                                            field: str) -> None:
    from fusesim.planner import plan_case
    from fusesim.workload import load_workload

    h200 = load_hardware(ROOT / "hw_configs" / "h200.yaml")
    chain = load_workload(ROOT / "workloads" / "paper_gemm_chains.yaml").select(["G2"])[0]
    plan = plan_case(chain, h200, strategies=(strategy,), top_k=1).plans[strategy][0].plan
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(_edit(json.loads(plan.to_json()), path, value)))
    with pytest.raises(InputError) as ei:
        load_plan(str(p), h200)
    assert ei.value.field == field, ei.value
    p.write_text(plan.to_json())
    assert load_plan(str(p), h200) == plan
