"""Planner: pruning-rule counts on hand-checked spaces, analyzer bytes by hand, capacity properties,
paper cases on the shipped machines, JSON round trip, the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusesim.capability import fused_layout, fused_wgmma_layout
from fusesim.hardware import CLUSTER_TABLES, Hardware, hardware_from_dict, load_hardware
from fusesim.plan import ClusterShape, Plan, Tiles
from fusesim.plancheck import plan_problems
from fusesim.planner import Infeasible, analyze, best_plan, plan_case, predict
from fusesim.planner import footprint as fp
from fusesim.planner import rules as R
from fusesim.planner.dataflow import unfused_volumes
from fusesim.planner.dsm_comm import dsm_primitives, wire_bytes_per_round
from fusesim.planner.footprint import fused_smem_bytes
from fusesim.planner.search import make_fused_plan
from fusesim.planner.space import Space, dividing_tiles, loop_schedules
from fusesim.workload import Chain, load_workload
from fusesim.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]
PAPER = ("paper_gemm_chains", "paper_gated_ffn", "paper_conv_chains")


def hw_variant(base: str = "h100_sxm", max_cluster: int | None = None, **fields: object) -> Hardware:
    """A shipped machine with some fields changed (DSM tables cut to the new max cluster size)."""
    raw = read_mapping(ROOT / "hw_configs" / f"{base}.yaml")
    if max_cluster is not None:
        raw["max_cluster_size"] = max_cluster
        raw["portable_cluster_size"] = min(raw["portable_cluster_size"], max_cluster)
        for t in CLUSTER_TABLES:
            if raw.get(t) is not None:
                raw[t] = {k: v for k, v in raw[t].items() if int(k) <= max_cluster}
    raw.update(fields)
    return hardware_from_dict(raw)


def chain(m: int, n: int, k: int, l: int, gated: bool = False, cid: str = "t") -> Chain:  # noqa: E741
    return Chain(case_id=cid, kind="gated_ffn" if gated else "ffn", m=m, n=n, k=k, l=l,
                 activation="silu" if gated else "relu", gated=gated)


# ---- pruning rules on a hand-checked space ------------------------------------------------------
def test_41_schedules() -> None:
    s = loop_schedules()
    assert len(s) == 41
    by_spatial = [sum(1 for x in s if len(x.spatial) == r) for r in (1, 2, 3, 4)]
    assert by_spatial == [24, 12, 4, 1]


def test_paper_space_size_and_rule1_match_table_iii() -> None:
    """GPT-6.7B as the paper counts it (M=256): 2.75e13 candidates, 1.14e8 after rule 1."""
    sp = Space(chain(256, 16384, 4096, 4096), load_hardware(ROOT / "hw_configs/h100_sxm.yaml"))
    assert sp.count() == 41 * 625 * 16 * 1024 * 256 * 256
    s1 = R.tiles_divide(R.initial(sp))
    assert s1.count() == 41 * 625 * 5 * 11 * 9 * 9 == 114_159_375


def test_rules_small_space_exact_counts() -> None:
    """M=32, N=48, K=32, L=32 with clusters up to 2: every count by hand."""
    hw = hw_variant(max_cluster=2)
    sp = Space(chain(32, 48, 32, 32), hw)
    s = R.initial(sp)
    assert s.count() == 41 * 2**4 * (2 * 3 * 2 * 2)  # tiles: 16,32 | 16,32,48 | 16,32 | 16,32
    s = R.tiles_divide(s)
    assert s.tiles == {"M": (16, 32), "N": (16, 48), "K": (16, 32), "L": (16, 32)}
    assert s.count() == 41 * 16 * 16
    s = R.cluster_fits(s)
    # (cm,cn,ck) with product <= 2, cl with ck | cl | cn*ck: (1,1,1,1) (2,1,1,1) (1,2,1,1) (1,2,1,2) (1,1,2,2)
    assert sorted(map(tuple, s.clusters.tolist())) == [(1, 1, 1, 1), (1, 1, 2, 2), (1, 2, 1, 1), (1, 2, 1, 2),
                                                       (2, 1, 1, 1)]
    assert s.count() == 41 * 5 * 16
    s = R.k_innermost(s)
    assert len(s.schedules) == 10  # K temporal and last: 3*2 (1 spatial) + 3*1 (2 spatial) + 1 (3 spatial)
    s = R.l_not_spatial(s)
    assert {str(x) for x in s.schedules} == {"M|LNK", "M|NLK", "MN|LK", "N|LMK", "N|MLK"}
    assert s.count() == 5 * 5 * 16
    s = R.fits_capacity(s)
    assert s.count() == 5 * 5 * 16  # tiny tiles fit an H100 block


def test_rules_match_brute_force() -> None:
    """Rules 1-4 against a plain enumeration of every candidate of a small space."""
    hw = hw_variant(max_cluster=4)
    ch = chain(48, 64, 32, 48)
    vals = (1, 2, 4)
    sizes = {"M": 48, "N": 64, "K": 32, "L": 48}
    raw_tiles = {d: range(16, -(-v // 16) * 16 + 1, 16) for d, v in sizes.items()}
    counts = [0] * 5
    for sched in loop_schedules():
        for cm, cn, ck, cl in itertools.product(vals, repeat=4):
            for tiles in itertools.product(*(raw_tiles[d] for d in "MNKL")):
                counts[0] += 1
                if not all(v % t == 0 for v, t in zip((48, 64, 32, 48), tiles, strict=True)):
                    continue
                counts[1] += 1
                if cm * cn * ck > 4 or cl % ck or (cn * ck) % cl:
                    continue
                counts[2] += 1
                if not sched.temporal.endswith("K"):
                    continue
                counts[3] += 1
                if "L" in sched.spatial:
                    continue
                counts[4] += 1
    raw, after, _ = R.apply_rules(Space(ch, hw))
    # M=48 is predicated: rule 1 also keeps the power-of-two 32 (16 | 48 and 48 | 48 anyway)
    extra_m = len(dividing_tiles(48, "M")) / 2
    assert raw == counts[0]
    assert [c for _, c in after[:4]] == [int(x * extra_m) for x in counts[1:5]]


def test_rule5_removes_what_does_not_fit() -> None:
    """SMEM per block set to exactly the smallest fused footprint: only 16^4 tiles of non-talking
    clusters survive (the hand-computed 5120 B)."""
    assert fused_smem_bytes(16, 16, 16, 16, 1, 1, 2, False) == 16 * 20 * 4 + 16 * 24 * 2 + 2 * (2 * 16 * 24 * 2)
    hw = hw_variant(max_cluster=2, smem_per_block_bytes=5120)
    s = R.initial(Space(chain(32, 48, 32, 32), hw))
    for _, rule in R.RULES[:4]:
        s = rule(s)
    s5 = R.fits_capacity(s)
    assert s5.count() == 5 * 3  # clusters (1,1,1,1), (2,1,1,1), (1,2,1,1) x tiles 16,16,16,16


# ---- dataflow by hand ---------------------------------------------------------------------------
def _fused(ch: Chain, hw: Hardware, cl: tuple, t: tuple, grid_m: int, n_split: int, n_passes: int) -> Plan:
    row = dict(cm=cl[0], cn=cl[1], ck=cl[2], cl=cl[3], bm=t[0], bn=t[1], bk=t[2], bl=t[3], grid_m=grid_m,
               n_split=n_split, n_passes=n_passes, stages=2, threads=128, mode=1 if ch.gated else 0)
    return make_fused_plan(ch, hw, row, "mma_sync")


def test_analyze_fused_by_hand() -> None:
    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    ch = chain(128, 256, 64, 128)
    p = _fused(ch, hw, (1, 2, 1, 2), (128, 64, 32, 64), grid_m=1, n_split=2, n_passes=1)
    assert plan_problems(p, hw) == []
    v = analyze(p, hw)
    ws = 128 * 128 * 4  # the fp32 inter_cluster_reduce workspace, M x L
    # A x n_split*cls_n, B, D, and the last cluster's read of the fp32 tile
    assert v.l2_read == 128 * 64 * 2 * 2 * 2 + 64 * 256 * 2 + 256 * 128 * 2 + ws
    # 2 splits of fp32 red.adds, 4 blocks' ticket atomics + 2 ticket resets (grid_m * cluster size),
    # the last cluster's bf16 E and fp32 zeros into the workspace; no memset
    assert v.l2_write == 2 * ws + 4 * (4 + 2) + 128 * 128 * 2 + ws
    # everything fits L2: inputs and the workspace (in HBM, cold) are read once
    assert v.hbm_read == 128 * 64 * 2 + 64 * 256 * 2 + 256 * 128 * 2 + ws and v.hbm_write == 0
    # 4 blocks, one ring step of one bf16 slice each; the slice travels with its row padding (64 + 8)
    assert v.dsm == 4 * 128 * (64 + 8) * 2
    steps = {s.primitive: s for s in p.dsm_comm}
    assert set(steps) == {"dsm_shuffle", "inter_cluster_reduce"}
    assert steps["dsm_shuffle"].bytes_per_block == 128 * 64 * 2 and steps["dsm_shuffle"].times == 1
    assert steps["inter_cluster_reduce"].bytes_per_block == 128 * 64 * 4  # fp32 slice, block_l / cls_reduce wide


def test_analyze_l2_overflow_by_hand() -> None:
    """L2 of 40,000 B: E (32,768) first, the fp32 workspace (65,536) gets the 7,232 B left, so A
    (reused twice) misses on both streams, B and D stream once; the workspace's first touch misses
    and its 2 later touches (second split's red.add, the conversion read) miss for the 58,304 B not
    held, which are also written back."""
    hw = hw_variant(l2_bytes=40000)
    ch = chain(128, 256, 64, 128)
    p = _fused(ch, hw, (1, 2, 1, 2), (128, 64, 32, 64), grid_m=1, n_split=2, n_passes=1)
    v = analyze(p, hw)
    assert v.hbm_read == pytest.approx(2 * 16384 + 32768 + 65536 + 65536 + 2 * (65536 - 7232))
    assert v.hbm_write == pytest.approx(65536 - 7232)


def test_analyze_unfused_by_hand() -> None:
    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    ch = chain(128, 256, 64, 128)
    v = unfused_volumes(ch, hw, 64, 64, 64, 64)
    assert v.l2_read == 65536 + 65536 + 131072 + 131072  # A x4, B x2 | C x2, D x2
    assert v.l2_write == 65536 + 32768  # C, E
    assert v.hbm_read == 16384 + 32768 + 65536 and v.hbm_write == 0  # C stays in L2
    assert len(v.kernels) == 2


def test_unfused_c_spills_when_l2_small() -> None:
    hw = hw_variant(l2_bytes=32768)  # C (65,536 B) half resident
    v = unfused_volumes(chain(128, 256, 64, 128), hw, 64, 64, 64, 64)
    assert v.hbm_write >= 32768 and v.l2 >= v.hbm


def test_dsm_primitives_bytes() -> None:
    c, t = ClusterShape(2, 4, 2, 4), Tiles(128, 128, 64, 128)
    prims = {p.primitive: p for p in dsm_primitives(c, t, n_passes=3, n_split=2, gated_mode="none", dtype_bytes=2)}
    assert c.shuffle == 2 and c.reduce == 2
    ax = prims["dsm_all_exchange"]
    assert (ax.participants, ax.times, ax.bytes_per_round) == (2, 3, 128 * 128 * 4)
    assert prims["dsm_shuffle"].times == 3 and prims["dsm_shuffle"].bytes_per_round == 128 * 128 * 2
    rs = prims["dsm_reduce_scatter"]
    assert rs.bytes_per_round == 128 * 64 * 4 and rs.bytes_per_cluster(c.size) == 16 * 128 * 64 * 4
    assert prims["inter_cluster_reduce"].level == "global"
    assert prims["inter_cluster_reduce"].bytes_per_round == 128 * (128 // 2) * 4  # fp32 slice, block_l / cls_reduce


def test_analyze_conv_reads_image_once_from_hbm() -> None:
    """3x3 conv chain: L2 sees the im2col rows (K = IC*9), HBM the image once."""
    from fusesim.workload import ConvGeom

    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    ch = Chain(case_id="c", kind="conv_chain", m=64, n=64, k=16 * 9, l=64, activation="relu", gated=False,
               conv=ConvGeom(1, 8, 8, 16, 3))
    p = _fused(ch, hw, (1, 1, 1, 1), (64, 64, 16, 64), grid_m=1, n_split=1, n_passes=1)
    assert plan_problems(p, hw) == []
    v = analyze(p, hw)
    assert v.l2_read == 64 * 144 * 2 + 144 * 64 * 2 + 64 * 64 * 2
    assert v.hbm_read == 8 * 8 * 16 * 2 + 144 * 64 * 2 + 64 * 64 * 2
    assert v.dsm == 0 and p.dsm_comm == ()


def test_what_if_32_block_clusters() -> None:
    """A machine with 36-SM GPCs and 32-block clusters: the space grows to cluster values of 32."""
    raw = read_mapping(ROOT / "hw_configs/h100_sxm.yaml")
    raw.update(gpc_sm_counts=[36, 36, 36, 24], max_cluster_size=32)
    for t in CLUSTER_TABLES:
        if t in raw:
            raw[t] = {**raw[t], 32: raw[t][16]}
    hw = hardware_from_dict(raw)
    ch = chain(128, 16384, 4096, 4096)
    assert Space(ch, hw).cluster_values == (1, 2, 4, 8, 16, 32)
    res = plan_case(ch, hw, strategies=("dsm",), top_k=5)
    for sp in res.plans["dsm"]:
        check_capacities(sp.plan, hw)
    assert res.search.by_strategy["dsm"] > 0


# ---- emitted plans: capacities (property), paper cases, a100 ------------------------------------
def check_capacities(plan: Plan, hw: Hardware) -> None:
    assert plan_problems(plan, hw) == [], plan_problems(plan, hw)
    for k in plan.kernels:
        assert k.smem_bytes <= hw.smem_per_block_bytes
        assert k.threads <= hw.max_threads_per_block and k.threads % 32 == 0
        assert k.regs_per_thread <= hw.max_registers_per_thread
        assert k.threads * k.regs_per_thread <= hw.registers_per_sm
        assert k.cluster_size <= hw.max_cluster_size and hw.max_active_clusters(k.cluster_size) > 0
    if plan.strategy != "unfused":
        c, t = plan.cluster, plan.tiles
        assert c.is_consistent() and c.size <= hw.max_cluster_size
        seq = plan.gated_mode == "sequential"
        if plan.instruction == "wgmma":  # the fused_wgmma layout: footprint's formula is the generator's
            assert plan.kernels[0].smem_bytes == fused_wgmma_layout(plan).total == fp.fused_wgmma_smem_bytes(
                t.block_m, t.block_n, t.block_l, c.k, c.shuffle, c.reduce, plan.stages, seq)
            assert plan.threads == fp.wgmma_threads(t.block_m) and plan.n_passes == 1
        else:
            bound = fused_smem_bytes(t.block_m, t.block_n, t.block_k, t.block_l, c.k, c.shuffle, plan.stages, seq)
            # the search prunes with the separate-regions bound; the plan carries the generator's exact layout
            assert plan.kernels[0].smem_bytes == fused_layout(plan).total and bound > 0
        assert plan.n_split * plan.n_passes * c.n * t.block_n == plan.chain.n
        assert c.l * t.block_l == plan.chain.l
        assert plan.grid_m * c.m * t.block_m >= plan.chain.m  # M predicated
        # the analyzer's DSM bytes are exactly the dsm_comm steps the simulator executes, on the wire
        steps = sum(s.times * wire_bytes_per_round(s, t, c, plan.instruction) for s in plan.dsm_comm
                    if s.level == "dsm")
        assert analyze(plan, hw).dsm == pytest.approx(plan.kernels[0].grid_blocks * steps)
        assert steps >= sum(s.times * s.bytes_per_block for s in plan.dsm_comm if s.level == "dsm")
    assert Plan.from_json(plan.to_json()) == plan


dims16 = st.integers(1, 96).map(lambda x: 16 * x)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 700), n=dims16, k=dims16, l=dims16, gated=st.booleans(),
       max_cluster=st.sampled_from([1, 2, 4, 8, 16]), smem=st.sampled_from([65536, 166912, 232448]),
       regs=st.sampled_from([32768, 65536]), base=st.sampled_from(["h100_sxm", "h200", "a100_sxm"]))
def test_property_emitted_plans_fit(m: int, n: int, k: int, l: int, gated: bool,  # noqa: E741
                                    max_cluster: int, smem: int, regs: int, base: str) -> None:
    if base == "a100_sxm":
        max_cluster, smem = 1, min(smem, 166912)
    hw = hw_variant(base, max_cluster=max_cluster, smem_per_block_bytes=smem, registers_per_sm=regs)
    res = plan_case(chain(m, n, k, l, gated, cid="p"), hw, top_k=2)
    for plans in res.plans.values():
        for sp in plans:
            check_capacities(sp.plan, hw)
            assert sp.predicted.time_ns > 0
            b = sp.predicted.bytes
            assert b["l2"] >= b["hbm"] - 1e-6
    if max_cluster == 1:
        assert "dsm" not in res.plans
    for s, why in res.infeasible.items():
        assert why, s


@pytest.fixture(scope="module")
def paper_cases() -> list[Chain]:
    return [c for w in PAPER for c in load_workload(ROOT / "workloads" / f"{w}.yaml").cases]


@pytest.mark.parametrize("hw_name", ["h100_sxm", "h200"])
def test_paper_cases_have_dsm_and_unfused(hw_name: str, paper_cases: list[Chain]) -> None:
    hw = load_hardware(ROOT / "hw_configs" / f"{hw_name}.yaml")
    for ch in paper_cases:
        res = plan_case(ch, hw)
        assert res.plans.get("dsm"), (ch.case_id, res.infeasible)
        assert res.plans.get("unfused"), (ch.case_id, res.infeasible)
        assert res.plans.get("smem") or res.infeasible.get("smem"), ch.case_id
        assert res.search.seconds < 5
        for plans in res.plans.values():
            check_capacities(plans[0].plan, hw)
        assert [n for n, _ in res.search.after_rule][:5] == [n for n, _ in R.RULES]
        counts = [res.search.candidates] + [c for _, c in res.search.after_rule]
        assert counts == sorted(counts, reverse=True)


def test_a100_never_clusters(paper_cases: list[Chain]) -> None:
    hw = load_hardware(ROOT / "hw_configs/a100_sxm.yaml")
    for ch in paper_cases:
        res = plan_case(ch, hw, strategies=("unfused", "smem", "dsm", "best"), top_k=3)
        assert "no thread-block clusters" in res.infeasible["dsm"]
        for plans in res.plans.values():
            for sp in plans:
                assert sp.plan.cluster.size == 1 and all(k.cluster_size == 1 for k in sp.plan.kernels)
    with pytest.raises(Infeasible):
        best_plan(paper_cases[0], hw, "dsm")


def test_smem_for_large_l_needs_e_in_registers() -> None:
    """L = 4096: the fp32 E row block does not fit SMEM, so only the fused_wgmma kernel (E in
    registers, one sub-tile at a time) runs it in one block; without the wgmma family it is
    infeasible with the reason."""
    ch = chain(128, 16384, 4096, 4096)
    res = plan_case(ch, load_hardware(ROOT / "hw_configs/h100_sxm.yaml"), strategies=("smem",))
    p = res.plans["smem"][0].plan
    assert p.instruction == "wgmma" and p.tiles.block_l == 4096 and p.buildable
    assert p.kernels[0].smem_bytes < 4 * p.tiles.block_m * p.tiles.block_l  # E never in SMEM
    raw = read_mapping(ROOT / "hw_configs/h100_sxm.yaml")
    raw["tensor_tflops"] = {k: v for k, v in raw["tensor_tflops"].items() if k != "wgmma"}
    res = plan_case(ch, hardware_from_dict(raw), strategies=("smem",))
    assert "does not fit one block" in res.infeasible["smem"]


def test_best_is_fastest_by_simulation_and_predict_agrees() -> None:
    from fusesim.planner.search import RERANK_PER_STRATEGY, RERANK_SEARCH_DEPTH
    from fusesim.sim import simulate

    hw = load_hardware(ROOT / "hw_configs/h200.yaml")
    ch = chain(128, 3072, 768, 768)
    res = plan_case(ch, hw, strategies=("unfused", "smem", "dsm", "best"), top_k=2)
    best = res.plans["best"][0]
    # "best" simulates each strategy's top plans by the cost model, per instruction family, and
    # keeps the fastest simulated
    deep = plan_case(ch, hw, strategies=("unfused", "smem", "dsm"), top_k=RERANK_SEARCH_DEPTH)
    cands = [sp for v in deep.plans.values()
             for fam in ("mma_sync", "wgmma") for sp in [q for q in v if q.plan.instruction == fam][:RERANK_PER_STRATEGY]]
    assert {sp.plan.instruction for sp in cands if sp.plan.strategy == "unfused"} == {"mma_sync", "wgmma"}
    sims = [simulate(sp.plan, hw).time_ns for sp in cands if sp.plan.buildable]
    assert best.simulated_ns == pytest.approx(min(sims))
    assert [sp.simulated_ns for sp in res.plans["best"]] == sorted(sp.simulated_ns for sp in res.plans["best"])
    assert all(len(v) <= 2 for v in res.plans.values())
    for plans in res.plans.values():
        for sp in plans:
            assert predict(sp.plan, hw).time_ns == pytest.approx(sp.predicted.time_ns)
    assert best_plan(ch, hw) == best.plan


def test_require_buildable_and_capability() -> None:
    cap = pytest.importorskip("fusesim.capability")
    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    res = plan_case(chain(128, 768, 768, 768), hw, top_k=3, require_buildable=True)
    for plans in res.plans.values():
        for sp in plans:
            assert sp.plan.buildable and cap.can_build(sp.plan)[0]
            if sp.plan.strategy != "unfused":
                assert sp.plan.kernels[0].smem_bytes == cap.fused_smem_bytes(sp.plan)


def test_without_code_generator_plans_are_marked_not_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "fusesim.capability", None)  # import raises ImportError
    hw = load_hardware(ROOT / "hw_configs/h100_sxm.yaml")
    ch = chain(128, 1536, 384, 384, cid="nocodegen")
    res = plan_case(ch, hw)
    for s in ("unfused", "smem", "dsm"):
        sp = res.plans[s][0]
        assert not sp.plan.buildable and "no code generator" in sp.plan.notes[0]
    strict = plan_case(ch, hw, require_buildable=True)
    assert not strict.plans and "no code generator" in strict.infeasible["dsm"]


# ---- CLI ----------------------------------------------------------------------------------------
def test_cli_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    from fusesim.cli import main

    assert main(["plan", "paper_gemm_chains", "--hw", "h100_sxm", "--case", "G4", "--top-k", "2",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    case = out["cases"][0]
    assert case["case"] == "G4" and set(case) >= {"plans", "infeasible", "search"}
    assert set(case["search"]) >= {"candidates", "after_rule", "seconds"}
    p = case["plans"][0]
    assert set(p) >= {"strategy", "cluster", "tiles", "schedule", "placement", "predicted"}
    assert set(p["cluster"]) == {"m", "n", "k", "l"}
    assert set(p["predicted"]["bytes"]) == {"hbm", "l2", "dsm", "smem"}
    assert Plan.from_dict(p["plan"]).case_id == "G4"
    assert {q["strategy"] for q in case["plans"]} == {"unfused", "smem", "dsm", "best"}


def test_cli_plan_table_and_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    from fusesim.cli import main

    assert main(["plan", "paper_conv_chains", "--hw", "h200", "--case", "C5", "--strategy", "dsm"]) == 0
    out = capsys.readouterr().out
    assert "Table III" in out and "C5" in out
    assert main(["plan", "paper_conv_chains", "--hw", "h200", "--case", "nope"]) == 2
    assert main(["plan", "paper_conv_chains", "--hw", "h200", "--top-k", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2


def test_best_compares_instruction_families_by_simulation() -> None:
    """G8 on the H200: the cost model ranks every mma.sync unfused plan ahead of the gemm_wgmma ones
    (which measured 3.9x faster, results/h200/final_paper_gemm_chains.json); "best" simulates the
    top plans of each family, so the weight-streaming case gets a wgmma plan."""
    hw = load_hardware(ROOT / "hw_configs/h200.yaml")
    ch = chain(128, 8192, 2048, 2048, cid="G8-like")
    best = plan_case(ch, hw, strategies=("best",), top_k=1).plans["best"][0]
    assert best.plan.instruction == "wgmma" and best.plan.buildable


def test_best_also_simulates_the_generators_own_wgmma_plans() -> None:
    """"best" adds the generator's gemm_wgmma and fused_wgmma enumerations to the cost model's
    candidates, only on a machine with wgmma and only plans that fit it: a smaller cluster limit
    drops the larger clusters, a machine without wgmma gets none, a plan already in the pool is not
    added again; the picks are the fastest simulated of the whole pool."""
    from fusesim.planner.search import _generator_candidates

    hw = load_hardware(ROOT / "hw_configs/h200.yaml")
    ch = chain(128, 1024, 512, 512, cid="gen")
    got = _generator_candidates(ch, hw, {"unfused", "smem", "dsm"}, set())
    assert got and all(sp.plan.buildable and sp.plan.instruction == "wgmma" for sp in got)
    assert {"unfused", "dsm"} <= {sp.plan.strategy for sp in got}
    only = _generator_candidates(ch, hw, {"unfused"}, set())
    assert only and {sp.plan.strategy for sp in only} == {"unfused"}  # the asked strategies only
    small = hw.model_copy(update={"max_cluster_size": 4})
    capped = _generator_candidates(ch, small, {"dsm"}, set())
    assert capped and max(sp.plan.cluster.size for sp in capped) <= 4
    assert max(sp.plan.cluster.size for sp in got) > 4
    assert _generator_candidates(ch, hw, {"dsm"}, {sp.plan.to_json() for sp in got}) == []  # seen: not again
    a100 = load_hardware(ROOT / "hw_configs/a100_sxm.yaml")
    assert _generator_candidates(ch, a100, {"unfused", "smem", "dsm"}, set()) == []
    res = plan_case(ch, hw, strategies=("best",), top_k=3).plans["best"]
    assert all(x.simulated_ns is not None for x in res)
    assert [x.simulated_ns for x in res] == sorted(x.simulated_ns for x in res if x.plan.buildable)[:3]


def test_rank_simulated_orders_each_strategy_by_simulated_time() -> None:
    """rank="simulated": each strategy's plans are the pool "best" simulates, that strategy's own,
    fastest simulated first; the cost model's top plan is in that pool, so the strategy's first plan
    never simulates slower than it, and "best" is the fastest of the strategies' first plans."""
    from fusesim.sim import simulate

    hw = load_hardware(ROOT / "hw_configs/h200.yaml")
    ch = chain(128, 1024, 512, 512, cid="rank")
    strategies = ("unfused", "smem", "dsm")
    by_sim = plan_case(ch, hw, strategies=(*strategies, "best"), top_k=4, rank="simulated").plans
    by_cost = plan_case(ch, hw, strategies=strategies, top_k=1).plans
    for s in strategies:
        got = by_sim[s]
        assert got and all(sp.plan.strategy == s and sp.simulated_ns is not None for sp in got)
        times = [sp.simulated_ns for sp in got]
        assert times == sorted(times)
        cost_first = simulate(by_cost[s][0].plan, hw).time_ns
        assert times[0] <= cost_first + 1e-6
    assert by_sim["best"][0].simulated_ns == min(by_sim[s][0].simulated_ns for s in strategies)
    from fusesim.errors import InputError

    with pytest.raises(InputError):
        plan_case(ch, hw, strategies=("dsm",), rank="fastest")


def test_cli_simulate_and_codegen_run_the_same_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The CLI's default: `simulate` runs each strategy's fastest simulated plan and `codegen` writes
    that same plan; `--rank cost` goes back to the cost model's top plan, which never simulates faster."""
    from fusesim.cli import main

    args = ["paper_gemm_chains", "--hw", "h200", "--case", "G9"]
    assert main(["simulate", *args, "--strategy", "dsm", "--format", "json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert main(["simulate", *args, "--strategy", "dsm", "--rank", "cost", "--format", "json"]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert sim["rank"] == "simulated" and cost["rank"] == "cost"
    assert sim["results"][0]["time_us"] <= cost["results"][0]["time_us"]
    assert main(["codegen", *args, "--strategy", "dsm", "--out", str(tmp_path), "--format", "json"]) == 0
    written = json.loads(capsys.readouterr().out)["files"][0]
    assert written["plan"] == sim["results"][0]["plan"]
    with pytest.raises(SystemExit) as bad:
        main(["simulate", *args, "--rank", "nope"])
    assert bad.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_plan_case_memo_follows_the_generator_switches():
    """`plan_case` memoizes its plans with their simulated times; the generator switches change the
    kernels those times are of (fused_wgmma's staged E), so a run recorded with other switches gets
    its own plans, not the last caller's."""
    from fusesim.capability import codegen_switches, generator_switches

    hw = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
    c5 = next(ch for ch in load_workload(ROOT / "workloads" / "paper_conv_chains.yaml").cases if ch.case_id == "C5")
    staged = plan_case(c5, hw, strategies=("smem",), rank="simulated").plans["smem"][0]
    with generator_switches({**codegen_switches(), "fused_staged_e": False}):
        frags = plan_case(c5, hw, strategies=("smem",), rank="simulated").plans["smem"][0]
    assert staged.plan.to_json() == frags.plan.to_json()  # the same plan, its store tail 32 KiB a block
    assert frags.simulated_ns > staged.simulated_ns + 1000
    again = plan_case(c5, hw, strategies=("smem",), rank="simulated").plans["smem"][0]
    assert again.simulated_ns == staged.simulated_ns
