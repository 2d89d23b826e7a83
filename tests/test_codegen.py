"""Code generator: capability checks (pure Python) and nvcc compiles of every template family.

The compile tests need nvcc (CI has 13.0) but no GPU: they build cubins for sm_90a of a
representative plan per family and dsm_comm form, in parallel, through the source-hash cache.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fusesim.capability import (
    SMEM_LIMIT_BYTES,
    can_build,
    e_in_regs,
    fused_smem_bytes,
    fused_wgmma_layout,
    kernel_split,
    wgmma_gemm_smem_bytes,
    wgmma_threads,
)
from fusesim.codegen import CannotBuild, generate, safe_name
from fusesim.codegen.handplans import candidates, fused, representative_plans, unfused, unfused_wgmma
from fusesim.gpu.oddshapes import _ffn
from fusesim.plan import ClusterShape, Plan, Tiles
from fusesim.planner import footprint
from fusesim.stored import glob_json, read_json
from fusesim.workload import Chain, ConvGeom

ROOT = Path(__file__).resolve().parents[1]
CH = _ffn("t", 96, 2048, 512, 512, "gelu")
_REP_CONV3 = Chain("tc", "conv_chain", 14 * 14, 128, 9 * 64, 256, "relu", False, conv=ConvGeom(1, 14, 14, 64, 3))

def test_representative_plans_are_buildable():
    for name, plan in representative_plans().items():
        ok, why = can_build(plan)
        assert ok, f"{name}: {why}"
        if plan.strategy != "unfused":
            assert plan.kernels[0].smem_bytes == fused_smem_bytes(plan) <= SMEM_LIMIT_BYTES, name


def test_e_in_registers_only_for_one_chunk():
    plans = representative_plans()
    assert e_in_regs(plans["fused_dsm_e_regs"])
    assert not e_in_regs(plans["fused_dsm_exchange_shuffle_reduce"])  # several N chunks: E in SMEM


@pytest.mark.parametrize("change, reason", [
    ({"instruction": "wgmma"}, "n_passes = 8"),  # fused_wgmma: one N chunk per cluster
    ({"threads": 96}, "threads"),
    ({"stages": 1}, "stages"),
    ({"n_passes": 3}, "must equal N"),
])
def test_capability_rejects_with_a_reason(change, reason):
    plan = representative_plans()["fused_dsm_exchange_shuffle_reduce"].with_(**change)
    ok, why = can_build(plan)
    assert not ok and reason in why
    with pytest.raises(CannotBuild, match=reason):
        generate(plan)


def test_capability_rejects_smem_overflow_and_bad_tiles():
    big = _ffn("big", 128, 16384, 4096, 4096)
    plan = fused(big, ClusterShape(1, 1, 1, 1), 128, 128, 64, n_split=16, stages=4)
    ok, why = can_build(plan)
    assert not ok and "SMEM" in why
    base = fused(CH, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=1)
    odd = base.with_(tiles=Tiles(64, 64, 48, 128))  # block_k not a multiple of 16
    assert not can_build(odd)[0]


def test_wgmma_representatives_cover_splits_gating_and_activations():
    plans = {k: p for k, p in representative_plans().items() if k.startswith("gemm_wgmma")}
    assert {p.chain.activation for p in plans.values()} >= {"relu", "gelu", "silu", "none"}
    assert any(p.chain.gated for p in plans.values()) and any(p.chain.m % 64 for p in plans.values())
    splits = {kernel_split(k, p.chain.m, (p.chain.n, p.chain.l)[i]) for p in plans.values()
              for i, k in enumerate(p.kernels)}
    assert splits >= {1, 2, 4}
    for p in plans.values():
        assert generate(p).family == "gemm_wgmma"


def test_wgmma_epilogue_staging_follows_split_and_switches():
    """gemm_wgmma stages a GEMM's output through SMEM (no split-K: bf16 row pieces; split-K: fp32 row
    pieces red.added as v4, where the partial fits the ring); the fragment switches render the
    template as it was before, with neither staging."""
    from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches, wgmma_split_rows_staged

    ch = Chain("stg", "ffn", 128, 2048, 1024, 2048, "gelu", False)
    plan = unfused_wgmma(ch, 128, 128, 4, split1=4)
    with generator_switches({"gemm_split_shared_min_bytes": 0}):  # the red.add form of the staged partial
        staged = generate(plan).code
    assert staged.count("epilogue through SMEM") == 1 and staged.count("split-K through SMEM") == 1
    assert "fs::red_add_f32x4(ws" in staged and "red_add_f32x2(ws" not in staged
    with generator_switches(FRAGMENT_EPILOGUE):
        assert not wgmma_split_rows_staged(128, 128, 4, False)
        old = generate(plan).code
    assert "through SMEM" not in old and "red_add_f32x2(ws" in old
    assert wgmma_split_rows_staged(128, 128, 4, False)  # the switches are restored
    assert not wgmma_split_rows_staged(128, 128, 1, True)  # a gated partial larger than one stage


def test_gemm_solo_sm_launches_one_block_per_sm_only_where_asked(monkeypatch):
    """The trial knob GEMM_SOLO_SM: the listed GEMM asks for more dynamic SMEM than two blocks can share on an
    SM, at launch and in its attribute; off, the kernel asks for its ring's SMEM and no LAUNCH_SMEM is rendered."""
    import re

    import fusesim.codegen as codegen
    from fusesim.capability import SM_BLOCK_RESERVED_BYTES, SM_SMEM_BYTES

    ch = Chain("solo", "ffn", 128, 3072, 1024, 1024, "gelu", False)
    plan = unfused_wgmma(ch, 64, 64, 6, split1=4)
    assert "LAUNCH_SMEM" not in generate(plan).code
    monkeypatch.setattr(codegen, "GEMM_SOLO_SM", (1,))
    code = generate(plan).code
    asked = [int(v) for v in re.findall(r"constexpr int LAUNCH_SMEM = (\d+);", code)]
    assert len(asked) == 1 and code.count("dynamicSmemBytes = LAUNCH_SMEM") == 1
    assert 2 * (asked[0] + SM_BLOCK_RESERVED_BYTES) > SM_SMEM_BYTES > asked[0]  # one block per SM, and it fits
    assert code.count("dynamicSmemBytes = SMEM_BYTES") == 1  # gemm0 as before


def test_second_gemm_runs_one_block_per_sm_where_it_cannot_sit_beside_the_first():
    """capability.gemm_solo_sm: S8's shape (gemm0 gated 64x64, 6 stages, 145 KiB; gemm1 64x64 split 4, 97 KiB, two
    per SM, none beside gemm0) launches gemm1 asking over half an SM; not where gemm1 fits beside gemm0, not in a
    cluster, not past the SMs, not gemm0, not with the switch off. The simulator runs it one block per SM."""
    from fusesim.capability import (
        SM_BLOCK_RESERVED_BYTES,
        SM_SMEM_BYTES,
        SOLO_SM_BYTES,
        gemm_solo_sm,
        generator_switches,
    )
    from fusesim.hardware import load_hardware
    from fusesim.sim.engine import simulate

    s8 = Chain("s8", "gated_ffn", 128, 3072, 1024, 1024, "silu", True)
    g6 = Chain("g6", "ffn", 128, 4096, 1024, 1024, "gelu", False)
    solo = unfused_wgmma(s8, 64, 64, 6, split1=4)
    reserve = SM_BLOCK_RESERVED_BYTES
    assert 2 * (SOLO_SM_BYTES + reserve) > SM_SMEM_BYTES >= 2 * (solo.kernels[1].smem_bytes + reserve)
    with generator_switches({"gemm_solo_secondary": True}):
        assert gemm_solo_sm(solo, solo.kernels[1]) and not gemm_solo_sm(solo, solo.kernels[0])
        beside = unfused_wgmma(g6, 64, 64, 6, split1=4)  # 97 KiB twice: gemm1 fits beside gemm0
        assert not gemm_solo_sm(beside, beside.kernels[1])
        deep0 = unfused_wgmma(g6, 64, 64, 8, split1=4, stages1=6)  # gemm0 8 deep: 129 KiB, gemm1 no longer fits beside
        assert gemm_solo_sm(deep0, deep0.kernels[1])
        clustered = unfused_wgmma(s8, 64, 64, 6, split1=4, dsm_split=(False, True))
        assert not gemm_solo_sm(clustered, clustered.kernels[1])
        wide = unfused_wgmma(s8, 64, 64, 6, split1=8)  # 256 blocks: past the SMs
        assert not gemm_solo_sm(wide, wide.kernels[1])
        code = generate(solo).code
        log = simulate(solo, load_hardware("hw_configs/h100_sxm_calibrated.yaml")).kernels
    assert code.count(f"constexpr int LAUNCH_SMEM = {SOLO_SM_BYTES};") == 1
    assert [k["blocks_per_sm"] for k in log] == [1, 1]
    with generator_switches({"gemm_solo_secondary": False}):
        assert not gemm_solo_sm(solo, solo.kernels[1]) and "LAUNCH_SMEM" not in generate(solo).code
        assert [k["blocks_per_sm"] for k in simulate(solo, load_hardware("hw_configs/h100_sxm_calibrated.yaml")).kernels] == [1, 2]


def test_split_k_sums_in_slices_where_the_partial_is_large():
    """A staged split-K gemm_wgmma GEMM whose fp32 partial has GEMM_SPLIT_SHARED_MIN_BYTES or more sums its parts
    in slices (plain stores into a slab per part, the parts' barrier, a share per part, no re-zeroing; the grid
    checked against the occupancy); a smaller partial, a GEMM without split-K, a DSM split and the switch at 0
    keep the red.add into one tile."""
    from fusesim import capability
    from fusesim.capability import gemm_split_shared, generator_switches

    assert capability.GEMM_SPLIT_SHARED_MIN_BYTES == 32768
    assert gemm_split_shared(128, 64, 6, False, 4, 1, 128) and gemm_split_shared(64, 128, 6, False, 2, 1, 132)
    assert gemm_split_shared(64, 64, 6, True, 2, 1, 64)  # gate and up: 2 x 16 KiB
    assert not gemm_split_shared(64, 64, 6, False, 8, 1, 128)  # 16 KiB
    assert not gemm_split_shared(128, 128, 4, False, 1, 1, 128) and not gemm_split_shared(128, 128, 4, False, 4, 4, 128)
    assert not gemm_split_shared(128, 64, 6, False, 2, 1, 264)  # more blocks than an H100 / H200 holds at once
    with generator_switches({"gemm_split_shared_min_bytes": 0}):
        assert not gemm_split_shared(128, 128, 4, False, 4, 1, 128)
    ch = Chain("shr", "ffn", 128, 2048, 1024, 2048, "gelu", False)
    with generator_switches({**capability.codegen_switches(), "gemm_split_lean": False}):  # the slices' first form
        code = generate(unfused_wgmma(ch, 128, 128, 4, split1=4)).code  # gemm0 unsplit, gemm1 split 4
    head, gemms = code.split("namespace gemm0 {")
    g0, g1 = gemms.split("namespace gemm1 {")
    assert "void split_parts_barrier(int* ticket, int parts)" in head  # defined once, for the kernels that use it
    assert "split_parts_barrier" not in g0 and g1.count("fs::split_parts_barrier(tickets + tile, SPLIT);") == 1
    assert "WS_FLOATS = SPLIT > 1 ? PART_FLOATS * SPLIT : 0" in g1 and "__stcg(reinterpret_cast<float4*>(wp)" in g1
    assert "red_add_f32x4" not in g1 and "GRID > sms * per_sm" in g1 and "inter_cluster_ticket" not in g1
    small = generate(unfused_wgmma(ch, 64, 64, 4, split1=4)).code
    assert "split_parts_barrier" not in small and "fs::red_add_f32x4(ws" in small


def test_split_k_in_slices_lean_leaves_out_the_own_share_and_counts_epochs():
    """GEMM_SPLIT_LEAN on: a GEMM that sums in slices skips the stores of the share it sums itself, waits at an
    epoch-counting barrier (one atomicInc per part, no re-zeroing) and sums its share in one round trip where
    `split_sum_batch` allows; a GEMM that red.adds is as before; off, the source is the slices' form."""
    from fusesim.capability import codegen_switches, generator_switches, kernel_split_lean

    ch = Chain("lean", "ffn", 128, 2048, 1024, 2048, "gelu", False)
    plan = unfused_wgmma(ch, 128, 128, 4, split1=4)
    with generator_switches({**codegen_switches(), "gemm_split_lean": True}):
        assert [kernel_split_lean(plan, k) for k in plan.kernels] == [False, True]
        code = generate(plan).code
        small = generate(unfused_wgmma(ch, 64, 64, 4, split1=4)).code
    head, gemms = code.split("namespace gemm0 {")
    _g0, g1 = gemms.split("namespace gemm1 {")
    assert head.count("void split_parts_barrier_lean(int* ticket, int parts)") == 1 and "atomicInc(" in head
    assert g1.count("fs::split_parts_barrier_lean(tickets + tile, SPLIT);") == 1
    assert "continue;  // this part's own share" in g1 and "fs::split_parts_barrier(" not in g1
    assert "LDS = BN + 4, CS = 3;" in g1  # 128 x 128 / 4 positions over 4 parts' 384 threads: one round trip
    assert "split_parts_barrier" not in small and "fs::red_add_f32x4(ws" in small  # red.add: unchanged
    with generator_switches({**codegen_switches(), "gemm_split_lean": False}):
        off = generate(plan).code
    assert "split_parts_barrier_lean" not in off and "own share" not in off and "fs::split_parts_barrier(tickets + tile, SPLIT);" in off


def test_generator_switches_read_a_recorded_block_as_the_generator_of_its_time():
    """A recorded "codegen" block sets every switch it names; a switch it lacks is what the generator did before
    that switch existed (`Switch.absent`), or keeps its value where every block names it; an empty block changes
    nothing; every value comes back after the block, also when rendering fails inside it."""
    from fusesim import capability
    from fusesim.capability import FRAGMENT_EPILOGUE, SWITCHES, codegen_switches, generator_switches

    now = codegen_switches()
    assert list(now) == [s.key for s in SWITCHES] == list(FRAGMENT_EPILOGUE)
    assert all(getattr(capability, s.constant) == now[s.key] for s in SWITCHES)
    with generator_switches({}):
        assert codegen_switches() == now
    with generator_switches(FRAGMENT_EPILOGUE):
        assert codegen_switches() == FRAGMENT_EPILOGUE
    older = {"gemm_staged_store": True, "gemm_staged_red": False}  # a block from before every later switch
    with generator_switches(older):
        got = codegen_switches()
    assert got == {s.key: older.get(s.key, now[s.key] if s.absent is None else s.absent) for s in SWITCHES}
    assert got["convert_batch"] == 1 and got["fused_relaxed_arrive"] is False and got["gemm_staged_red"] is False
    with pytest.raises(RuntimeError), generator_switches({**now, "fused_relaxed_arrive": not now["fused_relaxed_arrive"]}):
        assert capability.FUSED_RELAXED_ARRIVE is not now["fused_relaxed_arrive"]
        raise RuntimeError("inside")
    assert codegen_switches() == now


def test_im2col_rows_decoded_once_per_block_follow_the_switch():
    """3x3 conv chains' A loader: each copy's row decoded once per block (Im2colRows) in both
    mma.sync templates; with the switch off (files recorded before it) the per-copy decode."""
    from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches, im2col_rows_hoisted

    plans = representative_plans()
    for name in ("gemm_conv3x3", "fused_dsm_im2col_cls_m2"):
        plan = plans[name]
        assert im2col_rows_hoisted(plan.chain, plan.tiles.block_k)
        code = generate(plan).code
        assert "a_rows.load(" in code and "load_tile_im2col<" not in code, name
        with generator_switches(FRAGMENT_EPILOGUE):
            old = generate(plan).code
        assert "a_rows" not in old and "load_tile_im2col<" in old, name
    assert not im2col_rows_hoisted(CH, 64)  # no convolution, no im2col


def test_fused_wgmma_stages_its_last_e_sub_tile_only_where_e_goes_straight_out():
    """fused_wgmma stages its last E sub-tile in the drained ring (16-byte row pieces) where E leaves as
    bf16 without a reduce-scatter or inter_cluster_reduce; with the switch off (files recorded before
    it) the template renders as before, fragment stores only."""
    from fusesim.capability import codegen_switches, fused_wgmma_e_staged, generator_switches

    plans = representative_plans()
    staged = [k for k, p in plans.items() if k.startswith("fused_wgmma") and fused_wgmma_e_staged(p)]
    assert set(staged) == {"fused_wgmma_staged_e_m128_shuffle", "fused_wgmma_large_l_predicated_silu",
                           "fused_wgmma_conv3x3_smem"}
    for name, plan in plans.items():
        if not name.startswith("fused_wgmma"):
            continue
        code = generate(plan).code
        assert ("constexpr int LDE" in code) == (name in staged), name
        with generator_switches({**codegen_switches(), "fused_staged_e": False}):
            old = generate(plan).code
        assert "LDE" not in old and "pack_bf16x2(e0, e1)" in old, name
        if name not in staged:
            assert old == code, name  # nothing else changes
    m128 = plans["fused_wgmma_staged_e_m128_shuffle"]
    assert m128.tiles.block_m == 128 and m128.cluster.shuffle > 1 and m128.chain.m % 128  # two warpgroups, predicated


def test_fused_wgmma_exit_barrier_arrives_once_everything_addressed_to_the_block_has_landed():
    """With FUSED_EARLY_EXIT_ARRIVE a cluster kernel with a reduce-scatter arrives on its exit barrier once
    its slices have landed and only waits at its exit; without a reduce-scatter, and with the switch off
    (files recorded before it), the exit is a cluster_sync."""
    from fusesim.capability import codegen_switches, fused_wgmma_early_exit_arrive, generator_switches

    plans = representative_plans()
    rs = generate(plans["fused_wgmma_exchange_shuffle_reduce"]).code
    wait_rbar = rs.index("fs::wg::mbar_wait_cluster(rbar, 0);")
    assert rs.index("fs::cluster_arrive", wait_rbar) < rs.index("const float* mine", wait_rbar)
    assert "fs::cluster_wait();  // own SMEM outlives" in rs and "fs::cluster_sync();  // own SMEM" not in rs
    no_rs = plans["fused_wgmma_staged_e_m128_shuffle"]
    assert no_rs.cluster.size > 1 and not fused_wgmma_early_exit_arrive(no_rs)
    assert "exit barrier's arrive" not in generate(no_rs).code
    for name in ("fused_wgmma_exchange_shuffle_reduce", "fused_wgmma_reduce_receive_aliased"):
        with generator_switches({**codegen_switches(), "fused_early_exit_arrive": False, "fused_relaxed_arrive": False}):
            old = generate(plans[name]).code
        assert "exit barrier's arrive" not in old and "fs::cluster_sync();  // own SMEM outlives" in old, name


def test_fused_wgmma_cluster_barrier_arrives_are_relaxed():
    """With FUSED_RELAXED_ARRIVE fused_wgmma's start barrier (after the mbarrier-init fence) and its exit barrier
    (early or not) arrive with .relaxed semantics; the barrier before a reduce-scatter into the ring, which publishes
    the E partials, keeps its .release. Off (files recorded before it), the sources are those with .release arrives."""
    from fusesim.capability import codegen_switches, generator_switches

    plans = representative_plans()
    fwg = {n: p for n, p in plans.items() if p.instruction == "wgmma" and p.strategy != "unfused"}
    assert any(p.cluster.size > 1 for p in fwg.values()) and "fused_wgmma_reduce_receive_aliased" in fwg
    for name, plan in fwg.items():
        code = generate(plan).code
        with generator_switches({**codegen_switches(), "fused_relaxed_arrive": False}):
            old = generate(plan).code
        assert code.count("fs::cluster_arrive_relaxed();") == 2 and "cluster_arrive_relaxed" not in old, name
        first = code.index("fs::cluster_arrive_relaxed();")
        assert code.index("fs::wg::mbar_init_fence();") < first < code.index("fs::wg::tma_prefetch_desc"), name
        if "fs::cluster_sync();  // every partial E is in ebuf" in old:
            assert "fs::cluster_sync();  // every partial E is in ebuf" in code, name
    # the exit of a cluster kernel without a reduce-scatter: a relaxed arrive, then the wait
    exit_code = generate(plans["fused_wgmma_staged_e_m128_shuffle"]).code
    tail = exit_code[exit_code.index("(void)ecol0;"):]
    assert tail.index("fs::cluster_arrive_relaxed();") < tail.index("fs::cluster_wait();")


def test_fused_wgmma_producer_waits_on_the_entry_barrier_before_the_first_slot_freed_after_it():
    """With FUSED_PRODUCER_EARLY_WAIT, where the producer's ring loop reaches job KT0 + STAGES (whose slot the
    consumers free only after their own wait on the entry cluster barrier), warp 0 stops thread 0's loop
    there, waits on that barrier converged, and thread 0 goes on; the other producer warps wait after the
    loop. On by default (measured on an H100); off (files recorded before it) and for every other kernel the
    sources are those without it."""
    from fusesim.capability import (
        FUSED_PRODUCER_EARLY_WAIT,
        codegen_switches,
        fused_wgmma_producer_early_wait,
        fused_wgmma_ring_jobs,
        generator_switches,
    )

    on = {**codegen_switches(), "fused_producer_early_wait": True}
    off = {**codegen_switches(), "fused_producer_early_wait": False}
    assert FUSED_PRODUCER_EARLY_WAIT
    plans = representative_plans()
    aliased = plans["fused_wgmma_reduce_receive_aliased"]
    kt0, jobs = fused_wgmma_ring_jobs(aliased)
    assert jobs > kt0 + aliased.stages and fused_wgmma_producer_early_wait(aliased)
    code = generate(aliased).code
    with generator_switches(on):
        assert code == generate(aliased).code
    first = code.index("for (int j = 0; j < KT0 + STAGES; ++j) {")
    wait = code.index("    __syncwarp();\n    if (threadIdx.x < 32) fs::cluster_wait();\n", first)
    rest = code.index("for (int j = KT0 + STAGES; j < JOBS; ++j) {", wait)
    assert code.index("if (threadIdx.x >= 32) fs::cluster_wait();", rest) < code.index("consumers: warpgroup", rest)
    with generator_switches(off):
        assert not fused_wgmma_producer_early_wait(aliased)
        old = generate(aliased).code
    assert old != code and "for (int j = 0; j < JOBS; ++j) {" in old and "KT0 + STAGES" not in old
    for name, plan in plans.items():
        if not name.startswith("fused_wgmma") or name == "fused_wgmma_reduce_receive_aliased":
            continue
        kt0, jobs = fused_wgmma_ring_jobs(plan)
        early = plan.cluster.size > 1 and jobs > kt0 + plan.stages
        with generator_switches(on):
            assert fused_wgmma_producer_early_wait(plan) == early, name
            code = generate(plan).code
        with generator_switches(off):
            assert (generate(plan).code == code) == (not early), name


def test_fused_wgmma_representatives_cover_every_dsm_comm_form():
    plans = {k: p for k, p in representative_plans().items() if k.startswith("fused_wgmma")}
    for p in plans.values():
        assert p.instruction == "wgmma" and p.n_passes == 1 and generate(p).family == "fused_wgmma"
    shapes = [p.cluster for p in plans.values()]
    assert any(c.size == 1 for c in shapes) and any(c.m > 1 for c in shapes)
    assert any(c.k > 1 for c in shapes) and any(c.shuffle > 1 for c in shapes) and any(c.reduce > 1 for c in shapes)
    assert {p.gated_mode for p in plans.values()} >= {"none", "sequential", "mul_exchange"}
    assert any(p.n_split > 1 for p in plans.values()) and any(p.chain.m % 64 for p in plans.values())
    assert any(fused_wgmma_layout(p).receive_aliased for p in plans.values())
    assert {p.tiles.block_m for p in plans.values()} == {64, 128}


def test_wgmma_capability_and_footprint_agree():
    for bm in (64, 128):
        assert wgmma_threads(bm) == footprint.wgmma_threads(bm)
        for bn in (64, 128, 256):
            for st in range(2, 9):
                for g in (False, True):
                    assert wgmma_gemm_smem_bytes(bm, bn, st, g) == footprint.wgmma_gemm_smem_bytes(bm, bn, st, g)


@pytest.mark.parametrize("kw, reason", [
    ({"bm": 96}, "wgmma tiles"),
    ({"bn": 256, "gated": True}, "gated wgmma"),
    ({"split0": 17}, "split-K"),
    ({"split0": 8, "k": 256}, "exceeds the 4 k tiles"),
    ({"k": 96}, "multiple of block_k"),
    ({"stages": 8, "bn": 256}, "SMEM"),
])
def test_wgmma_capability_rejects_with_a_reason(kw, reason):
    gated, k = kw.pop("gated", False), kw.pop("k", 512)
    ch = _ffn("w", 128, 1024, k, 512, gated=gated)
    ok, why = can_build(unfused_wgmma(ch, **{"bm": 128, "bn": 128, "stages": 4, **kw}))
    assert not ok and reason in why, why


@pytest.mark.parametrize("kw, reason", [
    ({"gated": True}, "non-gated GEMMs only"),
    ({"split0": 16}, "portable cluster size"),
    ({"bn": 64, "split0": 3}, "whole float4 columns"),
    ({"bn": 256, "stages": 2}, "does not fit"),
])
def test_dsm_split_k_capability_rejects_with_a_reason(kw, reason):
    gated, k = kw.pop("gated", False), kw.pop("k", 2048)
    ch = _ffn("w", 128, 1024, k, 512, gated=gated)
    plan = unfused_wgmma(ch, **{"bm": 128, "bn": 128, "stages": 4, "split0": 4, **kw}, dsm_split=(True, False))
    ok, why = can_build(plan)
    assert not ok and reason in why, why
    k0 = plan.kernels[0]
    lone = plan.with_(kernels=(k0.__class__(**{**k0.__dict__, "cluster_size": 2}),
                               plan.kernels[1]))
    assert "must equal the split-K factor" in can_build(lone)[1]


def test_dsm_split_k_source_reduces_in_the_cluster():
    plans = representative_plans()
    src = generate(plans["gemm_wgmma_dsm_split_predicated"]).code
    for text in ("fs::dsm_reduce_scatter<BM, SLICE, SPLIT, THREADS>", "cudaLaunchAttributeClusterDimension",
                 "constexpr long WS_FLOATS = 0;", "fs::launch_ok(THREADS, GRID, 4)", "fs::launch_ok(THREADS, GRID, 2)",
                 "fs_cluster_size() { return 4; }"):
        assert text in src, text
    assert "red_add_f32x2" not in src and "inter_cluster_ticket" not in src
    l2 = generate(plans["gemm_wgmma_split"]).code
    assert "dsm_reduce_scatter" not in l2 and "cudaLaunchAttributeClusterDimension" not in l2
    assert "fs_cluster_size() { return 1; }" in l2


def test_wgmma_rejections_outside_the_template():
    plan = unfused_wgmma(CH, 128, 128, 4)
    k0 = plan.kernels[0]
    assert "threads" in can_build(plan.with_(kernels=(k0.__class__(**{**k0.__dict__, "threads": 256}),
                                                      plan.kernels[1])))[1]
    narrow = Chain("tn", "conv_chain", 14 * 14, 128, 9 * 32, 256, "relu", False, conv=ConvGeom(1, 14, 14, 32, 3))
    assert "im2col" in can_build(unfused_wgmma(narrow, 128, 64, 4))[1]  # a k tile would straddle two taps
    assert can_build(unfused_wgmma(_REP_CONV3, 128, 64, 4))[0]
    src = generate(unfused_wgmma(_REP_CONV3, 128, 64, 4)).code
    # gemm0 loads A by TMA in im2col mode (WGMMA_IM2COL_TMA), one load per stage; gemm1 is plain TMA
    assert src.count("fs::wg::tma_load_im2col(") == 1 and "FULL_ARRIVALS" not in src and "Im2colMap" in src
    mma = unfused(CH, 64, 64, 64)
    k0 = mma.kernels[0]
    split = mma.with_(kernels=(k0.__class__(**{**k0.__dict__, "grid_blocks": 2 * k0.grid_blocks}), mma.kernels[1]))
    assert "split-K" in can_build(split)[1]


def test_every_paper_case_has_buildable_hand_plans():
    from fusesim.workload import load_workload

    for wl in ("workloads/paper_gemm_chains.yaml", "workloads/paper_gated_ffn.yaml",
               "workloads/paper_conv_chains.yaml"):
        for ch in load_workload(wl).cases:
            c = candidates(ch, per_strategy=2)
            assert c["unfused"] and c["dsm"], ch.case_id
            assert all(can_build(p)[0] for ps in c.values() for p in ps)
            if ch.k % 64 == 0 and ch.n % 64 == 0 and ch.l % 64 == 0 and ch.conv is None:
                assert any(p.instruction == "wgmma" for p in c["unfused"]), ch.case_id


def test_generated_source_is_the_plan():
    plan = representative_plans()["fused_dsm_exchange_shuffle_reduce"]
    src = generate(plan)
    assert src.family == "fused"
    for text in ("CLS_M = 1, CLS_N = 4, CLS_K = 2, CLS_L = 4", "BM = 64, BN = 64, BK = 64, BL = 128",
                 "dsm_all_exchange_push", "dsm_shuffle_push", "dsm_reduce_scatter", "cudaLaunchKernelEx"):
        assert text in src.code
    assert generate(plan).digest == src.digest  # deterministic: the cache key is stable
    assert safe_name("a.b-c/d") == "a_b_c_d" and safe_name("1x") == "c_1x"


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_template_family_compiles_for_sm90a(tmp_path, monkeypatch):
    from fusesim.codegen.build import build

    monkeypatch.setenv("FUSESIM_CACHE", str(tmp_path))
    plans = representative_plans()

    def one(item):
        name, plan = item
        return name, build(generate(plan), mode="cubin")

    from fusesim.codegen.binary import FATBIN_MAGIC, code_bytes

    with ThreadPoolExecutor(max_workers=2) as ex:
        for name, art in ex.map(one, plans.items()):
            assert art.exists() and art.stat().st_size > 0, name
            got = code_bytes(art)  # the kernel's instructions and parameter bank, read from the cubin
            assert got is not None and got["text_bytes"] > 4096 and got["const_bytes"] > 0, name
    # the per-copy im2col decode of the files recorded before Im2colRows still compiles
    from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches

    with generator_switches(FRAGMENT_EPILOGUE):
        old = build(generate(plans["gemm_conv3x3"]), mode="cubin")
    assert old.exists() and old != one(("gemm_conv3x3", plans["gemm_conv3x3"]))[1]
    # a second build is a cache hit (same path, no recompile)
    name, plan = next(iter(plans.items()))
    art = build(generate(plan), mode="cubin")
    assert art == one((name, plan))[1]
    # inside a .so the cubin follows the fatbin header: the same bytes are found
    blob = tmp_path / "fake.so"
    blob.write_bytes(b"\x7fELF host object" + b"\0" * 64 + FATBIN_MAGIC + b"\0" * 60 + art.read_bytes())
    assert code_bytes(blob) == code_bytes(art)


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_fused_wgmma_e_partial_swizzle_compiles_for_every_row_width(tmp_path, monkeypatch):
    """fused_wgmma's E partial rows are swizzled in one of three forms by their 32-byte chunk count (a multiple
    of 4, 2 more than one, odd: none): a reduce-scatter plan of the final run of each form compiles for sm_90a."""
    from fusesim.codegen.build import build

    monkeypatch.setenv("FUSESIM_CACHE", str(tmp_path))
    picks: dict[str, Plan] = {}
    for f in glob_json(Path(__file__).resolve().parents[1] / "results" / "h200" / "plans_final_*.json"):
        for rows in read_json(f).values():
            for r in rows:
                plan = Plan.from_dict(r.get("plan", r))
                if plan.instruction == "wgmma" and plan.strategy != "unfused" and plan.cluster.reduce > 1:
                    chunks = plan.tiles.block_l // plan.cluster.reduce // 8
                    picks.setdefault("4k" if chunks % 4 == 0 else "4k+2" if chunks % 2 == 0 else "odd", plan)
    assert set(picks) == {"4k", "4k+2", "odd"}
    with ThreadPoolExecutor(max_workers=2) as ex:
        srcs = {form: generate(plan) for form, plan in picks.items()}
        assert all("eswz(row, col % SLICE_L)" in src.code for src in srcs.values())
        for form, art in zip(srcs, ex.map(lambda s: build(s, mode="cubin"), srcs.values()), strict=True):
            assert art.exists() and art.stat().st_size > 0, form


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_fused_wgmma_producer_early_wait_compiles_for_sm90a(tmp_path, monkeypatch):
    """The producer's early entry wait (FUSED_PRODUCER_EARLY_WAIT) compiles for sm_90a in
    its three producer forms: TMA loads (the aliased reduce-scatter), TMA im2col and cp.async im2col (a 3x3
    conv chain with a cluster of 2 and more ring jobs than its k tiles plus stages)."""
    from fusesim.capability import codegen_switches, fused_wgmma_producer_early_wait, generator_switches
    from fusesim.codegen.build import build

    monkeypatch.setenv("FUSESIM_CACHE", str(tmp_path))
    conv = Chain("tc3", "conv_chain", 14 * 14, 256, 9 * 64, 256, "relu", False, conv=ConvGeom(1, 14, 14, 64, 3))
    plans = [representative_plans()["fused_wgmma_reduce_receive_aliased"],
             fused(conv, ClusterShape(1, 2, 1, 2), 64, 128, 64, n_split=1, stages=2, instruction="wgmma")]
    srcs = []
    for tma in (True, False):
        with generator_switches({**codegen_switches(), "fused_producer_early_wait": True, "wgmma_im2col_tma": tma}):
            assert all(can_build(p)[0] and fused_wgmma_producer_early_wait(p) for p in plans)
            srcs += [generate(p) for p in plans[tma is False:]]
    assert len({s.digest for s in srcs}) == 3
    assert all("__syncwarp();\n" in s.code and "the early wait is rendered only" in s.code for s in srcs)
    with ThreadPoolExecutor(max_workers=2) as ex:
        for src, art in zip(srcs, ex.map(lambda s: build(s, mode="cubin"), srcs), strict=True):
            assert art.exists() and art.stat().st_size > 0, src.name


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_fused_wgmma_gemm1_loop_unrolled_keeps_ptxas_from_serializing_wgmma(tmp_path, monkeypatch):
    """With GEMM1's k-tile loop rolled, ptxas serialized the wgmmas of C1's dsm plan of the final run (C7520, a
    "Potential Performance Loss" note build() keeps beside the artifact); unrolled (FUSED_GEMM1_UNROLL), it does not."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.build import build, ptxas_perf_notes

    monkeypatch.setenv("FUSESIM_CACHE", str(tmp_path))
    rows = read_json(ROOT / "results" / "h200" / "plans_estage.json")["C1"]
    plan = next(Plan.from_dict(r["plan"]) for r in rows
                if r["plan"]["strategy"] == "dsm" and r["plan"]["tiles"]["block_n"] == 128)
    srcs = {}
    for unroll in (False, True):
        with generator_switches({**codegen_switches(), "fused_gemm1_unroll": unroll}):
            srcs[unroll] = generate(plan)
    assert "#pragma unroll 1\n        for (int kt = 0; kt < KT1" in srcs[False].code
    assert "#pragma unroll\n        for (int kt = 0; kt < KT1" in srcs[True].code
    with ThreadPoolExecutor(max_workers=2) as ex:
        arts = dict(zip(srcs, ex.map(lambda s: build(s, mode="cubin"), srcs.values()), strict=True))
    assert any("serialized" in n for n in ptxas_perf_notes(arts[False])), "the rolled loop no longer serializes"
    assert ptxas_perf_notes(arts[True]) == []


def test_staged_artifacts_take_their_ptxas_notes_along(tmp_path):
    """What prebuild.py and the trials stage for the device carries each kernel's ptxas notes, so the bench there
    still records them (a staged kernel without its notes read as one ptxas had nothing to say about)."""
    from fusesim.codegen.build import PERF_NOTE, ptxas_perf_notes, stage_artifacts

    noted, quiet = tmp_path / "a_kernel.so", tmp_path / "b_kernel.so"
    for art in (noted, quiet):
        art.write_bytes(b"\x7fELF")
    noted.with_suffix(".ptxas.txt").write_text(f"ptxas info    : {PERF_NOTE}: wgmma serialized\n")
    dest = tmp_path / "stage"
    assert stage_artifacts({noted, quiet}, dest) == 2
    assert sorted(p.name for p in dest.iterdir()) == ["a_kernel.ptxas.txt", "a_kernel.so", "b_kernel.so"]
    assert ptxas_perf_notes(dest / "a_kernel.so") == ptxas_perf_notes(noted) != []
    assert ptxas_perf_notes(dest / "b_kernel.so") == []


def test_planner_picks_a_buildable_wgmma_unfused_plan_with_split_k():
    from fusesim.hardware import load_hardware
    from fusesim.planner import plan_case

    hw = load_hardware("hw_configs/h200.yaml")
    ch = _ffn("G5", 128, 16384, 4096, 4096, "gelu")
    plan = plan_case(ch, hw, strategies=("unfused",), top_k=1).plans["unfused"][0].plan
    assert plan.instruction == "wgmma" and plan.buildable and can_build(plan)[0]
    k0, k1 = plan.kernels
    assert kernel_split(k1, ch.m, ch.l) > 1  # gemm1 has < 132 output tiles: split-K fills the SMs
    assert all(k.grid_blocks <= hw.sm_count for k in plan.kernels)
    assert generate(plan).family == "gemm_wgmma"


def test_wgmma_im2col_by_tma_follows_the_switch():
    """WGMMA_IM2COL_TMA loads the wgmma templates' implicit-im2col A by TMA in im2col mode (one load per stage by
    the producer thread, completing on the stage's barrier); off (files recorded before it) the templates
    render as before, the producer warpgroup's cp.async copies; chains without a k1 > 1 conv never change."""
    from fusesim.capability import codegen_switches, generator_switches, wgmma_im2col_tma

    plans = representative_plans()
    conv = [n for n, p in plans.items() if p.instruction == "wgmma" and p.chain.conv is not None and p.chain.conv.k1 > 1]
    assert set(conv) == {"gemm_wgmma_conv3x3_split_predicated", "gemm_wgmma_conv3x3_m64_two_images",
                         "fused_wgmma_conv3x3_smem", "fused_wgmma_conv3x3_cls_k2_two_images"}
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": False}):
        off = {n: generate(p).code for n, p in plans.items() if p.instruction == "wgmma"}
    assert not any("tma_load_im2col" in code for code in off.values())
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": True}):
        for name, p in plans.items():
            if p.instruction != "wgmma":
                continue
            code = generate(p).code
            if name in conv:
                assert wgmma_im2col_tma(p.chain) and code.count("fs::wg::tma_load_im2col(") == 1, name
                assert "Im2colRows" not in code and "FULL_ARRIVALS" not in code and "Im2colMap" in code, name
            else:
                assert not wgmma_im2col_tma(p.chain) and code == off[name], name


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_wgmma_im2col_by_tma_compiles_for_sm90a(tmp_path, monkeypatch):
    """The TMA im2col form of both wgmma templates (two images, predicated rows, split-K, cls_k 2) compiles for
    sm_90a."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.build import build

    monkeypatch.setenv("FUSESIM_CACHE", str(tmp_path))
    plans = representative_plans()
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": True}):
        srcs = [generate(p) for n, p in plans.items() if p.instruction == "wgmma" and "conv3x3" in n]
    assert len(srcs) == 4 and all("tma_load_im2col(" in s.code for s in srcs)
    with ThreadPoolExecutor(max_workers=2) as ex:
        for src, art in zip(srcs, ex.map(lambda s: build(s, mode="cubin"), srcs), strict=True):
            assert art.exists() and art.stat().st_size > 0, src.name
