from __future__ import annotations

from fusesim.plan import ClusterShape, DsmStep, Kernel, Placement, Plan, Schedule, Tiles
from fusesim.workload import Chain, ConvGeom


def test_paper_cluster_geometries() -> None:
    a = ClusterShape(2, 4, 2, 4)
    assert (a.size, a.shuffle, a.reduce) == (16, 2, 2) and a.is_consistent()
    b = ClusterShape(2, 4, 2, 8)
    assert (b.size, b.shuffle, b.reduce) == (16, 4, 1) and b.is_consistent()
    assert not ClusterShape(1, 2, 4, 2).is_consistent()  # cls_l < cls_k


def test_plan_round_trips_json_and_yaml() -> None:
    chain = Chain("C5", "conv_chain", 3136, 64, 576, 256, "relu", False, "bf16", ConvGeom(1, 56, 56, 64, 3))
    tiles = Tiles(64, 64, 64, 128)
    plan = Plan(
        case_id="C5", chain=chain, strategy="dsm", schedule=Schedule("MNLK", "MN"),
        cluster=ClusterShape(1, 2, 1, 2), tiles=tiles, grid_m=49, n_split=1, n_passes=1, stages=3,
        threads=256, instruction="mma_sync", gated_mode="none", placement=Placement(C="dsm"),
        dsm_comm=(DsmStep("dsm_shuffle", "ring", 2, 1, 8192, "dsm"),),
        kernels=(Kernel("fused", "fused", 98, 2, 256, 100_000, tiles, 3),), notes=("x",),
    )
    assert Plan.from_json(plan.to_json()) == plan
    assert Plan.from_yaml(plan.to_yaml()) == plan
    assert plan.to_dict()["cluster"]["shuffle"] == 2
